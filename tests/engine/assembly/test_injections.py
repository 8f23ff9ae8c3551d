"""The in-chat injection table: sources, key order, merging at a depth (algo-prompt-assembly.md §5)."""

from __future__ import annotations

from dataclasses import replace

from taverna.engine.assembly.context import ChatMetadata
from taverna.engine.assembly.injections import (
    AUTHORS_NOTE_KEY,
    Injection,
    InjectionTable,
    authors_note_active,
    base_table,
    depth_blocks,
    insert_blocks,
    with_lorebook,
)
from taverna.engine.lorebook import DepthGroup
from taverna.model.character import DepthPrompt
from taverna.model.chat import AuthorsNote
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.persona import PersonaPosition

from .helpers import SERAPHINA, chat, context


def _merge(table: InjectionTable, history: list[str]) -> list[str]:
    blocks = depth_blocks(table, lambda t: t)
    return insert_blocks(history, blocks, lambda b: f"{b.role.chat_role}:{b.text}")


def test_worked_example_section_5_2() -> None:
    """§5.2 worked example: AN and char note share depth 0 system, key order decides."""
    table = InjectionTable()
    table = table.with_(Injection("DEPTH_PROMPT", "N", depth=0))
    table = table.with_(Injection(AUTHORS_NOTE_KEY, "A", depth=0))
    table = table.with_(Injection("PERSONA_DESCRIPTION", "P", depth=0, role=InjectionRole.USER))
    table = table.with_(Injection("customDepthWI-1-0", "W", depth=1))
    assert _merge(table, ["m1", "m2", "m3"]) == [
        "m1",
        "m2",
        "system:W",
        "m3",
        "user:P",
        "system:A\nN",
    ]


def test_one_depth_orders_assistant_user_system_section_5_2() -> None:
    """§5.2 step 2: inside one depth the chronological order is assistant, user, system."""
    table = InjectionTable()
    for role, text in (
        (InjectionRole.SYSTEM, "s"),
        (InjectionRole.USER, "u"),
        (InjectionRole.ASSISTANT, "a"),
    ):
        table = table.with_(Injection(f"k{role}", text, depth=1, role=role))
    assert _merge(table, ["m1", "m2"]) == ["m1", "assistant:a", "user:u", "system:s", "m2"]


def test_depth_past_the_oldest_message_goes_first_section_5_2() -> None:
    """§5.2 step 3: a depth larger than the chat puts the block before the oldest message."""
    table = InjectionTable().with_(Injection("x", "deep", depth=50))
    assert _merge(table, ["m1", "m2"]) == ["system:deep", "m1", "m2"]


def test_depth_counts_only_real_messages_section_5_2() -> None:
    """§5.2 step 2: earlier injections do not count toward a later depth."""
    table = InjectionTable()
    table = table.with_(Injection("a", "zero", depth=0))
    table = table.with_(Injection("b", "two", depth=2))
    assert _merge(table, ["m1", "m2", "m3"]) == ["m1", "system:two", "m2", "m3", "system:zero"]


def test_keys_sort_by_code_units_section_5_2() -> None:
    """§5.2: digits < uppercase < lowercase, as JavaScript's default sort."""
    table = InjectionTable()
    for key in ("customDepthWI-2-0", "DEPTH_PROMPT", "2_floating_prompt", "PERSONA_DESCRIPTION"):
        table = table.with_(Injection(key, key, depth=2))
    assert [i.key for i in table.ordered()] == [
        "2_floating_prompt",
        "DEPTH_PROMPT",
        "PERSONA_DESCRIPTION",
        "customDepthWI-2-0",
    ]


def _note(interval: int, users: int) -> bool:
    turns = []
    for _ in range(users):
        turns += [("user", "u"), ("character", "c")]
    ctx = context(
        messages=chat(*turns),
        metadata=ChatMetadata(authors_note=AuthorsNote(prompt="AN", interval=interval)),
    )
    return authors_note_active(ctx)


def test_authors_note_interval_section_5_1() -> None:
    """§5.1: active every `interval` user messages; interval 1 always; 0 never."""
    assert _note(1, 0) is True
    assert _note(0, 3) is False
    assert _note(3, 2) is False
    assert _note(3, 3) is True
    assert _note(3, 4) is False
    assert _note(3, 6) is True


def test_persona_top_and_bottom_of_the_note_section_2_1() -> None:
    """§2.1: TOP_AN / BOTTOM_AN wrap the author's note, only while it is active."""
    meta = ChatMetadata(authors_note=AuthorsNote(prompt="AN", depth=2))
    top = context(metadata=meta, persona={"description": "PD", "position": PersonaPosition.TOP_AN})
    bottom = context(
        metadata=meta, persona={"description": "PD", "position": PersonaPosition.BOTTOM_AN}
    )
    assert base_table(top).entries[AUTHORS_NOTE_KEY].text == "PD\nAN"
    assert base_table(bottom).entries[AUTHORS_NOTE_KEY].text == "AN\nPD"
    inactive = replace(meta, authors_note=replace(meta.authors_note, interval=0))
    off = context(
        metadata=inactive, persona={"description": "PD", "position": PersonaPosition.TOP_AN}
    )
    assert base_table(off).entries[AUTHORS_NOTE_KEY].text == ""


def test_persona_at_depth_and_character_note_section_5_2() -> None:
    """§5.2 table: persona at depth and the card's depth prompt with their own depth and role."""
    character = replace(
        SERAPHINA, depth_prompt=DepthPrompt(prompt="note", depth=3, role="assistant")
    )
    ctx = context(
        character=character,
        persona={
            "description": "PD",
            "position": PersonaPosition.AT_DEPTH,
            "depth": 1,
            "role": InjectionRole.USER,
        },
    )
    table = base_table(ctx)
    assert table.entries["PERSONA_DESCRIPTION"].depth == 1
    assert table.entries["PERSONA_DESCRIPTION"].role is InjectionRole.USER
    assert table.entries["DEPTH_PROMPT"] == Injection(
        "DEPTH_PROMPT",
        "note",
        ExtensionPosition.IN_CHAT,
        3,
        InjectionRole.ASSISTANT,
        False,  # scannable only with the note's "allow WI scan"
        "depth_prompt",
        "Seraphina",
    )


def test_lorebook_wraps_the_active_note_and_adds_depth_groups() -> None:
    """algo-world-info.md: AN top/bottom entries wrap the note; @depth groups get their keys."""
    table = InjectionTable().with_(Injection(AUTHORS_NOTE_KEY, "AN", depth=4))
    group = DepthGroup(2, InjectionRole.USER, (), ("e1", "e2"))
    table = with_lorebook(table, [group], ["T"], [], True)
    assert table.entries[AUTHORS_NOTE_KEY].text == "T\nAN"
    assert table.entries["customDepthWI-2-1"].text == "e1\ne2"
    assert with_lorebook(table, [], ["T"], ["B"], False).entries[AUTHORS_NOTE_KEY].text == "T\nAN"
