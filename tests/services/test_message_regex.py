"""Regex scripts over stored and shown messages (algo-chat-ops.md §6.1): storage scripts
rewrite a message as it is stored (a revision of its own, so undo brings the original
back), display-only ones never touch the store, edits run only `runOnEdit` scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taverna.model.chat import CharacterRef, ChatState, GenerationInfo, NodeRole
from taverna.services.chats.service import ChatService
from taverna.services.library.active_settings import set_active
from taverna.services.library.regex_library import RegexLayer, RegexLibrary
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.scripts.message_regex import StoredRegex, displayed, shown_texts
from taverna.store.sql import SqlStore, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


def rule(name: str, find: str, replace: str, placement: list[int], **more: Any) -> dict[str, Any]:
    return {"scriptName": name, "findRegex": find, "replaceString": replace,
            "placement": placement, **more}  # fmt: skip


@pytest.fixture
def chats(store: SqlStore) -> ChatService:
    return ChatService(store, rewriter=StoredRegex(store))


def _chat(chats: ChatService, greetings: tuple[str, ...] = ()) -> str:
    lib = LibraryService(chats.store)
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Aria"}}
    aria = lib.put(LibraryKind.CHARACTER, "Aria", card)
    return chats.create_chat(
        "c",
        characters=[CharacterRef("Aria", aria.id)],
        user_name="Alex",
        greetings=greetings,
        greeting_speaker="Aria",
        base_state=ChatState(),
    ).chat.id


def _rules(store: SqlStore, *scripts: dict[str, Any]) -> None:
    RegexLibrary(store).save(RegexLayer.GLOBAL, list(scripts))


def test_a_sent_message_is_stored_rewritten_and_undo_brings_the_original(
    chats: ChatService, store: SqlStore
) -> None:
    _rules(store, rule("ooc", r"/\s*\(OOC:[^)]*\)/g", "", [1]))
    chat_id = _chat(chats)
    written = chats.append(
        chat_id, NodeRole.USER, "Hello (OOC: be nice)", revision=chats.get_chat(chat_id).revision
    )
    assert written.node is not None and written.node.content == "Hello"
    node_id = written.node.id
    assert [v.content for v in chats.history(chat_id, node_id)] == ["Hello (OOC: be nice)", "Hello"]
    assert chats.store.revisions(chat_id, limit=1)[0].label == "regex"
    chats.undo(chat_id, revision=written.chat.revision)
    assert chats.store.get_node(chat_id, node_id).content == "Hello (OOC: be nice)"


def test_display_and_prompt_only_scripts_never_change_the_stored_text(
    chats: ChatService, store: SqlStore
) -> None:
    _rules(
        store,
        rule("shown", "/red/g", "RED", [1, 2], markdownOnly=True),
        rule("sent", "/blue/g", "BLUE", [1, 2], promptOnly=True),
        rule("both", "/green/g", "GREEN", [1, 2], markdownOnly=True, promptOnly=True),
    )
    chat_id = _chat(chats, ("red blue green",))
    chat = chats.get_chat(chat_id)
    after = chats.append(chat_id, NodeRole.USER, "red blue green", revision=chat.revision)
    chat = chats.edit(chat_id, after.node.id, "red, blue, green", revision=after.chat.revision).chat  # type: ignore[union-attr]
    path = chats.active_path(chat_id).nodes
    assert [n.content for n in path] == ["red blue green", "red, blue, green"]
    shown = shown_texts(store, chat, path)
    assert shown == {path[0].id: "RED blue GREEN", path[1].id: "RED, blue, GREEN"}
    assert [n.content for n in chats.active_path(chat_id).nodes] == [
        "red blue green",
        "red, blue, green",
    ]


def test_display_scripts_follow_the_depth_among_visible_messages(
    chats: ChatService, store: SqlStore
) -> None:
    _rules(store, rule("recent", "/x/g", "y", [1, 2], markdownOnly=True, maxDepth=1))
    chat_id = _chat(chats, ("x0",))
    revision = chats.get_chat(chat_id).revision
    for text in ("x1", "x2", "x3"):
        revision = chats.append(chat_id, NodeRole.USER, text, revision=revision).chat.revision
    path = chats.active_path(chat_id).nodes
    chats.set_hidden(chat_id, [path[2].id], True, revision=revision)  # "x2" hidden
    chat = chats.get_chat(chat_id)
    path = chats.active_path(chat_id).nodes
    shown = shown_texts(store, chat, path)
    # depth 0 = "x3", depth 1 = "x1" (the hidden "x2" is not counted, nor changed)
    assert shown == {path[3].id: "y3", path[1].id: "y1"}


def test_an_edit_is_rewritten_only_by_run_on_edit_scripts(
    chats: ChatService, store: SqlStore
) -> None:
    _rules(
        store,
        rule("always", "/a/g", "b", [1]),
        rule("on edit", "/c/g", "d", [1], runOnEdit=True),
    )
    chat_id = _chat(chats)
    sent = chats.append(chat_id, NodeRole.USER, "a c", revision=chats.get_chat(chat_id).revision)
    assert sent.node is not None and sent.node.content == "b d"
    edited = chats.edit(chat_id, sent.node.id, "a c again", revision=sent.chat.revision)
    assert edited.node is not None and edited.node.content == "a d again"


def test_each_kind_of_message_by_its_placement(chats: ChatService, store: SqlStore) -> None:
    """Greetings and replies are AI output, `/sys` and `/sendas` slash commands, a
    reply's reasoning the reasoning placement."""
    _rules(
        store,
        rule("ai", "/q/g", "AI", [2]),
        rule("slash", "/q/g", "SLASH", [3]),
        rule("think", "/q/g", "THOUGHT", [6]),
    )
    chat_id = _chat(chats, ("q hello", "q other"))
    path = chats.active_path(chat_id).nodes
    assert path[0].content == "AI hello"
    assert [n.content for n in chats.candidates(chat_id, path[0].id)] == ["AI hello", "AI other"]
    revision = chats.get_chat(chat_id).revision
    sys = chats.append(chat_id, NodeRole.NARRATOR, "q sys", revision=revision, speaker="System")
    assert sys.node is not None and sys.node.content == "SLASH sys"
    sendas = chats.append(
        chat_id, NodeRole.ASSISTANT, "q as", revision=sys.chat.revision, speaker="Aria", slash=True
    )
    assert sendas.node is not None and sendas.node.content == "SLASH as"
    info = GenerationInfo(extras={"reasoning": "q thought"})
    reply = chats.add_reply(
        chat_id, sendas.node.id, "q reply", revision=sendas.chat.revision, speaker="Aria",
        generation=info,
    )  # fmt: skip
    assert reply.node is not None and reply.node.content == "AI reply"
    assert reply.node.generation is not None
    assert reply.node.generation.extras["reasoning"] == "THOUGHT thought"


