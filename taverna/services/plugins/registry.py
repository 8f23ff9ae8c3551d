"""The plugins of a process: found through entry points, registered with pluggy, each with
the grants it declared; and the hook implementations in the order they run."""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pluggy

from taverna.errors import TavernaError
from taverna.services.plugins.events import PluginAccess
from taverna.services.plugins.grants import Grant, parse_grants
from taverna.services.plugins.hookspecs import PROJECT, TavernaHooks

__all__ = ["ENTRY_POINT_GROUP", "HookCall", "PluginInfo", "Plugins"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "taverna"  # [project.entry-points.taverna] in a plugin's pyproject.toml
HOOKS = tuple(name for name in vars(TavernaHooks) if name.startswith("taverna_"))


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """A plugin as the page and `taverna plugins` list it.

    `error`: why it could not be loaded (it then runs no hook); `hooks`: those it implements.
    """

    name: str
    module: str
    description: str
    grants: frozenset[Grant]
    version: str = ""
    distribution: str = ""
    hooks: tuple[str, ...] = ()
    error: str | None = None

    @property
    def access(self) -> PluginAccess:
        return PluginAccess(self.name, self.grants)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "description": self.description,
            "grants": sorted(g.value for g in self.grants),
            "version": self.version,
            "distribution": self.distribution,
            "hooks": list(self.hooks),
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class HookCall:
    """One plugin's implementation of a hook, ready to call with its own arguments."""

    plugin: PluginInfo
    function: Callable[..., Any]
    argnames: tuple[str, ...]

    def __call__(self, **arguments: Any) -> Any:
        return self.function(*(arguments[name] for name in self.argnames))


def _description(target: object) -> str:
    text = getattr(target, "TAVERNA_DESCRIPTION", None) or inspect.getdoc(target) or ""
    return str(text).strip().splitlines()[0] if str(text).strip() else ""


class Plugins:
    """The loaded plugins and their hooks (a pluggy plugin manager underneath)."""

    def __init__(self) -> None:
        self.manager = pluggy.PluginManager(PROJECT)
        self.manager.add_hookspecs(TavernaHooks)
        self._infos: dict[str, PluginInfo] = {}
        self._order: dict[str, int] = {}

    def register(
        self,
        target: object,
        name: str,
        *,
        grants: Iterable[str] | None = None,
        version: str = "",
        distribution: str = "",
    ) -> PluginInfo:
        """Register a plugin object; its grants are `grants` or its `TAVERNA_GRANTS`.

        A plugin that cannot be registered (unknown grant, a hook that does not exist or
        takes arguments the hook does not give) is kept in the list with its error."""
        module = getattr(target, "__name__", type(target).__module__)
        try:
            if name in self._infos:
                raise TavernaError(
                    "a plugin of this name is already loaded",
                    file=f"plugin {name}",
                    code="plugin_of_this_name_is",
                )
            declared = grants if grants is not None else getattr(target, "TAVERNA_GRANTS", None)
            found = parse_grants(name, declared)
            self.manager.register(target, name=name)
        except (TavernaError, pluggy.PluginValidationError, ValueError) as exc:
            message = str(exc)
            info = PluginInfo(
                name,
                module,
                _description(target),
                frozenset(),
                version,
                distribution,
                error=message,
            )
            self._infos[name] = info
            log.warning("plugin %s was not loaded: %s", name, message)
            return info
        impls = [
            hook
            for hook in HOOKS
            if any(i.plugin_name == name for i in getattr(self.manager.hook, hook).get_hookimpls())
        ]
        for hook in impls:
            for impl in getattr(self.manager.hook, hook).get_hookimpls():
                if impl.plugin_name == name and (impl.hookwrapper or impl.wrapper):
                    self.manager.unregister(name=name)
                    info = PluginInfo(
                        name,
                        module,
                        _description(target),
                        frozenset(),
                        version,
                        distribution,
                        error=f"{hook}: wrappers are not supported",
                    )
                    self._infos[name] = info
                    return info
        info = PluginInfo(
            name, module, _description(target), found, version, distribution, tuple(impls)
        )
        self._infos[name] = info
        self._order[name] = len(self._order)
        return info

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> list[PluginInfo]:
        """Load every plugin installed under the entry-point `group`, sorted by name."""
        loaded = []
        found = sorted(importlib.metadata.entry_points(group=group), key=lambda e: e.name)
        for entry in found:
            dist = entry.dist
            version = dist.version if dist is not None else ""
            distribution = dist.metadata["Name"] if dist is not None else ""
            try:
                target = entry.load()
            except Exception as exc:  # a broken plugin must not stop the product
                info = PluginInfo(
                    entry.name,
                    entry.value,
                    "",
                    frozenset(),
                    version,
                    distribution,
                    error=f"could not be imported: {type(exc).__name__}: {exc}",
                )
                self._infos[entry.name] = info
                log.warning("plugin %s: %s", entry.name, info.error)
                loaded.append(info)
                continue
            loaded.append(
                self.register(target, entry.name, version=version, distribution=distribution)
            )
        return loaded

    def list(self) -> list[PluginInfo]:
        """Every plugin, loaded or refused, by name."""
        return sorted(self._infos.values(), key=lambda i: i.name)

    def calls(self, hook: str) -> Sequence[HookCall]:
        """The implementations of `hook` in the order they run: `tryfirst` ones, the
        others, then `trylast` ones, each group in load order."""
        caller = getattr(self.manager.hook, hook)
        found = []
        for impl in caller.get_hookimpls():
            info = self._infos.get(impl.plugin_name)
            if info is None or info.error is not None:
                continue
            rank = 0 if impl.tryfirst else 2 if impl.trylast else 1
            found.append(
                (rank, self._order[info.name], HookCall(info, impl.function, impl.argnames))
            )
        found.sort(key=lambda item: (item[0], item[1]))
        return [call for _, _, call in found]

    def has(self, hook: str) -> bool:
        return bool(self.calls(hook))
