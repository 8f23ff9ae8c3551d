"""The prompt once built and before it is sent (SillyTavern's `chat_completion_prompt_ready`):
handlers run in order, each seeing what the ones before it changed.

The ledger is kept true to what is sent: a message a handler adds gets a line of its own
(named for the plugin, its tokens counted), a removed message's parts are marked cut,
a changed one's parts are marked and recounted, and every part's position follows its
message to where it ended up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from taverna.engine.tokens import get_tokenizer
from taverna.model.prompt import Ledger, LedgerItem, Prompt, PromptMessage, Role
from taverna.services.plugins.events import PluginAccess
from taverna.services.plugins.grants import Grant

__all__ = ["PromptReady", "PromptView"]

_ROLES = {role.value: role for role in Role if role is not Role.TOOL}


@dataclass
class PromptReady:
    """A prompt being handed round: its messages (Chat Completion) or text (Text Completion)."""

    chat_id: str
    kind: str  # the generation's type
    dry_run: bool
    prompt: Prompt
    messages: list[PromptMessage] = field(default_factory=list)
    text: str = ""
    changed: bool = False
    # For each message now, the index it had as built, or the plugin that added it; the
    # built messages a handler changed, with the plugin that changed them.
    origins: list[int | str] = field(default_factory=list)
    edited: dict[int, str] = field(default_factory=dict)
    text_changed_by: str = ""

    @classmethod
    def of(cls, prompt: Prompt, *, chat_id: str, kind: str, dry_run: bool) -> PromptReady:
        messages = list(prompt.messages)
        origins: list[int | str] = list(range(len(messages)))
        return cls(chat_id, kind, dry_run, prompt, messages, prompt.text, origins=origins)

    def result(self) -> Prompt:
        """The prompt with every change made, its ledger placing each part where it went."""
        if not self.changed:
            return self.prompt
        count = _counter(self.prompt.ledger)
        if self.prompt.kind == "text":
            if self.text == self.prompt.text:
                return self.prompt
            delta = count(self.text) - count(self.prompt.text)
            line = LedgerItem("plugin", self.text_changed_by, delta, code=CHANGED)
            ledger = _with_items(self.prompt.ledger, [*self.prompt.ledger.items, line])
            return replace(self.prompt, text=self.text, ledger=ledger)
        return replace(self.prompt, messages=tuple(self.messages), ledger=self._ledger(count))

    def _ledger(self, count: Callable[[str], int]) -> Ledger:
        built = self.prompt.messages
        now = {old: new for new, old in enumerate(self.origins) if isinstance(old, int)}
        # A changed message's recount goes on the last included part placed in it.
        last_part = {
            item.position: index
            for index, item in enumerate(self.prompt.ledger.items)
            if item.included and item.position is not None
        }
        items: list[LedgerItem] = []
        for index, item in enumerate(self.prompt.ledger.items):
            old = item.position
            if not item.included or old is None or old >= len(built):
                items.append(item)
            elif old not in now:
                items.append(
                    replace(item, included=False, position=None, reason="", code=REMOVED, params={})
                )
            elif old in self.edited:
                moved = replace(item, position=now[old], reason="", code=CHANGED, params={})
                if last_part.get(old) == index:
                    text = self.messages[now[old]].content
                    delta = count(text) - count(built[old].content)
                    moved = replace(moved, tokens=item.tokens + delta, text=text)
                items.append(moved)
            else:
                items.append(replace(item, position=now[old]))
        # Handlers only add, remove and change messages, so the parts stay in order; a
        # message a handler added goes before the first part placed after it.
        for position, origin in enumerate(self.origins):
            if isinstance(origin, int):
                continue
            content = self.messages[position].content
            line = LedgerItem(
                "plugin", origin, count(content), text=content, position=position, code=ADDED
            )
            at = next(
                (
                    i
                    for i, item in enumerate(items)
                    if item.position is not None and item.position > position
                ),
                len(items),
            )
            items.insert(at, line)
        return _with_items(self.prompt.ledger, items)


# The ledger's codes for a handler's changes (LEDGER_REASONS).
ADDED = "prompt_handler_added"
REMOVED = "prompt_handler_removed"
CHANGED = "prompt_handler_changed"


def _counter(ledger: Ledger) -> Callable[[str], int]:
    """Counts text as the prompt's parts were counted (its tokenizer, or the common one)."""
    tokenizer = get_tokenizer(ledger.tokenizer or "cl100k_base")
    return tokenizer.count


def _with_items(ledger: Ledger, items: list[LedgerItem]) -> Ledger:
    """The ledger with `items`, its total moved by what they add or take away."""
    before = sum(item.tokens for item in ledger.items if item.included)
    after = sum(item.tokens for item in items if item.included)
    return replace(ledger, items=tuple(items), total_tokens=ledger.total_tokens + after - before)


class PromptView:
    """The prompt as one handler sees it: reading takes `read_chats` (a prompt holds the
    chat), changing takes `change_prompts`."""

    __slots__ = ("_access", "_ready")

    def __init__(self, ready: PromptReady, access: PluginAccess) -> None:
        self._ready = ready
        self._access = access

    @property
    def chat_id(self) -> str:
        return self._ready.chat_id

    @property
    def kind(self) -> str:
        return self._ready.kind

    @property
    def dry_run(self) -> bool:
        """True for a preview: nothing will be sent."""
        return self._ready.dry_run

    @property
    def is_chat(self) -> bool:
        """A Chat Completion prompt (messages); else a Text Completion one (text)."""
        return self._ready.prompt.kind != "text"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Each message as `{role, content, name}` (a copy)."""
        self._access.require(Grant.READ_CHATS, "read the prompt")
        return [
            {"role": m.role.value, "content": m.content, "name": m.name}
            for m in self._ready.messages
        ]

    @property
    def text(self) -> str:
        self._access.require(Grant.READ_CHATS, "read the prompt")
        return self._ready.text

    def _change(self) -> None:
        self._access.require(Grant.CHANGE_PROMPTS, "change the prompt")
        self._ready.changed = True

    def set_text(self, text: str) -> None:
        """Replace a Text Completion prompt's text."""
        self._change()
        if self.is_chat:
            raise ValueError("this prompt is a list of messages: change them one by one")
        self._ready.text = str(text)
        self._ready.text_changed_by = self._access.name

    def set_content(self, index: int, content: str) -> None:
        self._change()
        ready = self._ready
        messages = ready.messages
        old = messages[index]
        messages[index] = replace(old, content=str(content))
        origin = ready.origins[index]
        if isinstance(origin, int):
            ready.edited[origin] = self._access.name

    def insert(self, index: int, role: str, content: str) -> None:
        """Add a message before `index` (`len(messages)` adds it last)."""
        self._change()
        if not self.is_chat:
            raise ValueError("this prompt is text: use set_text")
        if role not in _ROLES:
            raise ValueError(f"role must be one of {', '.join(_ROLES)}, not {role!r}")
        message = PromptMessage(_ROLES[role], str(content), source="plugin")
        self._ready.messages.insert(index, message)
        self._ready.origins.insert(index, self._access.name)

    def append(self, role: str, content: str) -> None:
        self.insert(len(self._ready.messages), role, content)

    def remove(self, index: int) -> None:
        self._change()
        del self._ready.messages[index]
        del self._ready.origins[index]
