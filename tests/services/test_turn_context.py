"""The turn's context from the library and the path's end: the prompt of a long chat read
from its end equals the prompt of the whole chat, and parsed documents follow edits."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from taverna.engine.assembly.context import GenerationType
from taverna.errors import FormatError
from taverna.model.chat import CharacterRef, ChatState, NodeRole
from taverna.model.lorebook import Entry, Lorebook, Position
from taverna.model.prompt import Prompt
from taverna.providers.request import Api
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.library.active_settings import SYSPROMPT_ENABLED, set_active
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.turns import GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore, open_store

NOW = datetime(2026, 5, 1, tzinfo=UTC)
WORDS = [
    "lantern",
    "harbour",
    "tide",
    "rope",
    "river",
    "quiet",
    "road",
    "forest",
    "said",
    "and",
    "the",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


def _library(store: SqlStore, *, max_context: int, interval: int = 1) -> None:
    lib = LibraryService(store)
    entries = [
        Entry(uid=0, key=("lantern",), content="Lanterns burn whale oil.", sticky=3, cooldown=2),
        Entry(uid=1, key=("harbour",), content="The harbour freezes.", scan_depth=40),
        Entry(
            uid=2,
            key=("tide",),
            content="Tides are twice a day.",
            position=Position.AT_DEPTH,
            depth=30,
        ),
        Entry(uid=3, key=("river",), content="The river runs south.", delay=50),
    ]
    lib.put_lorebook(Lorebook(name="Lore", entries=tuple(entries)))
    preset = lib.put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        "Small",
        {"openai_max_context": max_context, "openai_max_tokens": 100},
    )
    set_active(store, "chat_completion_preset", preset.id)
    del interval


def _chat(store: SqlStore, count: int, *, hidden_every: int = 0) -> str:
    chats = ChatService(store)
    rng = random.Random(count)
    chat = chats.create_chat(
        "long",
        greetings=["Hello {{user}}."],
        metadata={"world_info": "Lore", "note_prompt": "Keep it short.", "note_interval": 3},
        base_state=ChatState(),
    ).chat
    for i in range(count):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
        chat = chats.append(chat.id, role, text, revision=chat.revision).chat
    if hidden_every:
        path = chats.active_path(chat.id).nodes
        hide = [n.id for i, n in enumerate(path) if i % hidden_every == 1]
        chats.set_hidden(chat.id, hide, True, revision=chat.revision)
    return chat.id


def _service(store: SqlStore, tmp_path: Path, turns: TurnContexts) -> GenerationService:
    return GenerationService(
        store, ConnectionService(store, tmp_path), turns, paths=turns.paths, clock=lambda: NOW
    )


def _build(
    store: SqlStore, tmp_path: Path, chat_id: str, kind: GenerationType, *, whole: bool, dry: bool
) -> tuple[Prompt, TurnContexts]:
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    if whole:
        turns._windows[chat_id] = 10**9  # read the whole path at once
    service = _service(store, tmp_path, turns)
    chat = store.get_chat(chat_id)
    turn = service.turn(chat, chat.active_leaf_id, kind, Api.OPENAI, dry_run=dry)
    return turns.build(turn).prompt, turns


def _same(a: Prompt, b: Prompt) -> None:
    assert [(m.role, m.content) for m in a.messages] == [(m.role, m.content) for m in b.messages]
    assert a.ledger.total_tokens == b.ledger.total_tokens
    assert a.state == b.state
    assert [(i.kind, i.source, i.included) for i in a.ledger.items] == [
        (i.kind, i.source, i.included) for i in b.ledger.items
    ]


@pytest.mark.parametrize(
    "kind", [GenerationType.NORMAL, GenerationType.SWIPE, GenerationType.CONTINUE]
)
@pytest.mark.parametrize("hidden_every", [0, 7])
def test_a_long_chat_read_from_its_end_gives_the_whole_chats_prompt(
    store: SqlStore, tmp_path: Path, kind: GenerationType, hidden_every: int
) -> None:
    _library(store, max_context=2048)
    chat_id = _chat(store, 600, hidden_every=hidden_every)
    windowed, turns = _build(store, tmp_path, chat_id, kind, whole=False, dry=False)
    whole, _ = _build(store, tmp_path, chat_id, kind, whole=True, dry=False)
    _same(windowed, whole)
    assert windowed.ledger.history_stopped
    # It read a few hundred messages at most, not the chat.
    assert turns._windows[chat_id] < 400


def test_a_chat_shorter_than_the_budget_is_read_whole(store: SqlStore, tmp_path: Path) -> None:
    _library(store, max_context=200_000)
    chat_id = _chat(store, 300)
    windowed, turns = _build(store, tmp_path, chat_id, GenerationType.NORMAL, whole=False, dry=True)
    whole, _ = _build(store, tmp_path, chat_id, GenerationType.NORMAL, whole=True, dry=True)
    _same(windowed, whole)
    assert not windowed.ledger.history_stopped
    assert turns.assemblies >= 2  # it widened until the whole chat was in


def test_documents_are_parsed_once_and_again_after_an_edit(store: SqlStore, tmp_path: Path) -> None:
    _library(store, max_context=2048)
    chat_id = _chat(store, 40)
    turns = TurnContexts(store, clock=lambda: NOW)
    service = _service(store, tmp_path, turns)

    def build() -> Prompt:
        chat = store.get_chat(chat_id)
        turn = service.turn(
            chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI, dry_run=True
        )
        return turns.build(turn).prompt

    first = build()
    parsed = turns.documents.parses
    build()
    assert turns.documents.parses == parsed  # nothing parsed again
    # An edit of the book, by any process, is seen by the next turn.
    lib = LibraryService(store)
    found = lib.find(LibraryKind.LOREBOOK, "Lore")
    assert found is not None
    book = lib.lorebook(found.id)
    edited = replace(
        book, entries=tuple(e.changed(content="EDITED " + e.content) for e in book.entries)
    )
    lib.put_lorebook(edited)
    after = build()
    assert turns.documents.parses == parsed + 1
    assert "EDITED" in "".join(m.content for m in after.messages)
    assert "EDITED" not in "".join(m.content for m in first.messages)


def test_only_the_books_that_apply_are_loaded(store: SqlStore, tmp_path: Path) -> None:
    _library(store, max_context=2048)
    LibraryService(store).put_lorebook(
        Lorebook(name="Unbound", entries=(Entry(uid=0, key=("the",), content="UNBOUND"),))
    )
    chat_id = _chat(store, 20)
    prompt, turns = _build(store, tmp_path, chat_id, GenerationType.NORMAL, whole=False, dry=True)
    assert "UNBOUND" not in "".join(m.content for m in prompt.messages)
    chat = store.get_chat(chat_id)
    assert set(turns.library(chat).lorebooks) == {"Lore"}
    # The global selection (SillyTavern's world_info_settings) brings a book in.
    set_active(store, "world_info_settings", {"world_info": {"globalSelect": ["Unbound"]}})
    assert set(turns.library(chat).lorebooks) == {"Lore", "Unbound"}


def test_a_cold_process_reads_message_token_counts_from_the_store(
    store: SqlStore, tmp_path: Path
) -> None:
    _library(store, max_context=8192)
    chat_id = _chat(store, 300)

    def process() -> tuple[Prompt, int]:
        """A prompt built by a new process: nothing counted in memory."""
        turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
        service = _service(store, tmp_path, turns)
        chat = store.get_chat(chat_id)
        turn = service.turn(
            chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI, dry_run=True
        )
        return turns.build(turn).prompt, service.counts.misses

    first, counted_cold = process()
    again, counted_after = process()
    _same(first, again)
    assert counted_cold > 100
    assert counted_after < counted_cold / 4


def test_work_kept_between_turns_changes_no_prompt(store: SqlStore, tmp_path: Path) -> None:
    """The kept path end, parsed documents, engine messages and prompt parts give, turn
    after turn, the prompt a fresh builder gives."""
    _library(store, max_context=2048)
    chat_id = _chat(store, 200, hidden_every=9)
    chats = ChatService(store)
    kept = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = _service(store, tmp_path, kept)
    for step in range(6):
        chat = store.get_chat(chat_id)
        if step % 2:
            node = chats.active_path(chat_id).nodes[-3]
            chats.edit(chat_id, node.id, f"edited lantern {step}", revision=chat.revision)
        else:
            chats.append(chat_id, NodeRole.USER, f"the tide turns {step}", revision=chat.revision)
        chat = store.get_chat(chat_id)
        turn = service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI)
        warm = kept.build(turn).prompt
        fresh, _ = _build(store, tmp_path, chat_id, GenerationType.NORMAL, whole=True, dry=False)
        _same(warm, fresh)


def test_active_settings_bring_global_variables_and_allowed_character_scripts(
    store: SqlStore, tmp_path: Path
) -> None:
    """The `active` settings document holds SillyTavern's `extension_settings`: the global
    variables `{{getglobalvar}}` reads, and the card files allowed their own regex scripts
    (formats-extensions.md §1.1), which then run on the chat and the lorebook text."""
    lib = LibraryService(store)
    lib.put_lorebook(
        Lorebook(name="Lore", entries=(Entry(uid=0, key=("here",), content="Whale oil."),))
    )
    scripts = [
        {"scriptName": "chat", "findRegex": "lantern", "replaceString": "LAMP",
         "placement": [1, 2], "promptOnly": True},
        {"scriptName": "lore", "findRegex": "Whale", "replaceString": "SEAL", "placement": [5]},
    ]  # fmt: skip
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {"name": "Aria", "description": "D", "extensions": {"regex_scripts": scripts}},
    }
    aria = lib.put(LibraryKind.CHARACTER, "Aria", card)
    preset = lib.put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        "Main",
        {"prompts": [{"identifier": "main", "content": "G={{getglobalvar::g}}"}]},
    )
    set_active(store, "chat_completion_preset", preset.id)
    chats = ChatService(store)
    chat = chats.create_chat(
        "c",
        characters=[CharacterRef("Aria", aria.id)],
        metadata={"world_info": "Lore"},
        base_state=ChatState(),
    ).chat
    chat = chats.append(chat.id, NodeRole.USER, "A lantern here.", revision=chat.revision).chat

    def texts() -> str:
        prompt, _ = _build(store, tmp_path, chat.id, GenerationType.NORMAL, whole=True, dry=True)
        return "\n".join(m.content for m in prompt.messages)

    before = texts()
    assert "G=\n" in before + "\n" and "A lantern here." in before and "Whale oil." in before
    set_active(
        store,
        "extension_settings",
        {"variables": {"global": {"g": "7"}}, "character_allowed_regex": ["Aria.png"]},
    )
    after = texts()
    assert "G=7" in after
    assert "A LAMP here." in after and "SEAL oil." in after
    set_active(store, "extension_settings", {"variables": {"global": []}})
    with pytest.raises(FormatError) as caught:
        texts()
    assert caught.value.field == "extension_settings.variables.global"


def test_the_context_carries_the_model_of_the_turns_api(store: SqlStore, tmp_path: Path) -> None:
    # a preset saved with OpenAI as its source keeps Claude's model in `claude_model`
    lib = LibraryService(store)
    preset = lib.put(
        LibraryKind.CHAT_COMPLETION_PRESET,
        "Both",
        {"chat_completion_source": "openai", "claude_model": "claude-3-haiku-20240307"},
    )
    set_active(store, "chat_completion_preset", preset.id)
    chat_id = _chat(store, 4)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = _service(store, tmp_path, turns)
    chat = store.get_chat(chat_id)
    for api, source, model in (
        (Api.ANTHROPIC, "claude", "claude-3-haiku-20240307"),
        (Api.OPENAI, "openai", "gpt-4-turbo"),
    ):
        turn = service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, api, dry_run=True)
        context = turns.context(turn, turns.library(chat), turn.tail(10), NOW)
        assert (context.chat_completion.source, context.chat_completion.model) == (source, model)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # getSortedEntries: the chat's book first, then global and character books as the
        # strategy says; entries of one order keep that order, and the "before" text is
        # built by putting each next entry in front (world-info.js unshift).
        (0, ["Extra", "Primary", "Global", "Chat"]),  # evenly: global, then character
        (1, ["Global", "Extra", "Primary", "Chat"]),  # character first
        (2, ["Extra", "Primary", "Global", "Chat"]),  # global first
    ],
)
def test_every_lorebook_source_at_once_in_each_strategy(
    store: SqlStore, tmp_path: Path, strategy: int, expected: list[str]
) -> None:
    """The chat's book, the character's linked book and its extra book
    (`world_info.charLore`) and a global book, all in play in one turn."""
    lib = LibraryService(store)
    for name in ("Chat", "Primary", "Extra", "Global"):
        entry = Entry(uid=0, key=(), content=f"{name} lore.", constant=True, order=100)
        lib.put_lorebook(Lorebook(name=name, entries=(entry,)))
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {"name": "Aria", "description": "D", "extensions": {"world": "Primary"}},
    }
    aria = lib.put(LibraryKind.CHARACTER, "Aria", card)
    set_active(
        store,
        "world_info_settings",
        {
            "world_info": {
                "globalSelect": ["Global"],
                "charLore": [{"name": "Aria", "extraBooks": ["Extra"]}],
            },
            "world_info_character_strategy": strategy,
        },
    )
    chats = ChatService(store)
    chat = chats.create_chat(
        "c",
        characters=[CharacterRef("Aria", aria.id)],
        metadata={"world_info": "Chat"},
        base_state=ChatState(),
    ).chat
    chat = chats.append(chat.id, NodeRole.USER, "Hello.", revision=chat.revision).chat
    prompt, _ = _build(store, tmp_path, chat.id, GenerationType.NORMAL, whole=True, dry=True)
    text = "\n".join(m.content for m in prompt.messages)
    assert f"{expected[0]} lore." in text
    assert sorted(expected, key=lambda name: text.index(f"{name} lore.")) == expected


def test_many_chats_keep_their_costs_and_edits_do_not_pile_up(
    store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server with many people keeps every active chat's token costs between turns (not
    only the last 16 chats'); a chat edited again and again keeps a bounded memo (each
    edit makes a new message object, which the memo is keyed by)."""
    from taverna.services.turns import context as turn_context

    monkeypatch.setattr(turn_context, "COST_MEMO_FLOOR", 50)
    monkeypatch.setattr(turn_context, "COST_MEMO_PER_MESSAGE", 1)
    _library(store, max_context=2000)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = _service(store, tmp_path, turns)
    ids = [_chat(store, 6) for _ in range(24)]
    for chat_id in ids:
        chat = store.get_chat(chat_id)
        turns.build(service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI))
    assert len(turns._costs) == 24
    most = max(_memo_sizes_while_edited(store, turns, service, ids[0], 300))
    # the window's limit (its messages, at least the first window's 96) and one turn's own
    assert 0 < most <= turn_context.FIRST_WINDOW + 16


