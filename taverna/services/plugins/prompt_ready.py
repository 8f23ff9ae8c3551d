"""The prompt once built and before it is sent (SillyTavern's `chat_completion_prompt_ready`):
handlers run in order, each seeing what the ones before it changed."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from taverna.model.prompt import Prompt, PromptMessage, Role
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

    @classmethod
    def of(cls, prompt: Prompt, *, chat_id: str, kind: str, dry_run: bool) -> PromptReady:
        return cls(chat_id, kind, dry_run, prompt, list(prompt.messages), prompt.text)

    def result(self) -> Prompt:
        """The prompt with every change made."""
        if not self.changed:
            return self.prompt
        if self.prompt.kind == "text":
            return replace(self.prompt, text=self.text)
        return replace(self.prompt, messages=tuple(self.messages))


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

    def set_content(self, index: int, content: str) -> None:
        self._change()
        messages = self._ready.messages
        messages[index] = replace(messages[index], content=str(content))

    def insert(self, index: int, role: str, content: str) -> None:
        """Add a message before `index` (`len(messages)` adds it last)."""
        self._change()
        if not self.is_chat:
            raise ValueError("this prompt is text: use set_text")
        if role not in _ROLES:
            raise ValueError(f"role must be one of {', '.join(_ROLES)}, not {role!r}")
        self._ready.messages.insert(
            index, PromptMessage(_ROLES[role], str(content), source="plugin")
        )

    def append(self, role: str, content: str) -> None:
        self.insert(len(self._ready.messages), role, content)

    def remove(self, index: int) -> None:
        self._change()
        del self._ready.messages[index]
