"""The scan loop: logic, constants, decorators, probability, recursion, min activations,
budget, filters and placement (algo-world-info.md §1, §3.3, §4, §5, §9)."""

from __future__ import annotations

from taverna.engine.lorebook import BookInPlay, BookSource, CharacterIdentity, activate
from taverna.engine.macros import MacroContext, Variables
from taverna.model.injection import InjectionRole
from taverna.model.lorebook import (
    CharacterFilter,
    CharacterStrategy,
    Position,
    SelectiveLogic,
    WorldInfoSettings,
)

from .helpers import book, chat, entry, outcome, run, uids, words

RECURSIVE = WorldInfoSettings(recursive=True)


def selective(uid: int, logic: SelectiveLogic, *secondary: str) -> object:
    return entry(uid, "sword", keysecondary=secondary, selective_logic=logic)


def test_four_selective_logics() -> None:
    """§3.3: AND ANY, NOT ALL, NOT ANY, AND ALL over the secondary keys."""
    text = "a sword of fire"
    cases = {
        SelectiveLogic.AND_ANY: (("fire", "ice"), ("ice", "stone")),
        SelectiveLogic.NOT_ALL: (("fire", "ice"), ("fire", "sword")),
        SelectiveLogic.NOT_ANY: (("ice", "stone"), ("fire", "ice")),
        SelectiveLogic.AND_ALL: (("fire", "sword"), ("fire", "ice")),
    }
    for logic, (fires, blocked) in cases.items():
        assert uids(run([selective(0, logic, *fires)], text)) == [0], logic  # type: ignore[list-item]
        result = run([selective(0, logic, *blocked)], text)  # type: ignore[list-item]
        assert uids(result) == [], logic
        assert outcome(result, 0) == "secondary keys"


def test_secondary_keys_ignored_unless_selective() -> None:
    """§3.3 step 3: `selective` false means the secondary keys are not consulted."""
    plain = entry(0, "sword", keysecondary=("ice",), selective=False)
    assert uids(run([plain], "a sword")) == [0]


def test_any_primary_key_is_enough_and_the_first_found_is_traced() -> None:
    """§3.3 step 2: the entry matches if any primary key matches."""
    result = run([entry(0, "ice", "fire")], "fire and ice")
    record = next(result.trace())
    assert record.outcome.value == "activated" and record.primary_key == "ice"


def test_constant_and_decorators() -> None:
    """§4.2 steps 9-10 and §1.1: @@activate, @@dont_activate, constant; lines are stripped."""
    entries = [
        entry(0, content="always", constant=True),
        entry(1, content="@@activate\nforced in"),
        entry(2, "dragon", content="@@dont_activate\nnever"),
        entry(3, "dragon", content="@@@activate\nfallback ignored"),
        entry(4, "dragon", content="@@unknown\n@@@activate\nfallback used"),
    ]
    result = run(entries, "a dragon")
    assert sorted(uids(result)) == [0, 1, 3, 4]
    contents = {item.uid: item.content for item in result.entries}
    assert contents[1] == "forced in"
    assert contents[3] == "fallback ignored"
    assert outcome(result, 2) == "@@dont_activate"


def test_entry_without_keys_needs_constant() -> None:
    """§4.2 step 13: no primary keys and not constant -> skipped."""
    result = run([entry(0)], "anything")
    assert uids(result) == [] and outcome(result, 0) == "no keys"


def test_disabled_entries_never_activate() -> None:
    result = run([entry(0, "dragon", disable=True, constant=True)], "dragon")
    assert uids(result) == [] and outcome(result, 0) == "disabled"


def test_probability() -> None:
    """§4.2 step 7.1: 100 or useProbability off never rolls; 0 never passes; rolls traced."""
    never = entry(0, "dragon", probability=0)
    always = entry(1, "dragon", probability=0, use_probability=False)
    result = run([never, always], "dragon")
    assert uids(result) == [1]
    record = next(t for t in result.trace() if t.uid == 0)
    assert record.outcome.value == "probability" and record.roll is not None
    half = [entry(i, "dragon", probability=50) for i in range(40)]
    counts = [len(run(half, "dragon", seed=seed).entries) for seed in range(3)]
    assert all(5 < c < 35 for c in counts)
    assert len({tuple(uids(run(half, "dragon", seed=s))) for s in range(3)}) > 1