def _memo_sizes_while_edited(
    store: SqlStore, turns: TurnContexts, service: GenerationService, chat_id: str, times: int
) -> list[int]:
    """Edit the chat's last message and build its next prompt, `times` times; the size
    of the chat's memo after each build."""
    chats = ChatService(store)
    sizes = []
    for i in range(times):
        chat = store.get_chat(chat_id)
        assert chat.active_leaf_id is not None
        chats.edit(chat_id, chat.active_leaf_id, f"edited {i} lantern", revision=chat.revision)
        chat = store.get_chat(chat_id)
        turns.build(service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI))
        sizes.append(len(turns._costs[chat_id][1].memo))
    return sizes


def test_a_chat_edited_again_and_again_keeps_about_two_turns_of_work(
    store: SqlStore, tmp_path: Path
) -> None:
    """The memo lets go of what the last turn did not use: each edit's old message
    object, and its parts, go at the next turn, not when the chat's memo fills up."""
    _library(store, max_context=2000)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = _service(store, tmp_path, turns)
    sizes = _memo_sizes_while_edited(store, turns, service, _chat(store, 6), 120)
    # a handful of entries per message of the 6-message window, for two turns at most
    assert max(sizes) <= 60
    assert sizes[-1] <= max(sizes[10:20])  # flat: no growth turn after turn


