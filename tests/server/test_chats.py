"""Chat endpoints over a real SQLite store: read, edit, hide, delete, swipe, branch, undo, bad input."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from taverna.model.chat import CharacterRef, NodeRole
from taverna.server.context import AppContext
from tests.server.conftest import rev


def make_chat(ctx: AppContext) -> tuple[str, list[str]]:
    """A chat with a greeting (two candidates), a user message and a reply."""
    outcome = ctx.chats.create_chat(
        "Test chat",
        characters=[CharacterRef("Mira", None)],
        user_name="Ann",
        greetings=["Hello, *traveller*.", "Welcome back."],
        greeting_speaker="Mira",
    )
    chat = outcome.chat
    assert outcome.node is not None
    ids = [outcome.node.id]
    out = ctx.chats.append(
        chat.id, NodeRole.USER, "Hi <b>there</b>", revision=chat.revision, speaker="Ann"
    )
    assert out.node is not None
    ids.append(out.node.id)
    out = ctx.chats.append(
        chat.id, NodeRole.ASSISTANT, "A reply.", revision=out.chat.revision, speaker="Mira"
    )
    assert out.node is not None
    ids.append(out.node.id)
    return chat.id, ids


def path_ids(client: TestClient, chat_id: str) -> list[str]:
    """The ids of the whole active path as read now (a short chat fits one window)."""
    data = client.get(f"/api/chats/{chat_id}").json()
    assert not data["window"]["has_older"] and not data["window"]["has_newer"]
    return [m["id"] for m in data["messages"]]


def changed(data: dict[str, Any]) -> tuple[int | None, list[str]]:
    """Where a write's answer says the path changed, and the messages from there."""
    return data["window"]["changed_from"], [m["id"] for m in data["messages"]]


def test_read_chat_shows_the_active_path_with_candidates(
    client: TestClient, ctx: AppContext
) -> None:
    chat_id, ids = make_chat(ctx)
    data = client.get(f"/api/chats/{chat_id}").json()
    assert [m["id"] for m in data["messages"]] == ids
    greeting = data["messages"][0]
    assert (greeting["candidate_index"], greeting["candidate_count"]) == (1, 2)
    assert (
        data["messages"][1]["content"] == "Hi <b>there</b>"
    )  # stored as written; the page escapes
    assert data["persona"]["name"] == "Ann"
    assert [m["position"] for m in data["messages"]] == [0, 1, 2]
    assert data["window"] == {
        "total": 3,
        "start": 0,
        "has_older": False,
        "has_newer": False,
        "changed_from": None,
    }
    listed = client.get("/api/chats").json()
    assert [c["id"] for c in listed] == [chat_id]
    assert listed[0]["message_count"] == 3


