"""The in-chat injection table: every prompt that goes into the history at a depth.

SillyTavern keeps these as "extension prompts" keyed by name (author's note,
character note, persona at depth, lorebook @depth groups, `/inject`, ...). Both the
Chat Completion and the Text Completion builders read them from one table, with
SillyTavern's ordering inside one depth (algo-prompt-assembly.md §5.2).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TypeVar

from taverna.engine.assembly.context import AssemblyContext, CharacterInfo, Speaker
from taverna.engine.lorebook import DEFAULT_DEPTH, DepthGroup
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.persona import PersonaPosition

# algo-prompt-assembly.md §5.2: depths 0..1000 are walked.
MAX_INJECTION_DEPTH = 1000

# SillyTavern's keys for the built-in sources.
SUMMARY_KEY = "1_memory"
AUTHORS_NOTE_KEY = "2_floating_prompt"
VECTORS_KEY = "3_vectors"
DATA_BANK_KEY = "4_vectors_data_bank"
DEPTH_PROMPT_KEY = "DEPTH_PROMPT"
PERSONA_KEY = "PERSONA_DESCRIPTION"
QUIET_KEY = "QUIET_PROMPT"

ROLE_ORDER = (InjectionRole.SYSTEM, InjectionRole.USER, InjectionRole.ASSISTANT)


@dataclass(frozen=True, slots=True)
class Injection:
    """One extension prompt: a text with a place (position, depth, role).

    `key` is SillyTavern's extension-prompt key, which orders prompts sharing a
    depth and role; `kind` and `source` feed the ledger (e.g. `lorebook`,
    `Eldoria/3`).
    """

    key: str
    text: str
    position: ExtensionPosition = ExtensionPosition.IN_CHAT
    depth: int = 4
    role: InjectionRole = InjectionRole.SYSTEM
    scan: bool = False
    kind: str = "extension"
    source: str = ""


# Where `/inject` keeps its prompts in a chat's metadata.
SCRIPT_INJECTS = "script_injects"


def lorebook_key(depth: int, role: InjectionRole) -> str:
    """The key SillyTavern gives one lorebook @depth group."""
    return f"customDepthWI-{depth}-{int(role)}"


@dataclass(frozen=True)  # no slots: the sorted order is cached on the instance
class InjectionTable:
    """All extension prompts of one turn, by key; later `with_` calls replace a key."""

    entries: Mapping[str, Injection] = field(default_factory=dict)

    def with_(self, injection: Injection) -> InjectionTable:
        """A table with this injection added (or replacing the one with its key)."""
        entries = dict(self.entries)
        entries[injection.key] = injection
        return InjectionTable(entries)

    def without(self, key: str) -> InjectionTable:
        """A table without the injection under this key."""
        return InjectionTable({k: v for k, v in self.entries.items() if k != key})

    def get(self, key: str) -> Injection | None:
        """The injection under this key, if any."""
        return self.entries.get(key)

    def ordered(self) -> list[Injection]:
        """Injections in SillyTavern's order: keys by plain code-unit order."""
        return list(self._ordered)

    @cached_property
    def _ordered(self) -> tuple[Injection, ...]:
        # algo-prompt-assembly.md §5.2: JavaScript's default sort compares UTF-16 code
        # units, so digits < uppercase < lowercase; Python's str order agrees within the BMP.
        keys = list(self.entries)
        if all(ord(c) < 0x10000 for k in keys for c in k):
            keys.sort()
        else:
            keys.sort(key=_utf16_key)
        return tuple(self.entries[k] for k in keys)

    def select(
        self,
        position: ExtensionPosition,
        depth: int | None = None,
        role: InjectionRole | None = None,
    ) -> list[Injection]:
        """The non-empty injections at this position (and depth and role, when given)."""
        return [
            i
            for i in self.ordered()
            if i.position == position
            and i.text
            and (depth is None or i.depth == depth)
            and (role is None or i.role == role)
        ]

    def joined(
        self,
        position: ExtensionPosition,
        depth: int | None = None,
        role: InjectionRole | None = None,
        separator: str = "\n",
        wrap: bool = True,
    ) -> str:
        """The texts at a place, trimmed and joined, before macros (SillyTavern `getExtensionPrompt`)."""
        text = separator.join(i.text.strip() for i in self.select(position, depth, role))
        if wrap and text and not text.startswith(separator):
            text = separator + text
        if wrap and text and not text.endswith(separator):
            text = text + separator
        return text

    def in_chat_depths(self) -> list[int]:
        """Every depth that holds an in-chat injection, ascending."""
        return sorted(
            {i.depth for i in self.entries.values() if i.position is ExtensionPosition.IN_CHAT}
        )

    def scannable_texts(self) -> list[str]:
        """Texts the lorebook scan may read (injections registered with `scan`)."""
        return [i.text for i in self.ordered() if i.scan and i.text]