def test_a_chat_keeps_one_entry_of_work_per_message_of_its_window(
    store: SqlStore, tmp_path: Path
) -> None:
    """Between turns a chat keeps, per message its prompt holds, one prompt part (scan
    views are made again, not kept); an edited message's part takes its old one's place
    at once. The messages as the engine reads them share one empty extras mapping."""
    _library(store, max_context=100_000)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = _service(store, tmp_path, turns)
    chat_id = _chat(store, 40)
    for edit in (False, False, True):
        chat = store.get_chat(chat_id)
        assert chat.active_leaf_id is not None
        if edit:
            ChatService(store).edit(chat_id, chat.active_leaf_id, "lantern", revision=chat.revision)
            chat = store.get_chat(chat_id)
        kind = GenerationType.NORMAL
        prompt = turns.build(service.turn(chat, chat.active_leaf_id, kind, Api.OPENAI)).prompt
        history = [i for i in prompt.ledger.items if i.kind == "history" and i.included]
        assert len(history) == 41  # the greeting and the 40 messages
        # one part a message, and the few name-only macro texts of the prompt's other parts
        assert len(turns._costs[chat_id][1].memo) <= len(history) + 4
    assert len({id(m.extras) for m in turns._messages.values()}) == 1


def test_a_message_sent_under_another_name_and_a_bias_reach_the_prompt(
    store: SqlStore, tmp_path: Path
) -> None:
    """An imported SillyTavern message keeps `force_avatar` (a `/sendas`) and `extra.bias`
    in its extras: the turn's prompt prefixes the forced name as the default names
    behaviour does, and the person's last message's bias goes in."""
    chats = ChatService(store)
    chat = chats.create_chat("c", greetings=["Hello."], base_state=ChatState()).chat
    chat = chats.append(chat.id, NodeRole.USER, "Who is there?", revision=chat.revision).chat
    chat = chats.append(
        chat.id,
        NodeRole.ASSISTANT,
        "Only me.",
        speaker="Bob",
        extras={"force_avatar": "/thumbnail?type=avatar&file=Bob.png"},
        revision=chat.revision,
    ).chat
    chat = chats.append(
        chat.id,
        NodeRole.USER,
        "Go on.",
        extras={"extra": {"bias": "In rhyme:"}},
        revision=chat.revision,
    ).chat
    prompt, _ = _build(store, tmp_path, chat.id, GenerationType.NORMAL, whole=True, dry=True)
    contents = [m.content for m in prompt.messages]
    assert "Bob: Only me." in contents
    assert contents[-1] == "In rhyme:", contents  # the bias, as SillyTavern ends with it


