"""The tree view's graph (runs of messages between forks, not every message) and the
counts of what follows each candidate at a fork in the middle."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from taverna.model.chat import CharacterRef, Node, NodeRole, new_id
from taverna.server.context import AppContext
from taverna.store import NewChat
from tests.server.conftest import rev


def line(nodes: list[Node], parent: str | None, count: int, start: int, tag: str) -> str | None:
    """`count` messages below `parent`, alternating user and assistant; the last one's id."""
    for i in range(count):
        role = NodeRole.USER if (start + i) % 2 == 0 else NodeRole.ASSISTANT
        node = Node(new_id(), "", parent, role, f"{tag} {start + i}", speaker="Mira")
        nodes.append(node)
        parent = node.id
    return parent


def forked_chat(ctx: AppContext, *, length: int, fork_at: int, side: int) -> dict[str, Any]:
    """`length` messages on the path; at `fork_at` an older candidate `side` messages long;
    every reply on the path also has an unused candidate (a swipe nobody answered)."""
    nodes: list[Node] = []
    trunk = line(nodes, None, fork_at, 0, "trunk")
    side_first = len(nodes)
    side_end = line(nodes, trunk, side, fork_at, "side")
    fork_first = len(nodes)
    end = line(nodes, trunk, length - fork_at, fork_at, "main")
    for node in list(nodes[fork_first:]):
        if node.role is NodeRole.ASSISTANT:
            nodes.append(Node(new_id(), "", node.parent_id, node.role, "unused", speaker="Mira"))
    chat = ctx.store.import_tree(
        NewChat(title="Forked", characters=(CharacterRef("Mira", None),)),
        nodes,
        active_leaf_id=end,
    )
    return {
        "id": chat.id,
        "side_first": nodes[side_first].id,
        "side_end": side_end,
        "fork_first": nodes[fork_first].id,
        "end": end,
    }


def test_a_long_chat_with_one_fork_is_three_runs(client: TestClient, ctx: AppContext) -> None:
    made = forked_chat(ctx, length=2500, fork_at=1250, side=10)
    graph = client.get(f"/api/chats/{made['id']}/graph").json()
    assert graph["messages"] > 2500 + 10
    runs = graph["segments"]
    # The trunk, the side way (drawn first, in a lane of its own), then the way on.
    assert [(s["first"]["depth"], s["last"]["depth"], s["count"], s["lane"]) for s in runs] == [
        (0, 1249, 1250, 0),
        (1250, 1259, 10, 1),
        (1250, 2499, 1250, 0),
    ]
    assert [s["parent"] for s in runs] == [None, runs[0]["id"], runs[0]["id"]]
    assert [s["on_path"] for s in runs] == [True, False, True]
    assert [s["here"] for s in runs] == [False, False, True]
    assert runs[2]["unused"] == 625  # the swipes nobody answered are counted, not drawn
    assert graph["here"]["id"] == made["end"]

    # At the fork: how many messages follow each candidate on the way it last went.
    forks = client.get(
        f"/api/chats/{made['id']}/forks", params={"ids": f"{made['fork_first']},nope"}
    ).json()
    assert list(forks) == [made["fork_first"]]
    assert [(c["index"], c["on_path"], c["follow"]) for c in forks[made["fork_first"]]] == [
        (1, False, 9),
        (2, True, 1249),
    ]
    # Going to the side way: it is where the person is now, the way on is counted.
    shown = client.post(
        f"/api/chats/{made['id']}/messages/{made['side_end']}/show",
        json={"revision": rev(client, made["id"])},
    )
    assert shown.status_code == 200 and shown.json()["window"]["total"] == 1260
    runs = client.get(f"/api/chats/{made['id']}/graph").json()["segments"]
    # The path keeps the first lane: the way it left is drawn beside it now.
    assert [(s["first"]["id"], s["lane"], s["on_path"], s["here"]) for s in runs[1:]] == [
        (made["fork_first"], 1, False, False),
        (made["side_first"], 0, True, True),
    ]
    forks = client.get(f"/api/chats/{made['id']}/forks", params={"ids": made["side_first"]}).json()
    assert [(c["on_path"], c["follow"]) for c in forks[made["side_first"]]] == [
        (True, 9),
        (False, 1249),
    ]


def test_branches_and_checkpoints_sit_on_their_runs(client: TestClient, ctx: AppContext) -> None:
    made = forked_chat(ctx, length=7, fork_at=3, side=2)
    chat_id = made["id"]
    path = [m["id"] for m in client.get(f"/api/chats/{chat_id}").json()["messages"]]
    client.post(
        f"/api/chats/{chat_id}/checkpoints",
        json={"node_id": path[1], "name": "早些时候", "revision": rev(client, chat_id)},
    )
    client.post(
        f"/api/chats/{chat_id}/branches",
        json={"node_id": made["side_end"], "name": "side", "revision": rev(client, chat_id)},
    )
    runs = client.get(f"/api/chats/{chat_id}/graph").json()["segments"]
    assert [c["name"] for c in runs[0]["checkpoints"]] == ["早些时候"]
    assert runs[0]["checkpoints"][0]["depth"] == 1
    # The branch switched to is the path: it goes on in the first lane, drawn last.
    assert [(b["name"], b["active"]) for b in runs[1]["branches"]] == [("main", False)]
    assert [(b["name"], b["active"]) for b in runs[2]["branches"]] == [("side", True)]
    assert runs[2]["here"] and runs[2]["on_path"] and runs[2]["lane"] == 0
    # Opening the checkpoint: the path ends inside the first run; every branch stays.
    [checkpoint] = client.get(f"/api/chats/{chat_id}/checkpoints").json()
    opened = client.post(
        f"/api/chats/{chat_id}/checkpoints/{checkpoint['id']}/open",
        json={"revision": rev(client, chat_id)},
    ).json()
    assert opened["window"]["total"] == 2
    assert [(b["name"], b["length"], b["active"]) for b in opened["branches"]] == [
        ("main", 7, False),
        ("side", 5, False),
    ]
    graph = client.get(f"/api/chats/{chat_id}/graph").json()
    assert [s["here"] for s in graph["segments"]] == [True, False, False]
    assert graph["here"]["depth"] == 1


def test_unknown_chat_is_404(client: TestClient) -> None:
    assert client.get("/api/chats/nope/graph").status_code == 404
    assert client.get("/api/chats/nope/forks", params={"ids": "x"}).status_code == 404
