"""What a plugin may touch: the grants it declares, and the refusal when it lacks one."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from taverna.errors import TavernaError

__all__ = ["Grant", "GrantRefused", "parse_grants"]


class Grant(StrEnum):
    """One thing a plugin may touch; a plugin has none unless it declares it.

    `read_chats`: the text of messages (in events, in a generation's chat copy, in a
    prompt). `change_prompts`: change a generation's chat copy or its prompt, or abort
    it. `call_models`: ask a connected model for text. `see_keys`: read a connection's
    API key.
    """

    READ_CHATS = "read_chats"
    CHANGE_PROMPTS = "change_prompts"
    CALL_MODELS = "call_models"
    SEE_KEYS = "see_keys"


class GrantRefused(TavernaError):
    """A plugin tried something its declared grants do not allow."""

    def __init__(self, plugin: str, grant: Grant, action: str) -> None:
        self.plugin = plugin
        self.grant = grant
        super().__init__(
            f"plugin {plugin!r} may not {action}: it has not declared the grant "
            f"{grant.value!r} (add it to TAVERNA_GRANTS if the plugin needs it)",
            field="grants",
            code="grant_refused",
            params={"plugin": plugin, "action": action, "grant": grant.value},
        )


def parse_grants(plugin: str, declared: object) -> frozenset[Grant]:
    """A plugin's `TAVERNA_GRANTS` as grants; anything else is an error naming the plugin."""
    if declared is None:
        return frozenset()
    if isinstance(declared, str) or not isinstance(declared, Iterable):
        raise TavernaError(
            "TAVERNA_GRANTS must be a list of grant names",
            file=f"plugin {plugin}",
            field="grants",
            code="taverna_grants_must_be_list",
        )
    found = set()
    known = ", ".join(g.value for g in Grant)
    for item in declared:
        try:
            found.add(Grant(item))
        except ValueError:
            raise TavernaError(
                f"unknown grant {item!r} (known: {known})",
                file=f"plugin {plugin}",
                field="grants",
                code="unknown_grant_known",
                params={"item": str(item), "known": str(known)},
            ) from None
    return frozenset(found)