def test_probability_missing_from_the_file() -> None:
    """formats-world-info.md §2: useProbability without probability never passes (JS
    compares the roll with undefined); without useProbability there is no roll at all."""
    import dataclasses

    base = entry(0, "dragon")
    no_value = dataclasses.replace(base, missing=frozenset({"probability"}))
    assert uids(run([no_value], "dragon")) == []
    neither = dataclasses.replace(
        base, use_probability=False, missing=frozenset({"probability", "useProbability"})
    )
    assert uids(run([neither], "dragon")) == [0]


def test_recursion_chain_and_flags() -> None:
    """§5: recursion adds activated contents to the scan; prevent/exclude/delay flags."""
    chain = [
        entry(0, "amulet", content="forged in the tower"),
        entry(1, "tower", content="guarded by the heron"),
        entry(2, "heron", content="never sleeps"),
    ]
    assert uids(run(chain, "the amulet")) == [0]  # recursion off (code default)
    result = run(chain, "the amulet", settings=RECURSIVE)
    assert uids(result) == [0, 1, 2]
    assert [item.loop for item in result.entries] == [1, 2, 3]

    prevented = [entry(0, "amulet", content="the tower", prevent_recursion=True), chain[1]]
    assert uids(run(prevented, "the amulet", settings=RECURSIVE)) == [0]

    excluded = [chain[0], entry(1, "tower", content="x", exclude_recursion=True)]
    assert uids(run(excluded, "the amulet", settings=RECURSIVE)) == [0]
    assert uids(run(excluded, "the amulet tower", settings=RECURSIVE)) == [0, 1]


def test_delay_until_recursion_levels() -> None:
    """§4.1 step 6, §4.2 step 9: levels unlock in ascending order, even with recursion off."""
    entries = [
        entry(0, "dragon", content="one"),
        entry(1, "dragon", content="two", delay_until_recursion=True),
        entry(2, "dragon", content="three", delay_until_recursion=2),
    ]
    with_recursion = run(entries, "dragon", settings=RECURSIVE)
    assert uids(with_recursion) == [0, 1, 2]
    # level 1 is the preset first level; level 2 unlocks once the scan would stop
    assert [item.loop for item in with_recursion.entries] == [1, 2, 4]
    # Recursion off: the first level was taken at set-up, so the extra pass after the
    # initial scan already runs at level 2 and both delayed entries join in it.
    without = run(entries, "dragon")
    assert uids(without) == [0, 1, 2]
    assert [item.loop for item in without.entries] == [1, 2, 2]
    assert uids(run([entries[1]], "nothing here")) == []
    # With a single level and recursion off no extra pass is left: never activates.
    assert outcome(run([entries[1], entries[0]], "dragon"), 1) == "delay until recursion"


def test_max_recursion_steps_counts_every_pass() -> None:
    """§4.2 step 1: max steps 1 means the initial scan only."""
    chain = [entry(0, "amulet", content="the tower"), entry(1, "tower")]
    limited = WorldInfoSettings(recursive=True, max_recursion_steps=1)
    assert uids(run(chain, "the amulet", settings=limited)) == [0]
    two = WorldInfoSettings(recursive=True, max_recursion_steps=2)
    assert uids(run(chain, "the amulet", settings=two)) == [0, 1]


def test_min_activations_widen_the_scan_depth() -> None:
    """§4.2 step 9: too few activations -> scan one message deeper, up to depth_max + 1."""
    messages = chat("old dragon", "b", "c", "d", "e")
    assert uids(run([entry(0, "dragon")], messages)) == []
    wide = WorldInfoSettings(min_activations=1)
    assert uids(run([entry(0, "dragon")], messages, settings=wide)) == [0]
    capped = WorldInfoSettings(min_activations=1, min_activations_depth_max=2)
    assert uids(run([entry(0, "dragon")], messages, settings=capped)) == []
    off_by_one = WorldInfoSettings(min_activations=1, min_activations_depth_max=4)
    # checked before the increment: the last pass scans depth_max + 1 = 5 messages
    assert uids(run([entry(0, "dragon")], messages, settings=off_by_one)) == [0]


def test_budget_first_overflow_stops() -> None:
    """§4.2 step 7.4: the first entry that would overflow stops the scan, smaller ones too."""
    entries = [
        entry(0, "a", content="one two three", order=300),
        entry(1, "a", content="four five six seven eight nine ten eleven", order=200),
        entry(2, "a", content="small", order=100),
    ]
    # budget = round(25% of 40) = 10 words; 3 + 8 words (with their newlines) reach it
    result = run(entries, "a", max_context=40)
    assert result.budget == 10
    assert uids(result) == [0]
    assert outcome(result, 1) == "budget"
    assert outcome(result, 2) == "not reached"
    assert result.overflowed