# ----------------------------------------------------------------- sources


def authors_note_active(context: AssemblyContext) -> bool:
    """Whether the author's note goes in this turn (algo-prompt-assembly.md §5.1)."""
    interval = context.metadata.authors_note.interval
    # §5.1: an interval of exactly 1 always inserts; 0 or less never does.
    if interval == 1:
        return True
    if interval <= 0:
        return False
    # Hidden user messages count too: SillyTavern counts the whole chat, also the part
    # of a long one the caller left out.
    user_messages = context.earlier.user + sum(
        1 for m in context.messages if m.speaker is Speaker.USER
    )
    if user_messages <= 0:
        return False
    if user_messages >= interval:
        return user_messages % interval == 0
    return False


def authors_note_text(context: AssemblyContext) -> str:
    """The author's note with the character note combined as the user chose."""
    metadata = context.metadata
    text = metadata.authors_note.prompt
    if metadata.character_note:
        if metadata.character_note_mode == "before":
            text = metadata.character_note + "\n" + text
        elif metadata.character_note_mode == "after":
            text = text + "\n" + metadata.character_note
        else:
            text = metadata.character_note
    return text


def base_table(context: AssemblyContext, active: bool | None = None) -> InjectionTable:
    """The injections known before the lorebook scan: author's note, persona, character notes.

    Follows SillyTavern's order of registration (algo-prompt-assembly.md §1 steps
    8 and 15): character depth prompts, author's note, persona.
    """
    table = InjectionTable()
    allow_scan = context.allow_wi_scan
    # algo-chat-ops.md §5.3: join modes number every member's note; swap uses the speaker's.
    joining = context.is_group and context.group_generation_mode in (1, 2)
    with_notes = (
        [
            m
            for m in context.joined_members()
            if m.depth_prompt.prompt
            and (m.name not in context.group_muted or m is context.character)
        ]
        if joining
        else []
    )
    for index, character in enumerate(with_notes):
        table = _with_depth_prompt(
            table, f"{DEPTH_PROMPT_KEY}_{index}", character.name, character, allow_scan, own=True
        )
    if not with_notes and context.characters:
        character = context.character
        table = _with_depth_prompt(table, DEPTH_PROMPT_KEY, character.name, character, allow_scan)

    note = context.metadata.authors_note
    if active is None:
        active = authors_note_active(context)
    table = table.with_(
        Injection(
            AUTHORS_NOTE_KEY,
            authors_note_text(context) if active else "",
            note.extension_position,
            note.depth,
            note.injection_role,
            context.allow_wi_scan,
            kind="authors_note",
            source="authors_note",
        )
    )

    table = _with_script_injects(table, context.metadata.extras.get(SCRIPT_INJECTS))

    persona = context.persona
    if persona.description and persona.position is not PersonaPosition.NONE:
        if persona.position in (PersonaPosition.TOP_AN, PersonaPosition.BOTTOM_AN) and active:
            current = table.entries[AUTHORS_NOTE_KEY]
            text = (
                f"{persona.description}\n{current.text}"
                if persona.position is PersonaPosition.TOP_AN
                else f"{current.text}\n{persona.description}"
            )
            table = table.with_(replace(current, text=text))
        if persona.position is PersonaPosition.AT_DEPTH:
            table = table.with_(
                Injection(
                    PERSONA_KEY,
                    persona.description,
                    ExtensionPosition.IN_CHAT,
                    persona.depth,
                    persona.role,
                    scan=True,
                    kind="persona",
                    source="persona",
                )
            )
    return table


