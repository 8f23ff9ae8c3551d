"""Groups: several characters in one chat, as SillyTavern's `groups/*.json` holds them.

A member is named by its card's avatar file name (`Seraphina.png`), as in SillyTavern;
`disabled_members` are the muted ones. taverna's own per-member settings (a connection
or a preset of its own) travel under the `taverna` key, which SillyTavern keeps.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from pydantic import Field

from taverna.model.document import JsonInt, Number, STDocument

__all__ = ["GenerationMode", "Group", "MemberSettings"]


class GenerationMode(IntEnum):
    """How the members' cards go into a prompt (algo-chat-ops.md §5.3)."""

    SWAP = 0  # only the speaker's card
    JOIN = 1  # every unmuted member's card (and the speaker's), joined
    JOIN_WITH_MUTED = 2  # every member's card, joined


class MemberSettings(STDocument):
    """taverna's settings of one member: its own connection and preset, when it has them."""

    connection: str | None = None
    preset: str | None = None


class Group(STDocument):
    """A SillyTavern group definition, field for field (unknown keys kept)."""

    id: str = ""
    name: str = ""
    members: list[str] = Field(default_factory=list)
    avatar_url: str | None = None
    allow_self_responses: bool = False
    activation_strategy: JsonInt = 0
    generation_mode: JsonInt = 0
    disabled_members: list[str] = Field(default_factory=list)
    chat_metadata: dict[str, Any] = Field(default_factory=dict)
    fav: bool | str = False
    chat_id: str = ""
    chats: list[str] = Field(default_factory=list)
    auto_mode_delay: Number = 5
    generation_mode_join_prefix: str = ""
    generation_mode_join_suffix: str = ""
    hide_muted_sprites: bool = Field(default=False, alias="hideMutedSprites")
    past_metadata: dict[str, Any] = Field(default_factory=dict)
    taverna: dict[str, MemberSettings] = Field(default_factory=dict)

    @property
    def mode(self) -> GenerationMode:
        """The generation mode (an unknown value is Swap)."""
        try:
            return GenerationMode(self.generation_mode)
        except ValueError:
            return GenerationMode.SWAP

    def is_muted(self, member: str) -> bool:
        """Whether the member with this avatar file name is muted."""
        return member in self.disabled_members

    def member_settings(self, member: str) -> MemberSettings:
        """The member's own connection and preset (none set: the chat's)."""
        return self.taverna.get(member) or MemberSettings()