def test_budget_rounding_and_cap() -> None:
    """§4.1 step 2: JS Math.round, at least 1, then the cap."""
    assert WorldInfoSettings(budget_percent=25).budget_for(3795) == 949
    assert WorldInfoSettings(budget_percent=25).budget_for(2) == 1  # 0.5 rounds up
    assert WorldInfoSettings(budget_percent=1).budget_for(10) == 1  # 0 -> 1
    assert WorldInfoSettings(budget_percent=25, budget_cap=100).budget_for(4000) == 100


def test_budget_priority_is_scan_order_not_constant() -> None:
    """§4.3: constants have no priority; higher order is checked first."""
    entries = [
        entry(0, content="c " * 8, constant=True, order=10),
        entry(1, "a", content="k " * 8, order=500),
    ]
    result = run(entries, "a", max_context=40)
    assert uids(result) == [1]


def test_character_filter_names_and_tags() -> None:
    """§4.2 steps 3.3-3.4: names are file stems; tags only when the character has a tag list."""
    only_sera = CharacterFilter(names=("Seraphina",))
    not_sera = CharacterFilter(names=("Seraphina",), is_exclude=True)
    tagged = CharacterFilter(tags=("t1",))
    entries = [
        entry(0, "x", character_filter=only_sera),
        entry(1, "x", character_filter=not_sera),
        entry(2, "x", character_filter=tagged),
    ]
    sera = CharacterIdentity(file_name="Seraphina", tags=("t2",))
    assert uids(run(entries, "x", character=sera)) == [0]
    other = CharacterIdentity(file_name="Kael", tags=None)
    assert uids(run(entries, "x", character=other)) == [1, 2]


def test_placement_worked_example_and_positions() -> None:
    """§9: ascending order, ties in reverse activation order (B, C, A); AN, EM, @depth."""
    entries = [
        entry(0, "x", content="A", order=100),
        entry(1, "x", content="B", order=50),
        entry(2, "x", content="C", order=100),
        entry(3, "x", content="After", position=Position.AFTER),
        entry(4, "x", content="Top", position=Position.AN_TOP),
        entry(5, "x", content="Bottom", position=Position.AN_BOTTOM),
        entry(6, "x", content="EM1", position=Position.EM_TOP, order=10),
        entry(7, "x", content="EM2", position=Position.EM_TOP, order=20),
        entry(8, "x", content="EM3", position=Position.EM_BOTTOM, order=30),
        entry(9, "x", content="D1", position=Position.AT_DEPTH, depth=2, order=200),
        entry(10, "x", content="D2", position=Position.AT_DEPTH, depth=2, order=100),
        entry(11, "x", content="D3", position=Position.AT_DEPTH, depth=2, role=InjectionRole.USER),
        entry(12, "x", content="", position=Position.BEFORE),
    ]
    placement = run(entries, "x").placed()
    assert placement.before == ("B", "C", "A")
    assert placement.after == ("After",)
    assert placement.an_top == ("Top",) and placement.an_bottom == ("Bottom",)
    # SillyTavern's EMEntries list: ascending order (the assembly then unshifts the
    # EMTop blocks one at a time, §9.1)
    assert placement.examples == (
        (Position.EM_TOP, "EM1"),
        (Position.EM_TOP, "EM2"),
        (Position.EM_BOTTOM, "EM3"),
    )
    groups = [(g.depth, g.role, g.text) for g in placement.depth]
    assert groups == [(2, InjectionRole.SYSTEM, "D2\nD1"), (2, InjectionRole.USER, "D3")]


def test_missing_position_activates_but_goes_nowhere() -> None:
    """formats-world-info.md §2: an entry without `position` is inserted nowhere."""
    lost = entry(0, "x", content="lost").changed()
    import dataclasses

    lost = dataclasses.replace(lost, position=None, missing=frozenset({"position"}))
    result = run([lost], "x")
    assert uids(result) == [0]
    assert result.placed().before == ()


def test_transform_drops_empty_results() -> None:
    """§9: entries whose processed content is empty are dropped (still activated)."""
    result = run([entry(0, "x", content="keep"), entry(1, "x", content="drop")], "x")
    placement = result.placed(lambda item: "" if item.content == "drop" else item.content)
    assert placement.before == ("keep",)


