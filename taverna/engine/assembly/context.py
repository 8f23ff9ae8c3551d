"""Every input of one turn of prompt assembly, as plain frozen data.

The assembly engine is a pure function of an `AssemblyContext`: the service (or the
`taverna prompt` command) gathers the cards, persona, the active path of the chat,
the chat's metadata, the lorebooks, the preset and the user's settings into one
value, and the engine returns a `Prompt`. Nothing here reads a file, a clock or a
global: the current time and the random seed travel in the context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from taverna.engine.assembly.layouts import SILLYTAVERN, PromptLayout
from taverna.model.character import CharacterBook, DepthPrompt
from taverna.model.chat import AuthorsNote
from taverna.model.lorebook import DEFAULT_WORLD_INFO, Lorebook, WorldInfoSettings
from taverna.model.prompt import PromptImage
from taverna.model.regex_script import RegexScript
from taverna.model.settings import (
    ChatCompletionSettings,
    PersonaInfo,
    PowerUserSettings,
    TextCompletionSettings,
)
from taverna.model.summary import SummarySettings


class GenerationType(StrEnum):
    """The kind of generation, by SillyTavern's own names (algo-prompt-assembly.md §1)."""

    NORMAL = "normal"
    CONTINUE = "continue"
    IMPERSONATE = "impersonate"
    SWIPE = "swipe"
    REGENERATE = "regenerate"
    QUIET = "quiet"


class Speaker(StrEnum):
    """Who wrote a chat message."""

    USER = "user"
    CHARACTER = "character"
    NARRATOR = "narrator"  # `/sys` messages: extra.type == "narrator"


# ---------------------------------------------------------------- characters


@dataclass(frozen=True, slots=True)
class CharacterInfo:
    """The card fields assembly reads, for one character."""

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    mes_example: str = ""
    first_mes: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    depth_prompt: DepthPrompt = field(default_factory=DepthPrompt)
    talkativeness: float = 0.5
    linked_lorebook: str = ""  # `data.extensions.world`: the book linked to the card
    extra_lorebooks: tuple[str, ...] = ()  # books added to the character in the UI
    embedded_lorebook: CharacterBook | None = None  # `data.character_book`, as the card has it
    avatar: str = ""  # the card's file name, how SillyTavern keys per-character settings
    regex_scripts: tuple[RegexScript, ...] = ()  # the card's own; they run only if allowed
    version: str = ""  # `data.character_version`, what `{{charVersion}}` prints


# ---------------------------------------------------------------------- chat