def test_display_scripts_of_the_reasoning_placement_change_the_shown_reasoning_only(
    chats: ChatService, store: SqlStore
) -> None:
    """A display-only script placed on reasoning changes the reasoning the page shows,
    at the reply's depth; the stored reasoning and the reply's text stay as they were."""
    _rules(
        store,
        rule("think", "/secret/g", "[hidden]", [6], markdownOnly=True, maxDepth=0),
        rule("text", "/plain/g", "PLAIN", [2], markdownOnly=True),
    )
    chat_id = _chat(chats)
    revision = chats.get_chat(chat_id).revision
    sent = chats.append(chat_id, NodeRole.USER, "hi secret", revision=revision)
    assert sent.node is not None
    replies = []
    parent, revision = sent.node.id, sent.chat.revision
    for thought in ("old secret", "new secret"):
        info = GenerationInfo(extras={"reasoning": thought})
        reply = chats.add_reply(
            chat_id, parent, "plain secret", revision=revision, speaker="Aria", generation=info
        )
        assert reply.node is not None
        replies.append(reply.node)
        sent = chats.append(chat_id, NodeRole.USER, "next", revision=reply.chat.revision)
        assert sent.node is not None
        parent, revision = sent.node.id, sent.chat.revision
    chat = chats.get_chat(chat_id)
    path = chats.active_path(chat_id).nodes[:-1]  # the newest reply is now at depth 0
    shown = displayed(store, chat, path)
    old, new = replies
    assert shown.reasoning == {new.id: "new [hidden]"}  # the older one is past maxDepth 0
    assert shown.content == {old.id: "PLAIN secret", new.id: "PLAIN secret"}
    stored = chats.store.get_node(chat_id, new.id).generation
    assert stored is not None and stored.extras["reasoning"] == "new secret"


