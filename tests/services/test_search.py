"""Message search through the service, on SQLite (FTS5 trigram) and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import NodeRole
from taverna.services.chats.search import SearchResult, SearchService, snippet
from taverna.services.chats.service import ChatService, WriteResult
from taverna.store.sql import SqlStore

USER, BOT = NodeRole.USER, NodeRole.ASSISTANT


@pytest.fixture
def search(store: SqlStore) -> SearchService:
    return SearchService(store)


def conversation(chats: ChatService, title: str, *lines: str) -> WriteResult:
    out = chats.create_chat(title, greetings=["Hello."], greeting_speaker="Seraphina")
    for i, line in enumerate(lines):
        role = USER if i % 2 == 0 else BOT
        out = chats.append(out.chat.id, role, line, revision=out.chat.revision)
    return out


def marked(result: SearchResult) -> list[str]:
    return [piece for piece, match in result.snippet if match]


def test_chinese_words_are_found_inside_a_sentence(
    chats: ChatService, search: SearchService
) -> None:
    out = conversation(chats, "海边", "我们去哪里？", "那座灯塔很高，灯光照着海面。")
    [hit] = search.search("灯塔")
    assert (hit.chat_id, hit.chat_title, hit.node_id) == (out.chat.id, "海边", out.node.id)
    assert hit.on_path and hit.role == "assistant" and hit.position == 2
    assert marked(hit) == ["灯塔"]
    assert [h.node_id for h in search.search("灯光照着")] == [out.node.id]
    assert search.search("灯塔 海面")[0].node_id == out.node.id
    assert search.search("灯塔 沙漠") == []


def test_case_and_accents_do_not_matter(chats: ChatService, search: SearchService) -> None:
    out = conversation(chats, "cafe", "Meet me at the Café Noir.", "I'll be there at noon.")
    user = chats.active_path(out.chat.id).nodes[1]
    for query in ("café", "CAFE", "cafe noir", "noir"):
        [hit] = search.search(query)
        assert hit.node_id == user.id, query
    assert marked(search.search("cafe")[0]) == ["Café"]
    # Two letters: shorter than the index's trigrams, still found.
    assert [h.node_id for h in search.search("at")] == [out.node.id, user.id]


def test_a_message_on_another_branch_is_found_and_can_be_opened(
    chats: ChatService, search: SearchService
) -> None:
    out = conversation(chats, "story", "Where now?", "To the old lighthouse.")
    first = out.node
    swiped = chats.swipe(out.chat.id, first.id, "To the market.", revision=out.chat.revision)
    [hit] = search.search("lighthouse")
    assert hit.node_id == first.id and not hit.on_path
    assert search.search("market")[0].on_path
    chats.select_candidate(out.chat.id, hit.node_id, revision=swiped.chat.revision)
    [again] = search.search("lighthouse")
    assert again.on_path
    assert chats.active_path(out.chat.id).nodes[-1].id == first.id


def test_deleted_messages_and_chats_are_never_found(
    chats: ChatService, search: SearchService
) -> None:
    out = conversation(chats, "one", "A secret word: xylophone.", "Noted.")
    other = conversation(chats, "two", "Another xylophone here.", "Fine.")
    assert len(search.search("xylophone")) == 2
    user = chats.active_path(out.chat.id).nodes[1]
    chats.delete(out.chat.id, user.id, revision=out.chat.revision)
    assert [h.chat_id for h in search.search("xylophone")] == [other.chat.id]
    chats.delete_chat(other.chat.id, revision=other.chat.revision)
    assert search.search("xylophone") == []


def test_search_in_one_chat(chats: ChatService, search: SearchService) -> None:
    one = conversation(chats, "one", "The dragon sleeps.", "Quietly.")
    two = conversation(chats, "two", "A dragon wakes.", "Loudly.")
    assert {h.chat_id for h in search.search("dragon")} == {one.chat.id, two.chat.id}
    assert [h.chat_id for h in search.search("dragon", chat_id=two.chat.id)] == [two.chat.id]
    with pytest.raises(NotFound):
        search.search("dragon", chat_id="no-such-chat")


def test_another_owner_s_chats_are_not_searched(chats: ChatService, search: SearchService) -> None:
    chats.create_chat("theirs", greetings=["A hidden treasure."], owner="someone")
    assert search.search("treasure") == []
    assert len(search.search("treasure", owner="someone")) == 1


def test_wildcards_and_quotes_are_plain_text(chats: ChatService, search: SearchService) -> None:
    conversation(chats, "odd", 'He said "100%_sure" AND left.', "ok")
    assert len(search.search('"100%_sure"')) == 1
    assert search.search("%") != [] and search.search("100%x") == []
    assert len(search.search("AND")) == 1


def test_a_query_must_have_words(search: SearchService) -> None:
    with pytest.raises(TavernaError):
        search.search("   ")
    with pytest.raises(TavernaError):
        search.search("x" * 201)


def test_a_text_leaves_the_index_with_its_last_message(
    chats: ChatService, search: SearchService, store: SqlStore
) -> None:
    out = conversation(chats, "one", "Unique zebra text.", "ok")
    chats.delete_chat(out.chat.id, revision=out.chat.revision)
    store.purge_deleted()
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM search_texts")).scalar_one() == 0
    assert search.search("zebra") == []


def test_snippet_cuts_around_the_first_match_and_marks_all() -> None:
    text = "a " * 60 + "the Lighthouse and the lighthouse keeper" + " b" * 80
    pieces = snippet(text, ["lighthouse"])
    assert pieces[0] == ("…", False) and pieces[-1] == ("…", False)
    assert [p for p, m in pieces if m] == ["Lighthouse", "lighthouse"]
    assert sum(len(p) for p, _ in pieces) < 160
    assert snippet("the brass lantern\n\nat  the bow", ["lantern"]) == (
        ("the brass ", False),
        ("lantern", True),
        (" at the bow", False),
    )


def test_messages_stored_before_the_index_existed_are_found(
    chats: ChatService, search: SearchService, store: SqlStore
) -> None:
    from alembic import command
    from alembic.config import Config

    from taverna.store.sql.engines import MIGRATIONS, migrate

    conversation(chats, "old", "An old message about the 灯塔 and a café.", "ok")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0008")
    migrate(store.engine)
    assert len(search.search("灯塔 cafe")) == 1
