"""Real generations read and return lorebook timers; dry runs neither read nor write them.

algo-world-info.md §4.1 (dry runs skip timed effects), §7 (sticky timed by messages).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.context import AssemblyContext, ChatMetadata
from taverna.engine.assembly.ledger import render_ledger
from taverna.model.lorebook import DEFAULT_WORLD_INFO, Entry, EntryOutcome, Lorebook, Position
from taverna.model.prompt import Prompt

from .helpers import build, chat, context, word_count

LORE = Lorebook(
    name="Lore",
    entries=(Entry(uid=1, key=("dragon",), content="DRAGON LORE", sticky=3),),
)


def _at(*turns: tuple[str, str], timers: Any = None, dry_run: bool = False) -> AssemblyContext:
    extras = {"timedWorldInfo": timers} if timers is not None else {}
    return replace(
        context(messages=chat(*turns)),
        lorebooks={"Lore": LORE},
        world_info=replace(DEFAULT_WORLD_INFO, global_select=("Lore",), depth=1),
        metadata=ChatMetadata(extras=extras),
        dry_run=dry_run,
    )


def _has_lore(prompt: Prompt) -> bool:
    return any("DRAGON LORE" in m.content for m in prompt.messages)


FIRST = (("character", "Welcome."), ("user", "I see a dragon"))
LATER = (*FIRST, ("character", "Where?"), ("user", "Over there"))


def test_a_real_generation_records_and_honours_sticky() -> None:
    first = build(_at(*FIRST))
    assert _has_lore(first)
    timers = first.state["timedWorldInfo"]
    assert timers["sticky"]["Lore.1"]["start"] == 2 and timers["sticky"]["Lore.1"]["end"] == 5
    later = build(_at(*LATER, timers=timers))
    assert _has_lore(later)  # no key in the newest message: sticky keeps it in
    gone = build(_at(*LATER, ("character", "Hm."), ("user", "Bye"), timers=timers))
    assert not _has_lore(gone)
    assert "Lore.1" not in gone.state["timedWorldInfo"]["sticky"]


def test_a_dry_run_ignores_timers_and_returns_no_state() -> None:
    first = build(_at(*FIRST))
    dry_first = build(_at(*FIRST, dry_run=True))
    assert _has_lore(dry_first) and dry_first.state == {}
    dry_later = build(_at(*LATER, timers=first.state["timedWorldInfo"], dry_run=True))
    assert not _has_lore(dry_later) and dry_later.state == {}


def test_variables_flow_through_the_turn_and_come_back() -> None:
    """One set of chat variables for the whole turn (algo-chat-ops.md §7): the card's
    macros set one before the scan, an entry reads it and sets another, both come back."""
    book = Lorebook(
        name="Lore",
        entries=(
            Entry(uid=1, key=("dragon",), content="Mood {{getvar::mood}}{{setvar::seen::yes}}"),
        ),
    )
    ctx = replace(
        _at(*FIRST),
        lorebooks={"Lore": book},
        metadata=ChatMetadata(variables={"kept": "1"}),
    )
    card = replace(ctx.character, description="{{setvar::mood::calm}}Aria is kind.")
    prompt = build(replace(ctx, characters=(card,)))
    assert any("Mood calm" in m.content for m in prompt.messages)
    assert prompt.state["variables"] == {"kept": "1", "mood": "calm", "seen": "yes"}
    assert build(replace(ctx, characters=(card,), dry_run=True)).state == {}


def test_the_ledger_lists_each_activated_entry_where_it_went() -> None:
    """Each activated entry is one ledger line: `book/uid`, its place (with an @depth
    entry's depth), its tokens as the scan counted them, its text."""
    book = Lorebook(
        name="Lore",
        entries=(
            Entry(uid=1, key=("dragon",), content="DRAGON LORE"),
            Entry(uid=2, key=("dragon",), content="deep lore", position=Position.AT_DEPTH, depth=2),
            Entry(uid=3, key=("dragon",), content="NOTE TOP", position=Position.AN_TOP),
        ),
    )
    prompt = build(replace(_at(*FIRST), lorebooks={"Lore": book}))
    lines = {i.source: i for i in prompt.ledger.items if i.kind == "lorebook_entry"}
    assert {s: (i.reason, i.text) for s, i in lines.items()} == {
        "Lore/1": ("before", "DRAGON LORE"),
        "Lore/2": ("at_depth@2", "deep lore"),
        "Lore/3": ("an_top", "NOTE TOP"),
    }
    # as the scan counts it: one full system message, by the turn's counter
    assert lines["Lore/1"].tokens == MessageCost(word_count, "tiktoken").text("DRAGON LORE")
    assert all(i.included for i in lines.values())
    # the trace is the lorebook engine's own records, shown by the ledger's text form
    assert {(t.book, t.uid, t.outcome) for t in prompt.ledger.trace} == {
        ("Lore", uid, EntryOutcome.ACTIVATED) for uid in (1, 2, 3)
    }
    assert "Lore/2                   activated      primary key 'dragon'" in render_ledger(prompt)


def test_books_scanned_with_nothing_matched_are_named_and_the_prompt_is_unchanged() -> None:
    quiet = (("character", "Welcome."), ("user", "Hello there"))
    prompt = build(_at(*quiet))
    assert prompt.ledger.trace == () and prompt.ledger.scanned_books == ("Lore",)
    assert "lorebooks scanned, nothing matched: Lore" in render_ledger(prompt)
    bookless = build(context(messages=chat(*quiet)))
    assert bookless.ledger.scanned_books == ()
    assert bookless.messages == prompt.messages
    assert "nothing matched" not in render_ledger(bookless)
    lit = build(_at(*FIRST))
    assert lit.ledger.scanned_books == ("Lore",) and lit.ledger.trace
    assert "nothing matched" not in render_ledger(lit)