def test_book_order_chat_first_then_strategy() -> None:
    """§1: chat lore first; then character/global per strategy; duplicates load once."""
    glob = book(entry(0, "x", content="G", order=50), name="Global")
    char = book(entry(0, "x", content="C", order=10), name="Char")
    chat_book = book(entry(0, "x", content="H", order=1), name="ChatBook")
    books = [
        BookInPlay(glob, BookSource.GLOBAL),
        BookInPlay(char, BookSource.CHARACTER),
        BookInPlay(chat_book, BookSource.CHAT),
        BookInPlay(glob, BookSource.CHARACTER),
    ]

    def scan(strategy: CharacterStrategy) -> list[str]:
        result = activate(
            books,
            chat("x"),
            max_context=10_000,
            count_tokens=words,
            settings=WorldInfoSettings(character_strategy=strategy),
        )
        return [item.content for item in result.entries]

    assert scan(CharacterStrategy.CHARACTER_FIRST) == ["H", "C", "G"]
    assert scan(CharacterStrategy.GLOBAL_FIRST) == ["H", "G", "C"]
    assert scan(CharacterStrategy.EVENLY) == ["H", "G", "C"]  # by order: 50 before 10
    once = activate(books, chat("x"), max_context=10_000, count_tokens=words)
    assert [(p.book.name, why) for p, why in once.skipped_books] == [
        ("Global", "already in play as global lore")
    ]


def test_macros_in_keys_and_contents_thread_variables() -> None:
    """§10: keys are substituted on every check; contents once, when they pass the roll."""
    macros = MacroContext(user="Ann", char="Sera", variables=Variables(local={"n": "1"}))
    entries = [
        entry(0, "{{char}}", content="{{user}} meets {{char}}{{setvar::met::yes}}", order=20),
        entry(1, "meets", content="met={{getvar::met}} n={{getvar::n}}", order=10),
    ]
    result = run(entries, "hello Sera", macros=macros, settings=RECURSIVE)
    contents = {item.uid: item.content for item in result.entries}
    assert contents[0] == "Ann meets Sera"
    assert contents[1] == "met=yes n=1"
    assert result.variables.local == {"n": "1", "met": "yes"}
    assert macros.variables.local == {"n": "1"}  # the input is untouched


def test_trace_covers_every_entry() -> None:
    entries = [entry(0, "dragon"), entry(1, "unicorn"), entry(2, disable=True)]
    result = run(entries, "dragon")
    assert [(t.uid, t.outcome.value) for t in result.trace()] == [
        (0, "activated"),
        (1, "no match"),
        (2, "disabled"),
    ]
    # the per-turn summary: only the entries the scan looked at
    assert [(t.uid, t.outcome.value, t.comment) for t in result.decisions()] == [
        (0, "activated", "")
    ]


def test_prescanned_messages_are_not_prefixed() -> None:
    """A message given with `name=None` is already `Name: text`."""
    from taverna.engine.lorebook import ScanMessage

    messages = [ScanMessage(text="Sera: hello", name=None)]
    assert uids(run([entry(0, "sera")], messages)) == [0]
    assert uids(run([entry(0, "none")], messages)) == []


def test_ties_follow_uid_order_not_file_order() -> None:
    """§1: books load through Object.keys, so equal `order` ties go by ascending uid."""
    entries = [entry(10, "x", content="ten"), entry(2, "x", content="two")]
    result = run(entries, "x")
    assert uids(result) == [2, 10]
    assert result.placed().before == ("ten", "two")  # placement: ties in reverse


def test_compiled_index_is_reused_per_object_and_revision() -> None:
    """Keys compile once per book version, not once per turn."""
    from taverna.engine.lorebook.index import compile_book
    from taverna.model.lorebook import Boundaries, Lorebook

    options = {"case_sensitive": False, "whole_words": True, "boundaries": Boundaries.UNICODE}
    first = Lorebook(name="R", entries=(entry(0, "moon"),), revision="r1")
    assert compile_book(first, **options) is compile_book(first, **options)  # type: ignore[arg-type]
    same = Lorebook(name="R", entries=(entry(0, "moon"),), revision="r1")
    assert compile_book(same, **options) is compile_book(first, **options)  # type: ignore[arg-type]
    edited = first.with_entry(entry(0, "sun"))
    assert edited.revision == "" and edited.entries[0].key == ("sun",)
    assert compile_book(edited, **options) is not compile_book(first, **options)  # type: ignore[arg-type]
    assert uids(run(edited, "the sun")) == [0]
    assert first.without_entry(0).entries == ()
    assert first.with_entry(entry(5, "star")).entries[-1].uid == 5
