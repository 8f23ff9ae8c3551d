"""The event bus: where the services announce what happened and let plugins change a turn.

The services emit each `Event` after the change it reports is stored; plugins' hooks
run first (in their documented order, see `hookspecs`), then the listeners registered
in the process (the Quick Reply automations). A handler that fails is logged and the
others still run: an extension never undoes a person's write. A generation's chat copy
and its prompt go round the interceptors and prompt handlers in order, each seeing the
changes of the ones before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import Node
from taverna.model.prompt import Prompt
from taverna.services.plugins.events import Event, EventName, EventView, PluginAccess
from taverna.services.plugins.grants import Grant
from taverna.services.plugins.host import PluginHost, PluginServices
from taverna.services.plugins.interception import ChatCopy, ChatCopyView, GenerationAborted
from taverna.services.plugins.prompt_ready import PromptReady, PromptView
from taverna.services.plugins.registry import PluginInfo, Plugins
from taverna.services.plugins.tools import Tool

__all__ = ["EventBus", "Listener"]

log = logging.getLogger(__name__)

Listener = Callable[[Event], None]
# What the process itself registers to intercept a generation (full access, no grants).
Interceptor = Callable[[ChatCopyView], None]

_EVERYTHING = PluginAccess("taverna", frozenset(Grant))


class EventBus:
    """Events out to plugins and listeners; a generation's turn through its interceptors."""

    def __init__(
        self, plugins: Plugins | None = None, services: PluginServices | None = None
    ) -> None:
        self.plugins = plugins if plugins is not None else Plugins()
        self.services = services if services is not None else PluginServices()
        self._listeners: list[tuple[EventName | None, Listener]] = []
        self._interceptors: list[tuple[str, Interceptor]] = []
        self._lock = threading.Lock()
        self._tools: list[Tool] | None = None

    # ----------------------------------------------------------------- listeners

    def on(self, name: EventName | None, listener: Listener) -> Callable[[], None]:
        """Call `listener` for each event named `name` (None: every event), after the
        plugins; returns the function that stops it."""
        entry = (name, listener)
        with self._lock:
            self._listeners.append(entry)

        def off() -> None:
            with self._lock:
                if entry in self._listeners:
                    self._listeners.remove(entry)

        return off

    def intercept_with(self, name: str, interceptor: Interceptor) -> Callable[[], None]:
        """Add an interceptor of the process itself (after the plugins' ones)."""
        entry = (name, interceptor)
        with self._lock:
            self._interceptors.append(entry)

        def off() -> None:
            with self._lock:
                if entry in self._interceptors:
                    self._interceptors.remove(entry)

        return off

    def host(self, plugin: PluginInfo, chat_id: str | None = None) -> PluginHost:
        """The capabilities handed to `plugin`, behind its grants, acting for the account
        that owns chat `chat_id` (None: for no account)."""
        account = None
        if chat_id and self.services.owner is not None:
            try:
                account = self.services.owner(chat_id)
            except NotFound:
                account = None
        return PluginHost(plugin.access, self.services, account)

    # -------------------------------------------------------------------- events

    def emit(self, event: Event) -> None:
        """Tell every plugin and listener, in order; failures are logged, never raised."""
        for call in self.plugins.calls("taverna_event"):
            try:
                call(
                    event=EventView(event, call.plugin.access),
                    host=self.host(call.plugin, event.chat_id),
                )
            except Exception as exc:
                _report(call.plugin.name, event.name.value, exc)
        with self._lock:
            listeners = list(self._listeners)
        for name, listener in listeners:
            if name is not None and name is not event.name:
                continue
            try:
                listener(event)
            except Exception as exc:
                _report(getattr(listener, "__qualname__", "a listener"), event.name.value, exc)

    # --------------------------------------------------------------- generations

    @property
    def intercepts(self) -> bool:
        """Whether any interceptor is there (else a generation skips copying its chat)."""
        return bool(self._interceptors) or self.plugins.has("taverna_generate_interceptor")

    def intercept(self, chat_id: str, kind: str, nodes: Sequence[Node]) -> list[Node] | None:
        """Run the interceptors over a copy of `nodes`: the changed copy, or None when
        none changed it. Raises `GenerationAborted` when one aborts."""
        copy = ChatCopy(chat_id, kind, list(nodes))
        for call in self.plugins.calls("taverna_generate_interceptor"):
            try:
                call(
                    chat=ChatCopyView(copy, call.plugin.access),
                    host=self.host(call.plugin, chat_id),
                )
            except Exception as exc:
                _report(call.plugin.name, "generate_interceptor", exc)
            if copy.aborted is not None:
                raise GenerationAborted(*copy.aborted)
        with self._lock:
            interceptors = list(self._interceptors)
        for name, interceptor in interceptors:
            try:
                interceptor(ChatCopyView(copy, _EVERYTHING, name))
            except GenerationAborted:
                raise
            except Exception as exc:
                _report(name, "generate_interceptor", exc)
            if copy.aborted is not None:
                raise GenerationAborted(*copy.aborted)
        return copy.nodes if copy.changed else None

    def prompt_ready(self, prompt: Prompt, *, chat_id: str, kind: str, dry_run: bool) -> Prompt:
        """The prompt after every `taverna_prompt_ready` handler, in order."""
        calls = self.plugins.calls("taverna_prompt_ready")
        if not calls:
            return prompt
        ready = PromptReady.of(prompt, chat_id=chat_id, kind=kind, dry_run=dry_run)
        for call in calls:
            try:
                call(
                    prompt=PromptView(ready, call.plugin.access),
                    host=self.host(call.plugin, chat_id),
                )
            except Exception as exc:
                _report(call.plugin.name, EventName.CHAT_COMPLETION_PROMPT_READY.value, exc)
        return ready.result()

    def tools(self) -> list[Tool]:
        """The function tools the plugins offer (asked once)."""
        if self._tools is not None:
            return self._tools
        found: list[Tool] = []
        for call in self.plugins.calls("taverna_tools"):
            try:
                offered: Any = call(host=self.host(call.plugin)) or []
                for tool in offered:
                    if not isinstance(tool, Tool):
                        raise TavernaError(
                            f"{tool!r} is not a taverna.services.plugins.tools.Tool",
                            code="is_not_taverna_services_tools",
                            params={"tool": str(tool)},
                        )
                    found.append(tool)
            except Exception as exc:
                _report(call.plugin.name, "tools", exc)
        self._tools = found
        return found


def _report(who: str, hook: str, exc: Exception) -> None:
    if isinstance(exc, TavernaError):
        log.warning("%s on %s: %s", who, hook, exc)
    else:
        log.exception("%s failed on %s", who, hook)