def test_edit_hide_delete_restore(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    read = client.get(f"/api/chats/{chat_id}").json()["revision"]
    data = client.patch(
        f"/api/chats/{chat_id}/messages/{ids[2]}", json={"content": "Edited.", "revision": read}
    ).json()
    # A write answers with the message it changed and what follows, nothing before.
    assert changed(data) == (2, [ids[2]])
    assert data["messages"][0]["content"] == "Edited."
    data = client.post(
        f"/api/chats/{chat_id}/messages/{ids[1]}/hidden",
        json={"hidden": True, "revision": rev(client, chat_id)},
    ).json()
    assert changed(data) == (1, ids[1:])
    assert data["messages"][0]["hidden"] is True
    data = client.post(
        f"/api/chats/{chat_id}/messages/{ids[1]}/hidden",
        json={"hidden": False, "revision": rev(client, chat_id)},
    ).json()
    assert data["messages"][0]["hidden"] is False
    data = client.delete(
        f"/api/chats/{chat_id}/messages/{ids[2]}?revision={rev(client, chat_id)}"
    ).json()
    # The reply's place changed (it is gone): the answer starts there and is empty.
    assert changed(data) == (2, [])
    assert data["window"]["total"] == 2
    assert path_ids(client, chat_id) == ids[:2]
    restored = client.post(
        f"/api/chats/{chat_id}/messages/{ids[2]}/restore", json={"revision": rev(client, chat_id)}
    )
    assert restored.status_code == 200
    assert changed(restored.json()) == (2, [])  # a candidate again, not on the path
    # A restored message is a candidate again; selecting it puts it back on the path.
    data = client.post(
        f"/api/chats/{chat_id}/messages/{ids[2]}/select",
        json={"index": 1, "revision": rev(client, chat_id)},
    ).json()
    assert changed(data) == (2, [ids[2]])
    assert path_ids(client, chat_id) == ids


def test_stale_revision_is_409_and_changes_nothing(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    read = client.get(f"/api/chats/{chat_id}").json()["revision"]
    client.patch(
        f"/api/chats/{chat_id}/messages/{ids[2]}", json={"content": "First.", "revision": read}
    )
    stale = client.patch(
        f"/api/chats/{chat_id}/messages/{ids[2]}", json={"content": "Second.", "revision": read}
    )
    assert stale.status_code == 409
    assert stale.json()["detail"]["current_revision"] == read + 1
    assert client.get(f"/api/chats/{chat_id}").json()["messages"][2]["content"] == "First."


def test_select_candidate_and_branches(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    data = client.post(
        f"/api/chats/{chat_id}/messages/{ids[0]}/select",
        json={"index": 2, "revision": rev(client, chat_id)},
    ).json()
    assert data["messages"][0]["content"] == "Welcome back."
    assert data["messages"][0]["candidate_index"] == 2
    assert len(data["messages"]) == 1  # the other greeting's continuation is not on this path
    data = client.post(
        f"/api/chats/{chat_id}/messages/{ids[0]}/select",
        json={"index": 1, "revision": rev(client, chat_id)},
    ).json()
    assert [m["id"] for m in data["messages"]] == ids
    data = client.post(
        f"/api/chats/{chat_id}/branches",
        json={"node_id": ids[1], "name": "side", "revision": rev(client, chat_id)},
    )
    assert data.status_code == 201
    # The branch ends at its message: only what followed it is gone.
    assert changed(data.json()) == (2, [])
    assert path_ids(client, chat_id) == ids[:2]
    branches = client.get(f"/api/chats/{chat_id}/branches").json()
    side = next(b for b in branches if b["name"] == "side")
    assert side["active"] is True
    assert (
        client.post(
            f"/api/chats/{chat_id}/undo", json={"revision": rev(client, chat_id)}
        ).status_code
        == 200
    )


def test_rename_and_delete_chat(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ = make_chat(ctx)
    assert (
        client.patch(
            f"/api/chats/{chat_id}", json={"title": "新的标题", "revision": rev(client, chat_id)}
        ).json()["title"]
        == "新的标题"
    )
    assert client.delete(f"/api/chats/{chat_id}?revision={rev(client, chat_id)}").status_code == 204
    assert client.get(f"/api/chats/{chat_id}").status_code == 404
    assert client.get("/api/chats").json() == []


def test_bad_input_is_a_clear_4xx_and_stores_nothing(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    before = client.get(f"/api/chats/{chat_id}").json()
    revision = before["revision"]
    bad = [
        ("patch", f"/api/chats/{chat_id}/messages/{ids[2]}", {"content": 5}),
        ("patch", f"/api/chats/{chat_id}/messages/{ids[2]}", {"content": "x", "extra": 1}),
        ("post", f"/api/chats/{chat_id}/messages/{ids[1]}/hidden", {"hidden": "yes"}),
        ("post", f"/api/chats/{chat_id}/messages/{ids[0]}/select", {"index": 0}),
        ("post", f"/api/chats/{chat_id}/branches", {"node_id": ids[1], "name": ""}),
        ("patch", f"/api/chats/{chat_id}", {"title": ""}),
    ]
    for method, url, body in bad:
        response = getattr(client, method)(url, json={**body, "revision": revision})
        assert response.status_code == 422, (url, body, response.text)
    unknown = [
        ("get", "/api/chats/nope", None),
        ("patch", f"/api/chats/{chat_id}/messages/nope", {"content": "x", "revision": revision}),
        ("post", f"/api/chats/{chat_id}/messages/nope/hidden", {"hidden": True, "revision": 1}),
        ("post", f"/api/chats/{chat_id}/messages/{ids[0]}/select", {"index": 9, "revision": 1}),
        ("post", f"/api/chats/{chat_id}/branches/nope/switch", {"revision": revision}),
        ("delete", f"/api/chats/{chat_id}/messages/nope?revision={revision}", None),
    ]
    for method, url, body in unknown:
        kwargs = {"json": body} if body is not None else {}
        response = getattr(client, method)(url, **kwargs)
        assert response.status_code == 404, (url, response.text)
        assert response.json()["detail"]["message"]
    # Editing a message of another chat through this chat's URL is refused.
    _other_id, other_ids = make_chat(ctx)
    response = client.patch(
        f"/api/chats/{chat_id}/messages/{other_ids[2]}",
        json={"content": "x", "revision": rev(client, chat_id)},
    )
    assert response.status_code == 404
    after = client.get(f"/api/chats/{chat_id}").json()
    assert after == before


def test_export_as_sillytavern_files(client: TestClient, ctx: AppContext) -> None:
    import io
    import json
    import zipfile

    chat_id, ids = make_chat(ctx)
    single = client.get(f"/api/chats/{chat_id}/export")
    assert single.status_code == 200
    lines = single.content.decode("utf-8").splitlines()
    assert json.loads(lines[1])["mes"] == "Hello, *traveller*."
    assert json.loads(lines[1])["swipes"] == ["Hello, *traveller*.", "Welcome back."]
    client.post(
        f"/api/chats/{chat_id}/branches",
        json={"node_id": ids[1], "name": "side", "revision": rev(client, chat_id)},
    )
    zipped = client.get(f"/api/chats/{chat_id}/export")
    assert zipped.headers["content-type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(zipped.content)).namelist()
    assert len(names) == 2 and all(n.endswith(".jsonl") for n in names)
    assert client.get("/api/chats/nope/export").status_code == 404


def test_tree_view_and_show(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    client.post(
        f"/api/chats/{chat_id}/messages/{ids[0]}/select",
        json={"index": 2, "revision": rev(client, chat_id)},
    )
    tree = client.get(f"/api/chats/{chat_id}/tree").json()
    assert {n["id"] for n in tree} >= set(ids)
    by_id = {n["id"]: n for n in tree}
    assert by_id[ids[0]]["shown"] and not by_id[ids[0]]["on_path"]
    assert by_id[ids[2]]["shown"]  # a leaf
    assert by_id[ids[2]]["level"] == 0  # no fork below the greetings
    shown = client.post(
        f"/api/chats/{chat_id}/messages/{ids[2]}/show", json={"revision": rev(client, chat_id)}
    ).json()
    assert [m["id"] for m in shown["messages"]] == ids
    assert client.get("/api/chats/nope/tree").status_code == 404
    assert (
        client.post(
            f"/api/chats/{chat_id}/messages/nope/show", json={"revision": rev(client, chat_id)}
        ).status_code
        == 404
    )


def test_switch_branch_undo_redo(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    main = client.get(f"/api/chats/{chat_id}/branches").json()[0]
    client.post(
        f"/api/chats/{chat_id}/branches",
        json={"node_id": ids[0], "name": "早", "revision": rev(client, chat_id)},
    )
    back = client.post(
        f"/api/chats/{chat_id}/branches/{main['id']}/switch",
        json={"revision": rev(client, chat_id)},
    )
    assert back.status_code == 200
    # The two paths share the greeting: the answer starts below it.
    assert changed(back.json()) == (1, ids[1:])
    assert path_ids(client, chat_id) == ids
    edited = client.patch(
        f"/api/chats/{chat_id}/messages/{ids[2]}",
        json={"content": "Changed.", "revision": rev(client, chat_id)},
    ).json()
    assert edited["messages"][0]["content"] == "Changed."
    undone = client.post(
        f"/api/chats/{chat_id}/undo", json={"revision": rev(client, chat_id)}
    ).json()
    assert undone["messages"][2]["content"] == "A reply."
    redone = client.post(
        f"/api/chats/{chat_id}/redo", json={"revision": rev(client, chat_id)}
    ).json()
    assert redone["messages"][2]["content"] == "Changed."
    nothing = client.post(f"/api/chats/{chat_id}/redo", json={"revision": rev(client, chat_id)})
    assert nothing.status_code == 404 and nothing.json()["detail"]["message"]
    assert client.post(f"/api/chats/{chat_id}/undo", json={"revision": "x"}).status_code == 422


def test_each_speaker_gets_its_own_picture(client: TestClient, ctx: AppContext) -> None:
    outcome = ctx.chats.create_chat(
        "Group",
        characters=[CharacterRef("Ann", "doc-ann"), CharacterRef("Bo", None)],
        greetings=["Hi."],
        greeting_speaker="Bo",
    )
    out = ctx.chats.append(
        outcome.chat.id, NodeRole.ASSISTANT, "Hey.", revision=outcome.chat.revision, speaker="Ann"
    )
    ctx.chats.append(
        outcome.chat.id,
        NodeRole.ASSISTANT,
        "Narration.",
        revision=out.chat.revision,
        speaker="Someone",
    )
    pictures = [
        m["avatar_url"] for m in client.get(f"/api/chats/{outcome.chat.id}").json()["messages"]
    ]
    assert pictures == [None, "/api/characters/doc-ann/avatar", "/api/characters/doc-ann/avatar"]


def test_hide_a_range(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    data = client.post(
        f"/api/chats/{chat_id}/hide-range",
        json={"start": 0, "end": 1, "revision": rev(client, chat_id)},
    ).json()
    assert [m["hidden"] for m in data["messages"]] == [True, True, False]
    data = client.post(
        f"/api/chats/{chat_id}/hide-range",
        json={"start": 1, "end": 1, "hidden": False, "revision": rev(client, chat_id)},
    ).json()
    assert data["window"]["changed_from"] == 1
    assert [m["hidden"] for m in data["messages"]] == [False, False]
    assert (
        client.post(
            f"/api/chats/{chat_id}/hide-range",
            json={"start": 2, "end": 9, "revision": rev(client, chat_id)},
        ).status_code
        == 400
    )
    assert (
        client.post(
            f"/api/chats/{chat_id}/hide-range",
            json={"start": -1, "end": 1, "revision": rev(client, chat_id)},
        ).status_code
        == 422
    )
    assert [m["hidden"] for m in client.get(f"/api/chats/{chat_id}").json()["messages"]] == [
        True,
        False,
        False,
    ]


def test_checkpoints_create_list_open_delete(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    made = client.post(
        f"/api/chats/{chat_id}/checkpoints",
        json={"node_id": ids[1], "name": "前夜", "revision": rev(client, chat_id)},
    )
    assert made.status_code == 201
    listed = client.get(f"/api/chats/{chat_id}/checkpoints").json()
    assert [(c["name"], c["node_id"]) for c in listed] == [("前夜", ids[1])]
    tree = {n["id"]: n for n in client.get(f"/api/chats/{chat_id}/tree").json()}
    assert tree[ids[1]]["checkpoints"] == ["前夜"] and tree[ids[1]]["shown"]
    # The same name twice is refused, and nothing more is stored.
    again = client.post(
        f"/api/chats/{chat_id}/checkpoints",
        json={"node_id": ids[2], "name": "前夜", "revision": rev(client, chat_id)},
    )
    assert again.status_code == 400
    assert len(client.get(f"/api/chats/{chat_id}/checkpoints").json()) == 1
    opened = client.post(
        f"/api/chats/{chat_id}/checkpoints/{listed[0]['id']}/open",
        json={"revision": rev(client, chat_id)},
    )
    assert opened.status_code == 200
    assert changed(opened.json()) == (2, [])  # the path now ends at the checkpoint
    assert path_ids(client, chat_id) == ids[:2]
    gone = client.delete(
        f"/api/chats/{chat_id}/checkpoints/{listed[0]['id']}?revision={rev(client, chat_id)}"
    )
    assert gone.status_code == 200
    assert client.get(f"/api/chats/{chat_id}/checkpoints").json() == []
    # The messages stay; only the pointer went.
    assert [m["id"] for m in client.get(f"/api/chats/{chat_id}").json()["messages"]] == ids[:2]


def test_checkpoint_bad_input(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    url = f"/api/chats/{chat_id}/checkpoints"
    read = rev(client, chat_id)
    assert (
        client.post(url, json={"node_id": ids[1], "name": "", "revision": read}).status_code == 422
    )
    assert client.post(url, json={"node_id": 5, "name": "x", "revision": read}).status_code == 422
    missing = client.post(url, json={"node_id": "nope", "name": "x", "revision": read})
    assert missing.status_code == 404
    assert (
        client.post(
            "/api/chats/nope/checkpoints", json={"node_id": ids[1], "name": "x", "revision": 1}
        ).status_code
        == 404
    )
    assert client.post(f"{url}/nope/open", json={"revision": read}).status_code == 404
    assert client.delete(f"{url}/nope?revision={read}").status_code == 404
    assert client.get("/api/chats/nope/checkpoints").status_code == 404
    assert client.get(url).json() == []


def test_every_chat_write_must_name_a_revision_it_could_have_read(
    client: TestClient, ctx: AppContext
) -> None:
    chat_id, ids = make_chat(ctx)
    read = rev(client, chat_id)
    main = client.get(f"/api/chats/{chat_id}/branches").json()[0]["id"]
    mark = client.post(
        f"/api/chats/{chat_id}/checkpoints", json={"node_id": ids[1], "name": "m", "revision": read}
    ).json()
    checkpoint = client.get(f"/api/chats/{chat_id}/checkpoints").json()[0]["id"]
    before = client.get(f"/api/chats/{chat_id}").json()
    assert before["revision"] == mark["revision"]
    chat, message = f"/api/chats/{chat_id}", f"/api/chats/{chat_id}/messages/{ids[2]}"
    writes: list[tuple[str, str, dict[str, Any] | None]] = [
        ("patch", chat, {"title": "x"}),
        ("delete", chat, None),
        ("patch", message, {"content": "x"}),
        ("delete", message, None),
        ("post", f"{message}/restore", {}),
        ("post", f"{message}/hidden", {"hidden": True}),
        ("post", f"{message}/select", {"index": 1}),
        ("post", f"{message}/show", {}),
        ("post", f"{message}/resend", {"content": "x"}),
        ("post", f"{chat}/branches", {"node_id": ids[1], "name": "b"}),
        ("post", f"{chat}/branches/{main}/switch", {}),
        ("post", f"{chat}/checkpoints", {"node_id": ids[1], "name": "c"}),
        ("post", f"{chat}/checkpoints/{checkpoint}/open", {}),
        ("delete", f"{chat}/checkpoints/{checkpoint}", None),
        ("post", f"{chat}/undo", {}),
        ("post", f"{chat}/redo", {}),
        ("put", f"{chat}/lorebook", {"lorebook_id": None}),
        ("put", f"{chat}/authors-note", {"prompt": "x"}),
        ("post", f"{chat}/hide-range", {"start": 0, "end": 1}),
        ("post", f"{chat}/generate", {"kind": "normal", "text": "x"}),
        ("post", "/api/drafts/some-draft/keep", {}),
    ]
    for method, url, body in writes:
        for revision in (None, 2**63, 10**30, 0, -1):
            if body is None:
                target = url if revision is None else f"{url}?revision={revision}"
                response = client.request(method.upper(), target)
            else:
                sent = body if revision is None else {**body, "revision": revision}
                response = client.request(method.upper(), url, json=sent)
            assert response.status_code == 422, (method, url, revision, response.text)
            assert "revision" in response.text, (method, url, revision, response.text)
    assert client.get(f"/api/chats/{chat_id}").json() == before


def _st_chat(character: str) -> bytes:
    lines = [
        {"user_name": "You", "character_name": character, "create_date": "2024-05-01@10h00m00s"},
        {"name": character, "is_user": False, "send_date": "2024-05-01@10h00m01s", "mes": "Hi."},
        {"name": "You", "is_user": True, "send_date": "2024-05-01@10h00m02s", "mes": "Hello!"},
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


def test_one_chat_file_is_imported_with_its_character_or_the_one_chosen(
    client: TestClient,
) -> None:
    mira = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hi."}).json()
    ione = client.post("/api/characters", json={"name": "Ione", "first_mes": "Hey."}).json()
    upload = {"file": ("Mira - 2024-05-01.jsonl", _st_chat("Mira"), "application/jsonl")}
    found = client.post("/api/chats/import", files=upload)
    assert found.status_code == 201, found.text
    assert found.json()["messages"] == 2 and found.json()["already_imported"] is False
    chat = client.get(f"/api/chats/{found.json()['id']}").json()
    assert [m["content"] for m in chat["messages"]] == ["Hi.", "Hello!"]
    assert found.json()["id"] in [
        c["id"] for c in client.get(f"/api/chats?character_id={mira['id']}").json()
    ]
    again = client.post("/api/chats/import", files=upload)
    assert again.json()["already_imported"] is True and again.json()["id"] == found.json()["id"]
    # A file naming a character the library lacks: refused, nothing stored, the name given.
    before = len(client.get("/api/chats").json())
    stranger = {"file": ("Nemo.jsonl", _st_chat("Nemo"), "application/jsonl")}
    refused = client.post("/api/chats/import", files=stranger)
    assert refused.status_code == 400
    assert refused.json()["detail"]["code"] == "chat_needs_character"
    assert refused.json()["detail"]["params"] == {"name": "Nemo"}
    assert len(client.get("/api/chats").json()) == before
    chosen = client.post("/api/chats/import", files=stranger, data={"character_id": ione["id"]})
    assert chosen.status_code == 201, chosen.text
    listed = client.get(f"/api/chats?character_id={ione['id']}").json()
    assert chosen.json()["id"] in [c["id"] for c in listed]
    bad = client.post("/api/chats/import", files={"file": ("x.jsonl", b"not json", "text/plain")})
    assert bad.status_code in (400, 422) and "x.jsonl" in bad.text