def _with_script_injects(table: InjectionTable, injects: object) -> InjectionTable:
    """`/inject` prompts kept in `chat_metadata.script_injects` (formats-extensions.md §3),
    under SillyTavern's keys `script_inject_{id}`; an empty text places nothing."""
    if not isinstance(injects, Mapping):
        return table
    for inject_id, item in injects.items():
        if not isinstance(item, Mapping):
            continue
        text = item.get("value")
        position = item.get("position", 0)
        depth = item.get("depth", DEFAULT_DEPTH)
        if not isinstance(text, str) or not text:
            continue
        if not isinstance(position, int) or position not in (-1, 0, 1, 2):
            position = int(ExtensionPosition.IN_PROMPT)
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            depth = DEFAULT_DEPTH
        table = table.with_(
            Injection(
                f"script_inject_{inject_id}",
                text,
                ExtensionPosition(position),
                depth,
                InjectionRole.parse(item.get("role")),
                scan=item.get("scan") is True,
                kind="script_inject",
                source=f"/inject {inject_id}",
            )
        )
    return table


# `{{char}}` and the legacy `<BOT>`, as SillyTavern's macros read them (any case).
_CHAR_MACRO = re.compile(r"\{\{char\}\}|<BOT>", re.IGNORECASE)


def _with_depth_prompt(
    table: InjectionTable,
    key: str,
    name: str,
    character: CharacterInfo,
    scan: bool,
    *,
    own: bool = False,
) -> InjectionTable:
    """`own`: a joined group member's note, whose `{{char}}` is that member (SillyTavern
    1.12.6 fills each member's note with the member's name as it collects them), not the
    member speaking this turn."""
    prompt = character.depth_prompt
    if not prompt.prompt:
        return table
    text = _CHAR_MACRO.sub(lambda _m: character.name, prompt.prompt) if own else prompt.prompt
    return table.with_(
        Injection(
            key,
            text,
            ExtensionPosition.IN_CHAT,
            prompt.injection_depth,
            prompt.injection_role,
            # script.js: the character note is scannable only with the note's "allow WI scan".
            scan=scan,
            kind="depth_prompt",
            source=name,
        )
    )


def with_lorebook(
    table: InjectionTable,
    depth_groups: Iterable[DepthGroup],
    an_top: Sequence[str],
    an_bottom: Sequence[str],
    authors_note_is_active: bool,
) -> InjectionTable:
    """The table after the lorebook scan: @depth groups added, AN top/bottom merged.

    algo-world-info.md: ANTop/ANBottom entries wrap the author's note only when the
    note is active this turn.
    """
    for key in [k for k in table.entries if k.startswith("customDepthWI")]:
        table = table.without(key)
    for group in depth_groups:
        depth = group.depth if group.depth is not None else DEFAULT_DEPTH
        table = table.with_(
            Injection(
                lorebook_key(depth, group.role),
                group.text,
                ExtensionPosition.IN_CHAT,
                depth,
                group.role,
                scan=False,
                kind="lorebook",
                source=",".join(f"{e.book}/{e.uid}" for e in group.entries),
            )
        )
    note = table.get(AUTHORS_NOTE_KEY)
    if authors_note_is_active and note is not None:
        text = "\n".join(an_top) + "\n" + note.text + "\n" + "\n".join(an_bottom)
        # The original strips one leading and one trailing newline (world-info.js).
        if text.startswith("\n"):
            text = text[1:]
        if text.endswith("\n"):
            text = text[:-1]
        table = table.with_(replace(note, text=text))
    return table


