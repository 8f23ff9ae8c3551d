"""The windowed chat API: the last messages, older and newer pages by cursor, writes that
answer with what they changed, the recorded context start, and a 100,000-message chat."""

from __future__ import annotations

import json
import zlib
from typing import Any

from fastapi.testclient import TestClient

from taverna.model.chat import CharacterRef, GenerationInfo, Node, NodeRole, new_id
from taverna.server import usecases
from taverna.server.context import AppContext
from taverna.store import NewChat
from tests.server.conftest import rev


def long_chat(
    ctx: AppContext, count: int, *, text: str = "", forks: int = 0
) -> tuple[str, list[Node]]:
    """A chat of `count` messages on one path (bulk import); every 10th reply up to
    message `forks` has a second candidate, left off the path."""
    nodes: list[Node] = []
    path: list[Node] = []
    parent: str | None = None
    for i in range(count):
        role = NodeRole.ASSISTANT if i % 2 == 0 else NodeRole.USER
        speaker = "Mira" if role is NodeRole.ASSISTANT else "Ann"
        content = f"message {i}. {text}"
        if i < forks and i % 10 == 0:
            nodes.append(Node(new_id(), "", parent, role, f"other {i}", speaker=speaker))
        node = Node(new_id(), "", parent, role, content, speaker=speaker)
        nodes.append(node)
        path.append(node)
        parent = node.id
    chat = ctx.store.import_tree(
        NewChat(title="long", characters=(CharacterRef("Mira", None),), user_name="Ann"),
        nodes,
        active_leaf_id=parent,
    )
    return chat.id, path


def test_the_default_window_is_the_last_messages(client: TestClient, ctx: AppContext) -> None:
    chat_id, path = long_chat(ctx, 120, forks=120)
    data = client.get(f"/api/chats/{chat_id}").json()
    assert [m["id"] for m in data["messages"]] == [n.id for n in path[-50:]]
    assert [m["position"] for m in data["messages"]] == list(range(70, 120))
    assert data["window"] == {
        "total": 120,
        "start": 70,
        "has_older": True,
        "has_newer": False,
        "changed_from": None,
    }
    # ‹k/n› on every message: each 10th one has a second (older) candidate.
    counts = {m["position"]: (m["candidate_index"], m["candidate_count"]) for m in data["messages"]}
    assert counts[70] == (2, 2) and counts[71] == (1, 1) and counts[110] == (2, 2)
    small = client.get(f"/api/chats/{chat_id}?limit=3").json()
    assert [m["position"] for m in small["messages"]] == [117, 118, 119]


def test_cursors_page_back_to_the_first_message_and_forward_again(
    client: TestClient, ctx: AppContext
) -> None:
    chat_id, path = long_chat(ctx, 130, forks=130)
    page = client.get(f"/api/chats/{chat_id}?limit=40").json()
    seen = page["messages"]
    while page["window"]["has_older"]:
        first = page["messages"][0]["id"]
        page = client.get(f"/api/chats/{chat_id}?limit=40&before={first}").json()
        assert page["window"]["has_newer"] and page["window"]["total"] == 130
        seen = page["messages"] + seen
    assert [m["id"] for m in seen] == [n.id for n in path]
    assert [m["position"] for m in seen] == list(range(130))
    assert seen[0]["content"].startswith("message 0.") and page["window"]["start"] == 0
    assert [m["candidate_count"] for m in seen[:11]] == [2] + [1] * 9 + [2]

    page = client.get(f"/api/chats/{chat_id}?limit=40&after={path[0].id}").json()
    forward = page["messages"]
    while page["window"]["has_newer"]:
        page = client.get(
            f"/api/chats/{chat_id}?limit=40&after={page['messages'][-1]['id']}"
        ).json()
        forward += page["messages"]
    assert [m["id"] for m in forward] == [n.id for n in path[1:]]
    assert forward == seen[1:]
    # The first message has nothing before it, the last nothing after it.
    empty = client.get(f"/api/chats/{chat_id}?before={path[0].id}").json()
    assert empty["messages"] == [] and empty["window"]["start"] == 0
    assert not empty["window"]["has_older"] and empty["window"]["has_newer"]
    end = client.get(f"/api/chats/{chat_id}?after={path[-1].id}").json()
    assert end["messages"] == [] and end["window"]["start"] == 130
    # A page from a position, as a drag of the page's rail asks for it: from there on, or
    # the last full page when it would run past the end.
    for at, start in ((0, 0), (57, 57), (90, 90), (100, 90), (5000, 90)):
        page = client.get(f"/api/chats/{chat_id}?limit=40&at={at}").json()
        assert page["window"]["start"] == start
        assert [m["id"] for m in page["messages"]] == [n.id for n in path[start : start + 40]]
        assert page["messages"] == seen[start : start + 40]


def test_window_bad_input(client: TestClient, ctx: AppContext) -> None:
    chat_id, path = long_chat(ctx, 10)
    for query in ("limit=0", f"limit={usecases.WINDOW_MAX + 1}", "limit=x"):
        assert client.get(f"/api/chats/{chat_id}?{query}").status_code == 422, query
    both = client.get(f"/api/chats/{chat_id}?before={path[5].id}&after={path[2].id}")
    assert both.status_code == 400 and both.json()["detail"]["message"]
    for query in (f"at=2&after={path[2].id}", f"at=2&before={path[5].id}"):
        assert client.get(f"/api/chats/{chat_id}?{query}").status_code == 400, query
    assert client.get(f"/api/chats/{chat_id}?at=-1").status_code == 422
    assert client.get(f"/api/chats/{chat_id}?before=nope").status_code == 404
    assert client.get(f"/api/chats/{chat_id}?after=nope").status_code == 404