_NO_EXTRAS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of the active path, oldest first in `AssemblyContext.messages`.

    `hidden` messages (SillyTavern `is_system`) stay in the path but are never sent
    nor scanned. `forced_avatar` marks a message sent under a persona or `/sendas`
    (SillyTavern `force_avatar`); the default names behaviour prefixes those.
    """

    id: str
    speaker: Speaker
    name: str
    text: str
    hidden: bool = False
    swipe_index: int = 0
    swipe_count: int = 1
    forced_avatar: bool = False
    bias: str = ""
    # One empty mapping for every message without extras (nearly all): a turn keeps its
    # window's messages between turns, and an empty dict each would cost 64 bytes apiece.
    extras: Mapping[str, Any] = field(default_factory=lambda: _NO_EXTRAS)
    # The picture attached to the message (SillyTavern `extra.image`), read by the caller;
    # sent only when `AssemblyContext.inline_images` is on.
    image: PromptImage | None = None

    @property
    def is_user(self) -> bool:
        """Whether the user wrote it."""
        return self.speaker is Speaker.USER


@dataclass(frozen=True, slots=True)
class ChatMetadata:
    """What a chat carries besides its messages."""

    authors_note: AuthorsNote = field(default_factory=AuthorsNote)
    # The speaker's own author's note (`extension_settings.note.chara`), combined with the
    # chat's as `character_note_mode` says: replace | before | after.
    character_note: str = ""
    character_note_mode: str = "replace"
    lorebook: str = ""  # the chat's own lorebook (`world_info` in the chat header)
    scenario: str = ""  # per-chat scenario override
    variables: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------- the context


@dataclass(frozen=True, slots=True)
class EarlierMessages:
    """The part of the path above `AssemblyContext.messages` that the caller left out.

    A long chat is given by its end, as far as the budget, the scan depth and the
    injections reach; what assembly still needs of the rest is how much of it there
    is: every live message (`count`, for `{{lastMessageId}}`), those not hidden
    (`visible`, the lorebook's message clock) and the person's (`user`, hidden ones
    too, for the author's note interval).
    """

    count: int = 0
    visible: int = 0
    user: int = 0


@dataclass(frozen=True, slots=True)
class AssemblyContext:
    """Every input of one turn of prompt assembly.

    `characters` holds the speaking character first; in a group chat the others
    follow (`group_members` lists every member's name in the group's order).
    `messages` is the active path, oldest first, hidden messages included; or only its
    end, with `earlier` saying how much came before.
    `lorebooks` holds every book available by name; which of them apply this turn
    is decided from `world_info.global_select`, the character's linked books and
    the chat's book, as SillyTavern decides.
    """

    characters: tuple[CharacterInfo, ...]
    messages: tuple[ChatMessage, ...] = ()
    earlier: EarlierMessages = EarlierMessages()
    persona: PersonaInfo = PersonaInfo()
    metadata: ChatMetadata = ChatMetadata()
    api: str = "openai"  # "openai" (Chat Completion) or "textgen" (Text Completion)
    generation_type: GenerationType = GenerationType.NORMAL
    chat_completion: ChatCompletionSettings = ChatCompletionSettings()
    text_completion: TextCompletionSettings = TextCompletionSettings()
    power_user: PowerUserSettings = PowerUserSettings()
    world_info: WorldInfoSettings = DEFAULT_WORLD_INFO
    lorebooks: Mapping[str, Lorebook] = field(default_factory=dict)
    group_members: tuple[str, ...] = ()
    group_name: str = ""
    # Group card handling (algo-chat-ops.md §5.3): 0 swap, 1 join, 2 join including muted.
    group_generation_mode: int = 0
    group_join_prefix: str = ""
    group_join_suffix: str = ""
    group_muted: tuple[str, ...] = ()  # names of muted (disabled) members
    quiet_prompt: str = ""
    # `extension_settings.note.allowWIScan`: the lorebook scans the author's note and the
    # characters' notes.
    allow_wi_scan: bool = False
    # The regex scripts that apply, in order: global ones, then the character's when allowed.
    regex_scripts: tuple[RegexScript, ...] = ()
    # The person's global variables (`{{getglobalvar}}`); a turn's changes stay in the turn.
    global_variables: Mapping[str, Any] = field(default_factory=dict)
    chat_id: str = ""  # the chat's identity (SillyTavern: its file name); seeds {{pick}}
    tokenizer: str = ""  # the tokenizer's name; "" = chosen from the model
    # Where the parts that change from turn to turn go (`layouts.py`): SillyTavern's
    # places, or after the newest message so a model server's cached prefix is reused.
    layout: PromptLayout = SILLYTAVERN
    # Attached pictures go with their messages (SillyTavern `isImageInliningSupported`: the
    # preset's `image_inlining` on and the API and model able to see them).
    inline_images: bool = False
    # A real generation (False) reads the path's lorebook timers and returns the new
    # ones in `Prompt.state`; a dry run (a preview, the inspector, a token count)
    # neither reads nor writes them, as SillyTavern's dry runs (algo-world-info.md §4.1).
    dry_run: bool = False
    # The chat's summary as this turn sees it (algo-chat-ops.md §3.1: the newest one on
    # the path before its last message), "" for none; `summary_at` names the message
    # that carries it, for the ledger. `summary_settings` say where it goes.
    summary: str = ""
    summary_at: str = ""
    summary_settings: SummarySettings = SummarySettings()
    seed: int = 0
    now: datetime = datetime(2024, 1, 1, tzinfo=UTC)
    extras: Mapping[str, Any] = field(default_factory=dict)
    # Recall by meaning (`taverna.engine.assembly.recall.RecallInput`): old messages of
    # the path and vectorized lorebook entries the recall service found for this turn.
    recall: Any = None

    @property
    def character(self) -> CharacterInfo:
        """The character who speaks this turn."""
        return self.characters[0]

    def member(self, name: str) -> CharacterInfo | None:
        """The group member (or the character) with this name."""
        return next((c for c in self.characters if c.name == name), None)

    def joined_members(self) -> tuple[CharacterInfo, ...]:
        """The members whose cards are joined in join modes, in the group's order.

        Muted members are left out, except the speaker, unless the mode includes them.
        """
        out = []
        for name in self.group_members:
            member = self.member(name)
            if member is None:
                continue
            if (
                name in self.group_muted
                and member is not self.character
                and self.group_generation_mode != 2
            ):
                continue
            out.append(member)
        return tuple(out)

    @property
    def is_group(self) -> bool:
        """Whether this is a group chat."""
        return bool(self.group_members)