def test_disallowed_character_scripts_do_not_rewrite(chats: ChatService, store: SqlStore) -> None:
    chat_id = _chat(chats)
    aria = chats.get_chat(chat_id).characters[0].document_id
    assert aria is not None
    regexes = RegexLibrary(store)
    regexes.save(RegexLayer.CHARACTER, [rule("own", "/a/g", "b", [1])], target=aria)
    first = chats.append(chat_id, NodeRole.USER, "a", revision=chats.get_chat(chat_id).revision)
    assert first.node is not None and first.node.content == "a"
    regexes.allow(RegexLayer.CHARACTER, aria, True)
    second = chats.append(chat_id, NodeRole.USER, "a", revision=first.chat.revision)
    assert second.node is not None and second.node.content == "b"


def test_a_changed_card_script_is_used_at_once(chats: ChatService, store: SqlStore) -> None:
    """The cards' parsed scripts are kept by card revision: an edit is seen at once."""
    chat_id = _chat(chats)
    aria = chats.get_chat(chat_id).characters[0].document_id
    assert aria is not None
    regexes = RegexLibrary(store)
    regexes.allow(RegexLayer.CHARACTER, aria, True)
    regexes.save(RegexLayer.CHARACTER, [rule("own", "/a/g", "b", [1])], target=aria)
    first = chats.append(chat_id, NodeRole.USER, "a", revision=chats.get_chat(chat_id).revision)
    assert first.node is not None and first.node.content == "b"
    regexes.save(RegexLayer.CHARACTER, [rule("own", "/a/g", "c", [1])], target=aria)
    second = chats.append(chat_id, NodeRole.USER, "a", revision=first.chat.revision)
    assert second.node is not None and second.node.content == "c"


def test_each_change_to_the_scripts_in_force_is_seen_at_the_next_message(
    chats: ChatService, store: SqlStore
) -> None:
    """The scripts are kept between messages only while the documents they come from
    stay at the same versions: a global script, a preset's script, the preset in use and
    the regex extension switched off each change the next stored message."""
    chat_id = _chat(chats)
    revision = chats.get_chat(chat_id).revision

    def sent(text: str) -> str:
        nonlocal revision
        written = chats.append(chat_id, NodeRole.USER, text, revision=revision)
        assert written.node is not None
        revision = written.chat.revision
        return written.node.content

    assert sent("abc") == "abc"
    _rules(store, rule("g", "/a/g", "A", [1]))
    assert sent("abc") == "Abc"
    _rules(store, rule("g", "/b/g", "B", [1]))
    assert sent("abc") == "aBc"
    lib = LibraryService(store)
    regexes = RegexLibrary(store)
    one = lib.put(LibraryKind.CHAT_COMPLETION_PRESET, "One", {"openai_max_context": 4000})
    two = lib.put(LibraryKind.CHAT_COMPLETION_PRESET, "Two", {"openai_max_context": 4000})
    for preset, letter in ((one, "1"), (two, "2")):
        regexes.save(RegexLayer.PRESET, [rule("p", "/c/g", letter, [1])], target=preset.id)
        regexes.allow(RegexLayer.PRESET, preset.id, True)
    set_active(store, "chat_completion_preset", one.id)
    assert sent("abc") == "aB1"
    regexes.save(RegexLayer.PRESET, [rule("p", "/c/g", "one", [1])], target=one.id)
    assert sent("abc") == "aBone"
    set_active(store, "chat_completion_preset", two.id)
    assert sent("abc") == "aB2"
    assert sent("abc") == "aB2"
    set_active(store, "extension_settings", {"disabledExtensions": ["regex"]})
    assert sent("abc") == "abc"