def test_a_write_answers_with_the_change_and_what_follows(
    client: TestClient, ctx: AppContext
) -> None:
    chat_id, path = long_chat(ctx, 120, forks=120)
    # A candidate switch at message 100: that message and the 19 after it, nothing before.
    switched = client.post(
        f"/api/chats/{chat_id}/messages/{path[100].id}/select",
        json={"index": 1, "revision": rev(client, chat_id)},
    ).json()
    assert switched["window"]["changed_from"] == 100
    assert switched["messages"][0]["position"] == 100
    assert switched["messages"][0]["content"] == "other 100"
    # The other candidate has no continuation: the path ends there now.
    assert len(switched["messages"]) == 1 and switched["window"]["total"] == 101
    back = client.post(
        f"/api/chats/{chat_id}/messages/{path[100].id}/select",
        json={"index": 2, "revision": rev(client, chat_id)},
    ).json()
    assert [m["position"] for m in back["messages"]] == list(range(100, 120))
    assert [m["id"] for m in back["messages"]] == [n.id for n in path[100:]]

    # An edit of the last message: just that message.
    edited = client.patch(
        f"/api/chats/{chat_id}/messages/{path[-1].id}",
        json={"content": "new end", "revision": rev(client, chat_id)},
    ).json()
    assert [m["id"] for m in edited["messages"]] == [path[-1].id]
    assert edited["window"]["changed_from"] == 119

    # Hiding message 30: more than a window follows, so the answer is the last window
    # and says the page must start over from it.
    hidden = client.post(
        f"/api/chats/{chat_id}/messages/{path[30].id}/hidden",
        json={"hidden": True, "revision": rev(client, chat_id)},
    ).json()
    assert hidden["window"]["changed_from"] is None
    assert [m["position"] for m in hidden["messages"]] == list(range(70, 120))

    # Deleting message 110 shifts the positions after it by one.
    deleted = client.delete(
        f"/api/chats/{chat_id}/messages/{path[110].id}?revision={rev(client, chat_id)}"
    ).json()
    assert deleted["window"]["changed_from"] == 110
    assert [m["id"] for m in deleted["messages"]] == [n.id for n in path[111:]]
    assert [m["position"] for m in deleted["messages"]] == list(range(110, 119))
    assert deleted["window"]["total"] == 119

    # A rename changes no message: the answer holds none and starts at the end.
    renamed = client.patch(
        f"/api/chats/{chat_id}", json={"title": "renamed", "revision": rev(client, chat_id)}
    ).json()
    assert renamed["messages"] == [] and renamed["window"]["changed_from"] == 119
    assert renamed["title"] == "renamed"
    assert "WindowOut" in client.get("/openapi.json").json()["components"]["schemas"]


def test_the_context_line_comes_from_the_last_reply_record(
    client: TestClient, ctx: AppContext
) -> None:
    chat_id, path = long_chat(ctx, 6)
    assert client.get(f"/api/chats/{chat_id}/context").json() == {
        "reply_id": None,
        "first_message_in_context": None,
    }
    # Message 4 is a generated reply whose record says messages 0 and 1 were cut.
    with ctx.store.write(chat_id, revision=1, label="generated") as w:
        w.update_node(path[4].id, generation=GenerationInfo(provider="stub"))
    items: list[dict[str, Any]] = [
        {"kind": "history", "source": n.id, "included": i >= 2, "tokens": 1}
        for i, n in enumerate(path[:4])
    ]
    record = {"format": 1, "prompt": {"ledger": {"items": items}}, "request": None}
    ctx.store.save_sent_prompt(chat_id, path[4].id, zlib.compress(json.dumps(record).encode()))
    assert client.get(f"/api/chats/{chat_id}/context").json() == {
        "reply_id": path[4].id,
        "first_message_in_context": path[2].id,
    }


def test_a_window_of_a_100000_message_chat_is_the_window(
    client: TestClient, ctx: AppContext
) -> None:
    """What the window of a long chat holds; what it costs is bench/chat_window.py's."""
    chat_id, path = long_chat(ctx, 100_000, text="The lamp burns low over the map table. " * 8)
    response = client.get(f"/api/chats/{chat_id}")
    data = response.json()
    assert data["window"]["total"] == 100_000 and len(data["messages"]) == usecases.WINDOW
    assert data["messages"][-1]["position"] == 99_999
    assert len(response.content) <= 100_000
    middle = client.get(f"/api/chats/{chat_id}?before={path[50_000].id}").json()
    assert [m["position"] for m in middle["messages"]] == list(range(49_950, 50_000))
    ctx.chats.edit(chat_id, path[-2].id, "changed", revision=data["revision"])
    edited = usecases.changed_view(ctx, chat_id, below=path[-3].id)
    assert [m.position for m in edited.messages] == [99_998, 99_999]
    assert edited.messages[0].content == "changed" and edited.window.changed_from == 99_998