def test_the_system_prompt_switch_reaches_the_turn(store: SqlStore, tmp_path: Path) -> None:
    """`/sysprompt-state off` (and a settings.json with `power_user.sysprompt.enabled`
    false) turns the system prompt off for the next turn's Text Completion prompt."""
    chat_id = _chat(store, 4)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = _service(store, tmp_path, turns)
    chat = store.get_chat(chat_id)

    def enabled() -> bool:
        turn = service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, Api.LLAMACPP)
        context = turns.context(turn, turns.library(chat), turn.tail(10), NOW)
        return context.text_completion.system_prompt_enabled

    assert enabled()
    set_active(store, SYSPROMPT_ENABLED, False)
    assert not enabled()


def test_what_turns_keep_between_them_stays_under_its_byte_budgets(
    store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows, token costs, the engine's messages and the chats' book names are kept by
    their bytes: many chats of long messages stay under each budget (the least recently
    built go), and a chat let go takes its recall starts and book names with it."""
    from taverna.services.turns import choices as turn_choices
    from taverna.services.turns import context as turn_context

    budgets = {"WINDOWS_BYTES": 2_000, "COSTS_BYTES": 400_000, "MESSAGES_BYTES": 200_000}
    for name, budget in budgets.items():
        monkeypatch.setattr(turn_context, name, budget)
    monkeypatch.setattr(turn_choices, "BOOK_NAMES_BYTES", 1_000)
    _library(store, max_context=100_000)
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = _service(store, tmp_path, turns)
    ids = [_chat(store, 30) for _ in range(30)]
    for chat_id in ids:
        chat = store.get_chat(chat_id)
        turns.build(service.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, Api.OPENAI))
        assert turns._windows.held <= budgets["WINDOWS_BYTES"]
        assert turns._costs.held <= budgets["COSTS_BYTES"]
        assert turns._messages.held <= budgets["MESSAGES_BYTES"]
        assert turns.choices._book_names.held <= 1_000
    # each bound let chats go, the newest stayed
    for kept in (turns._windows, turns._costs, turns.choices._book_names):
        assert 1 < len(kept) < len(ids) and ids[-1] in kept
    assert 0 < len(turns._messages) < 30 * 31
    assert set(turns._recall_starts) == set(turns._windows.keys())
    # what is counted is about what is held: the messages' texts at least
    held_texts = sum(len(m.text) for m in turns._messages.values())
    assert held_texts < turns._messages.held < 4 * held_texts + 200 * len(turns._messages)
