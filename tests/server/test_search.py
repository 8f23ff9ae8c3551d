"""Message search over HTTP: across chats and in one chat, then opening a hit."""

from __future__ import annotations

from fastapi.testclient import TestClient

from taverna.model.chat import NodeRole
from taverna.server.context import AppContext


def test_search_across_chats_and_in_one_then_open_a_hit_on_another_branch(
    client: TestClient, ctx: AppContext
) -> None:
    out = ctx.chats.create_chat("海边", greetings=["你好。"], greeting_speaker="Seraphina")
    out = ctx.chats.append(out.chat.id, NodeRole.USER, "去哪里？", revision=out.chat.revision)
    first = ctx.chats.append(
        out.chat.id, NodeRole.ASSISTANT, "那座灯塔很高。", revision=out.chat.revision
    )
    chat_id = first.chat.id
    ctx.chats.swipe(chat_id, first.node.id, "去集市。", revision=first.chat.revision)
    other = ctx.chats.create_chat("other", greetings=["Another 灯塔 <b>here</b>."])

    found = client.get("/api/search", params={"q": "灯塔"}).json()
    assert {hit["chat_id"] for hit in found} == {chat_id, other.chat.id}
    [hit] = client.get(f"/api/chats/{chat_id}/search", params={"q": "灯塔"}).json()
    assert hit["node_id"] == first.node.id and hit["on_path"] is False
    assert hit["chat_title"] == "海边" and hit["speaker"] == "" and hit["position"] == 2
    assert [p["text"] for p in hit["snippet"] if p["match"]] == ["灯塔"]

    revision = client.get(f"/api/chats/{chat_id}").json()["revision"]
    opened = client.post(
        f"/api/chats/{chat_id}/messages/{hit['node_id']}/show", json={"revision": revision}
    )
    assert opened.status_code == 200
    assert opened.json()["messages"][-1]["id"] == first.node.id
    [again] = client.get(f"/api/chats/{chat_id}/search", params={"q": "灯塔"}).json()
    assert again["on_path"] is True


def test_bad_searches_are_refused_with_the_field(client: TestClient) -> None:
    assert client.get("/api/search", params={"q": "  "}).status_code == 400
    assert client.get("/api/search").status_code == 422
    assert client.get("/api/search", params={"q": "x" * 201}).status_code == 422
    assert client.get("/api/chats/nope/search", params={"q": "x"}).status_code == 404


def test_a_nul_in_a_query_separates_words(client: TestClient, ctx: AppContext) -> None:
    """U+0000 in a query (SQLite's full-text query cannot hold one) is read as a space:
    the words on either side are searched for, and the answer is never a 500."""
    out = ctx.chats.create_chat("harbour", greetings=["The lighthouse\x00keeper waits."])
    for path in ("/api/search", f"/api/chats/{out.chat.id}/search"):
        found = client.get(path, params={"q": "lighthouse\x00keeper"})
        assert found.status_code == 200, found.text
        assert [hit["chat_id"] for hit in found.json()] == [out.chat.id]
        assert client.get(path, params={"q": "lighthouse\x00harpoon"}).json() == []
        nothing = client.get(path, params={"q": "\x00\x00"})
        assert nothing.status_code == 400 and nothing.json()["detail"]["field"] == "q"