# ------------------------------------------------------------------ merging


@dataclass(frozen=True, slots=True)
class InChatPrompt:
    """A prompt-manager prompt placed in the chat (Chat Completion only)."""

    identifier: str
    role: InjectionRole
    depth: int
    text: str
    # how the ledger names it: a custom slot by the name the person gave it
    source: str = ""


@dataclass(frozen=True, slots=True)
class InjectedBlock:
    """One merged injection message: the role, its text and where it came from."""

    depth: int
    role: InjectionRole
    text: str
    sources: tuple[Injection | InChatPrompt, ...]


T = TypeVar("T")


def depth_blocks(
    table: InjectionTable,
    substitute: Callable[[str], str],
    in_chat_prompts: Sequence[InChatPrompt] = (),
    chat_completion: bool = True,
) -> list[InjectedBlock]:
    """The merged messages per depth, depth ascending and roles system, user, assistant.

    algo-prompt-assembly.md §5.2: each role at a depth yields one message; the
    prompt-manager prompts come first, then the extension prompts in key order.
    """
    depths = set(table.in_chat_depths()) | {p.depth for p in in_chat_prompts}
    blocks: list[InjectedBlock] = []
    for depth in sorted(d for d in depths if 0 <= d <= MAX_INJECTION_DEPTH):
        for role in ROLE_ORDER:
            prompts = [p for p in in_chat_prompts if p.depth == depth and p.role == role and p.text]
            extensions = table.select(ExtensionPosition.IN_CHAT, depth, role)
            extension_text = "\n".join(i.text.strip() for i in extensions)
            if extension_text:
                extension_text = substitute(extension_text)
            if chat_completion:
                role_text = "\n".join(p.text.strip() for p in prompts)
                text = "\n".join(x.strip() for x in (role_text, extension_text) if x)
            else:
                text = extension_text.lstrip()
            if text:
                blocks.append(InjectedBlock(depth, role, text, (*prompts, *extensions)))
    return blocks


def insert_blocks(
    history: Sequence[T],
    blocks: Sequence[InjectedBlock],
    make: Callable[[InjectedBlock], T],
) -> list[T]:
    """The history (oldest first) with each block's messages placed at their depth.

    Depth d puts the block after the d newest real messages; inside a depth the
    chronological order is assistant, user, system (algo-prompt-assembly.md §5.2).
    A depth past the oldest message puts the block first.
    """
    newest_first: list[T] = list(reversed(history))
    inserted = 0
    by_depth: dict[int, list[InjectedBlock]] = {}
    for block in blocks:
        by_depth.setdefault(block.depth, []).append(block)
    for depth in sorted(by_depth):
        items = [make(b) for b in by_depth[depth]]
        at = min(depth + inserted, len(newest_first))
        newest_first[at:at] = items
        inserted += len(items)
    newest_first.reverse()
    return newest_first


def newest_first(
    history: Sequence[T],
    blocks: Sequence[InjectedBlock],
    make: Callable[[InjectedBlock], T],
) -> Iterator[T]:
    """The history with the blocks placed, newest first, built only as far as it is read.

    Gives the same order as `insert_blocks` reversed, without touching the older
    messages a budget never reaches.
    """
    by_depth: dict[int, list[InjectedBlock]] = {}
    for block in blocks:
        by_depth.setdefault(block.depth, []).append(block)
    count = len(history)
    for index in range(count):
        for block in by_depth.get(index, ()):
            yield make(block)
        yield history[count - 1 - index]
    for depth in sorted(d for d in by_depth if d >= count):
        for block in by_depth[depth]:
            yield make(block)


def _utf16_key(key: str) -> tuple[int, ...]:
    """The UTF-16 code units of a key: JavaScript's default sort order."""
    data = key.encode("utf-16-be")
    return tuple(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
