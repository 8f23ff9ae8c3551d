"""Generation interceptors: a copy of the chat a generation will see, changed or aborted.

Before a prompt is built, each interceptor gets the chat's path as a list of its own
(SillyTavern passes its `generate_interceptor` a clone of the chat): what it changes
goes into this turn's prompt only, never into the stored chat. An interceptor may
abort the generation with a reason the person is shown.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from taverna.errors import TavernaError
from taverna.model.chat import Node, NodeRole, new_id
from taverna.services.plugins.events import PluginAccess
from taverna.services.plugins.grants import Grant

__all__ = ["ChatCopy", "ChatCopyView", "GenerationAborted"]


class GenerationAborted(TavernaError):
    """An interceptor stopped a generation before anything was sent."""

    def __init__(self, by: str, reason: str) -> None:
        self.by = by
        self.reason = reason
        super().__init__(
            f"the generation was aborted by {by}: {reason or 'no reason given'}",
            code="generation_aborted",
            params={"by": by, "reason": reason},
        )


@dataclass
class ChatCopy:
    """The messages a generation will see, as a list interceptors change in turn.

    `kind`: the generation's type. `changed` tells the caller to build from this copy.
    """

    chat_id: str
    kind: str
    nodes: list[Node]
    changed: bool = False
    aborted: tuple[str, str] | None = None  # (by whom, why)


_ROLES = {role.value: role for role in NodeRole}


class ChatCopyView:
    """The chat copy as one interceptor sees it: reading it takes `read_chats`, changing
    it or aborting takes `change_prompts`."""

    __slots__ = ("_access", "_copy", "_who")

    def __init__(self, copy: ChatCopy, access: PluginAccess, who: str = "") -> None:
        self._copy = copy
        self._access = access
        self._who = who or f"plugin {access.name!r}"

    @property
    def chat_id(self) -> str:
        return self._copy.chat_id

    @property
    def kind(self) -> str:
        return self._copy.kind

    def __len__(self) -> int:
        return len(self._copy.nodes)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Each message as `{role, name, text, hidden}`, oldest first (a copy)."""
        self._access.require(Grant.READ_CHATS, "read the chat a generation sees")
        return [
            {"role": n.role.value, "name": n.speaker, "text": n.content, "hidden": n.hidden}
            for n in self._copy.nodes
        ]

    def _change(self, action: str) -> None:
        self._access.require(Grant.CHANGE_PROMPTS, action)
        self._copy.changed = True

    def _at(self, index: int) -> int:
        if not -len(self._copy.nodes) <= index < len(self._copy.nodes):
            raise IndexError(f"no message at {index} (the copy holds {len(self._copy.nodes)})")
        return index % len(self._copy.nodes)

    def set_text(self, index: int, text: str) -> None:
        """Change what message `index` says, for this generation only."""
        self._change("change the chat a generation sees")
        at = self._at(index)
        self._copy.nodes[at] = replace(self._copy.nodes[at], content=str(text))

    def set_hidden(self, index: int, hidden: bool = True) -> None:
        """Leave message `index` out of this generation (or put it back)."""
        self._change("change the chat a generation sees")
        at = self._at(index)
        self._copy.nodes[at] = replace(self._copy.nodes[at], hidden=bool(hidden))

    def remove(self, index: int) -> None:
        self._change("change the chat a generation sees")
        del self._copy.nodes[self._at(index)]

    def insert(self, index: int, role: str, text: str, name: str = "") -> None:
        """Add a message before `index` (`len(...)` adds it last): user, assistant,
        system or narrator."""
        self._change("change the chat a generation sees")
        if role not in _ROLES:
            raise ValueError(f"role must be one of {', '.join(_ROLES)}, not {role!r}")
        nodes = self._copy.nodes
        at = max(0, min(index if index >= 0 else len(nodes) + index, len(nodes)))
        before = nodes[at - 1] if at > 0 else None
        nodes.insert(
            at,
            Node(
                id=new_id(),
                chat_id=self._copy.chat_id,
                parent_id=before.id if before else None,
                role=_ROLES[role],
                content=str(text),
                speaker=name,
                depth=before.depth + 1 if before else 0,
            ),
        )

    def abort(self, reason: str = "") -> None:
        """Stop the generation before anything is sent; the person sees `reason`."""
        self._access.require(Grant.CHANGE_PROMPTS, "abort a generation")
        if self._copy.aborted is None:
            self._copy.aborted = (self._who, str(reason))
