"""Where a prompt injected beside the chat goes, and as whom (SillyTavern's extension prompts).

The author's note, a character's note, the persona at depth, lorebook entries at depth
and prompt-manager prompts all go into the prompt this way: at a position, and in the
chat at a depth, as a role.
"""

from __future__ import annotations

from enum import IntEnum


class InjectionRole(IntEnum):
    """Role of an extension prompt, by SillyTavern's numbers (0 system, 1 user, 2 assistant)."""

    SYSTEM = 0
    USER = 1
    ASSISTANT = 2

    @property
    def chat_role(self) -> str:
        """The chat-completion role name."""
        return ("system", "user", "assistant")[self.value]

    @classmethod
    def parse(cls, value: object, default: InjectionRole | None = None) -> InjectionRole:
        """Read a role given as a number or a name (cards store `"system"`, settings `0`)."""
        fallback = cls.SYSTEM if default is None else default
        if isinstance(value, bool) or value is None:
            return fallback
        if isinstance(value, int):
            return cls(value) if value in (0, 1, 2) else fallback
        if isinstance(value, str):
            names = {"system": cls.SYSTEM, "user": cls.USER, "assistant": cls.ASSISTANT}
            if value.strip().isdigit():
                return cls.parse(int(value), fallback)
            return names.get(value.strip().lower(), fallback)
        return fallback


class ExtensionPosition(IntEnum):
    """Where an extension prompt goes (SillyTavern `extension_prompt_types`)."""

    NONE = -1
    IN_PROMPT = 0  # after the story string / right after the main prompt
    IN_CHAT = 1  # inside the history at a depth
    BEFORE_PROMPT = 2  # before the story string / right before the main prompt
