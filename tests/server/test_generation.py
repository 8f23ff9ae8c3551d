"""Generation endpoints against a local stub model server: send, stream (SSE, replayable),
regenerate into candidates, continue, impersonate, stop with a draft, edit and resend, prompt."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.server.context import AppContext
from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import events, generate


def test_send_streams_and_saves(client: TestClient, stub: StubServer, chat_id: str) -> None:
    stub.script(Reply(tokens=["The ", "lamp ", "is ", "lit."], delay=0.01))
    started = generate(client, chat_id, kind="normal", text="Is the lamp lit?")
    # the answer is the run and its place, not a view of the chat
    assert set(started) == {"task", "position", "round"} and started["position"] == 0
    assert started["task"]["status"] == "running"
    # the message is stored when the start answers, and the run's events say so
    question = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    assert question["content"] == "Is the lamp lit?"
    seen = events(client, started["task"]["id"])
    posted = [d for name, d in seen if name == "status" and d["type"] == "Posted"]
    assert [d["node_id"] for d in posted] == [question["id"]]
    assert "".join(d["text"] for name, d in seen if name == "delta") == "The lamp is lit."
    assert seen[-1][0] == "done"
    # Replay from the start after the end, and resume after a given event id.
    again = events(client, started["task"]["id"])
    assert [n for n, _ in again] == [n for n, _ in seen]
    resumed = events(client, started["task"]["id"], **{"Last-Event-ID": "2"})
    assert len(resumed) < len(seen)
    chat = client.get(f"/api/chats/{chat_id}").json()
    assert chat["messages"][-1]["content"] == "The lamp is lit."
    assert chat["messages"][-1]["generated"] is True
    assert chat["task"] is None
    sent = stub.requests[-1].body["messages"]
    assert any("lighthouse keeper" in m["content"] for m in sent)
    assert stub.problems == []


def test_regenerate_twice_gives_three_candidates(
    client: TestClient, stub: StubServer, chat_id: str
) -> None:
    for word in ("One.", "Two.", "Three."):
        stub.script(Reply(tokens=[word]))
        kind = "normal" if word == "One." else "regenerate"
        started = generate(client, chat_id, kind=kind, text="Hello" if kind == "normal" else None)
        assert events(client, started["task"]["id"])[-1][0] == "done"
    last = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    assert (last["content"], last["candidate_index"], last["candidate_count"]) == ("Three.", 3, 3)
    first = client.post(
        f"/api/chats/{chat_id}/messages/{last['id']}/select",
        json={"index": 1, "revision": rev(client, chat_id)},
    ).json()
    assert first["messages"][-1]["content"] == "One."
    # The regenerated prompt leaves the reply being replaced out.
    assert all(m["content"] != "Two." for m in stub.requests[-1].body["messages"])


def test_continue_and_impersonate(client: TestClient, stub: StubServer, chat_id: str) -> None:
    stub.script(Reply(tokens=["Hi."]), Reply(tokens=[" And more."]), Reply(tokens=["I wave back."]))
    events(client, generate(client, chat_id, kind="normal", text="Hey")["task"]["id"])
    events(client, generate(client, chat_id, kind="continue")["task"]["id"])
    assert client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["content"] == "Hi. And more."
    seen = events(client, generate(client, chat_id, kind="impersonate")["task"]["id"])
    assert seen[-1][0] == "done" and seen[-1][1]["text"] == "I wave back."
    assert client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["content"] == "Hi. And more."


def test_stop_mid_stream_keeps_a_draft(client: TestClient, stub: StubServer, chat_id: str) -> None:
    stub.script(Reply(tokens=[f"w{i} " for i in range(200)], delay=0.05))
    started = generate(client, chat_id, kind="normal", text="Tell me a long story")
    task = started["task"]["id"]
    assert client.get(f"/api/chats/{chat_id}").json()["task"]["id"] == task
    busy = client.post(
        f"/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": "again", "revision": rev(client, chat_id)},
    )
    assert busy.status_code == 409
    time.sleep(0.4)
    stopped = client.post(f"/api/tasks/{task}/stop").json()
    assert stopped["outcome"] == "stopped" and stopped["draft_id"]
    assert events(client, task)[-1][0] == "cancelled"
    chat = client.get(f"/api/chats/{chat_id}").json()
    assert (
        chat["messages"][-1]["content"] == "Tell me a long story"
    )  # nothing half-written in the tree
    drafts = client.get(f"/api/chats/{chat_id}/drafts").json()
    assert drafts and drafts[0]["text"].startswith("w0 ")
    kept = client.post(
        f"/api/drafts/{drafts[0]['id']}/keep", json={"revision": rev(client, chat_id)}
    )
    assert kept.status_code == 204
    assert client.delete(f"/api/drafts/{drafts[0]['id']}").status_code == 404  # kept, so gone
    assert client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["content"].startswith("w0 ")
    assert client.get(f"/api/chats/{chat_id}/drafts").json() == []


def test_edit_and_resend_keeps_the_old_turn(
    client: TestClient, stub: StubServer, chat_id: str
) -> None:
    stub.script(Reply(tokens=["Old answer."]), Reply(tokens=["New answer."]))
    events(client, generate(client, chat_id, kind="normal", text="Old question")["task"]["id"])
    chat = client.get(f"/api/chats/{chat_id}").json()
    question = chat["messages"][-2]
    resent = client.post(
        f"/api/chats/{chat_id}/messages/{question['id']}/resend",
        json={"content": "New question", "revision": rev(client, chat_id)},
    )
    assert resent.status_code == 202, resent.text
    events(client, resent.json()["task"]["id"])
    chat = client.get(f"/api/chats/{chat_id}").json()
    assert [m["content"] for m in chat["messages"][-2:]] == ["New question", "New answer."]
    assert chat["messages"][-2]["candidate_count"] == 2
    back = client.post(
        f"/api/chats/{chat_id}/messages/{chat['messages'][-2]['id']}/select",
        json={"index": 1, "revision": rev(client, chat_id)},
    ).json()
    assert [m["content"] for m in back["messages"][-2:]] == ["Old question", "Old answer."]


def test_prompt_inspector_shows_ledger_and_leaves_hidden_out(
    client: TestClient, stub: StubServer, chat_id: str
) -> None:
    stub.script(Reply(tokens=["Reply."]))
    events(client, generate(client, chat_id, kind="normal", text="A secret line")["task"]["id"])
    chat = client.get(f"/api/chats/{chat_id}").json()
    data = client.get(f"/api/chats/{chat_id}/prompt").json()
    contents = [m["content"] for m in data["prompt"]["messages"]]
    assert any("A secret line" in c for c in contents)
    assert data["prompt"]["ledger"]["items"]
    assert data["request"]["body"]["messages"]
    secret = chat["messages"][-2]
    client.post(
        f"/api/chats/{chat_id}/messages/{secret['id']}/hidden",
        json={"hidden": True, "revision": rev(client, chat_id)},
    )
    hidden = client.get(f"/api/chats/{chat_id}/prompt").json()
    assert not any("A secret line" in m["content"] for m in hidden["prompt"]["messages"])
    past = client.get(f"/api/chats/{chat_id}/messages/{chat['messages'][-1]['id']}/prompt")
    assert past.status_code == 200


def test_generation_bad_input(client: TestClient, chat_id: str) -> None:
    assert (
        client.post(
            f"/api/chats/{chat_id}/generate",
            json={"kind": "dance", "revision": rev(client, chat_id)},
        ).status_code
        == 422
    )
    assert (
        client.post(
            f"/api/chats/{chat_id}/generate",
            json={"kind": "normal", "text": 5, "revision": rev(client, chat_id)},
        ).status_code
        == 422
    )
    assert (
        client.post(
            "/api/chats/nope/generate", json={"kind": "normal", "text": "x", "revision": 1}
        ).status_code
        == 404
    )
    assert (
        client.post(
            f"/api/chats/{chat_id}/generate", json={"kind": "normal", "revision": 999}
        ).status_code
        == 409
    )
    assert client.get("/api/tasks/nope/events").status_code == 404
    assert client.post("/api/tasks/nope/stop").status_code == 404
    assert client.post("/api/drafts/nope/keep", json={"revision": 1}).status_code == 404
    assert client.delete("/api/drafts/nope").status_code == 404
    assert client.get("/api/chats/nope/prompt").status_code == 404
    # The greeting alone cannot be swiped into a generated candidate.
    assert (
        client.post(
            f"/api/chats/{chat_id}/generate",
            json={"kind": "swipe", "revision": rev(client, chat_id)},
        ).status_code
        == 400
    )
    assert len(client.get(f"/api/chats/{chat_id}").json()["messages"]) == 1


def test_no_connection_is_a_clear_error(client: TestClient) -> None:
    card = client.post("/api/characters", json={"name": "Solo", "first_mes": "Hi."}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    response = client.post(
        f"/api/chats/{chat['id']}/generate",
        json={"kind": "normal", "text": "hello", "revision": rev(client, chat["id"])},
    )
    assert response.status_code == 404
    assert "connection" in response.json()["detail"]["message"]
    assert len(client.get(f"/api/chats/{chat['id']}").json()["messages"]) == 1


def test_drop_a_draft(client: TestClient, stub: StubServer, chat_id: str) -> None:
    stub.script(Reply(tokens=[f"d{i} " for i in range(200)], delay=0.05))
    task = generate(client, chat_id, kind="normal", text="Go on")["task"]["id"]
    time.sleep(0.3)
    client.post(f"/api/tasks/{task}/stop")
    drafts = client.get(f"/api/chats/{chat_id}/drafts").json()
    assert client.delete(f"/api/drafts/{drafts[0]['id']}").status_code == 204
    assert client.get(f"/api/chats/{chat_id}/drafts").json() == []
    assert client.get(f"/api/tasks/{task}").json()["status"] == "done"


def test_authors_note_reaches_the_prompt_and_follows_the_path(
    client: TestClient, stub: StubServer, chat_id: str
) -> None:
    stub.script(Reply(tokens=["Fine."]))
    events(client, generate(client, chat_id, kind="normal", text="How are you?")["task"]["id"])
    assert client.get(f"/api/chats/{chat_id}/settings").json()["authors_note"] is None
    note = {"prompt": "[Style: terse, 简洁]", "interval": 1, "depth": 1, "position": 1, "role": 0}
    saved = client.put(
        f"/api/chats/{chat_id}/authors-note", json={**note, "revision": rev(client, chat_id)}
    )
    assert saved.status_code == 200, saved.text
    assert saved.json()["authors_note"]["prompt"] == "[Style: terse, 简洁]"
    prompt = client.get(f"/api/chats/{chat_id}/prompt").json()
    assert any("[Style: terse, 简洁]" in m["content"] for m in prompt["prompt"]["messages"])
    # A branch from before the note was set does not have it.
    greeting = client.get(f"/api/chats/{chat_id}").json()["messages"][0]
    client.post(
        f"/api/chats/{chat_id}/branches",
        json={"node_id": greeting["id"], "name": "before", "revision": rev(client, chat_id)},
    )
    assert client.get(f"/api/chats/{chat_id}/settings").json()["authors_note"] is None
    note["revision"] = rev(client, chat_id)
    for bad in ({**note, "position": 7}, {**note, "depth": -1}, {**note, "prompt": 3}):
        assert client.put(f"/api/chats/{chat_id}/authors-note", json=bad).status_code == 422
    assert client.put("/api/chats/nope/authors-note", json=note).status_code == 404


def test_the_prompt_shows_without_a_connection(client: TestClient) -> None:
    card = client.post(
        "/api/characters", json={"name": "Lone", "description": "Alone.", "first_mes": "Hi."}
    ).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    data = client.get(f"/api/chats/{chat['id']}/prompt").json()
    assert data["request"] is None
    assert any("Alone." in m["content"] for m in data["prompt"]["messages"])


def test_lorebook_timers_follow_the_path(
    client: TestClient, ctx: AppContext, stub: StubServer, chat_id: str
) -> None:
    book = client.post("/api/lorebooks", json={"name": "Dragons"}).json()
    book = client.post(f"/api/lorebooks/{book['id']}/entries").json()
    entry = {**book["entries"][0], "key": ["dragon"], "content": "DRAGON LORE", "sticky": 3}
    assert (
        client.put(f"/api/lorebooks/{book['id']}/entries/{entry['uid']}", json=entry).status_code
        == 200
    )
    assert (
        client.put(
            f"/api/chats/{chat_id}/lorebook",
            json={"lorebook_id": book["id"], "revision": rev(client, chat_id)},
        ).status_code
        == 200
    )
    stub.script(Reply(tokens=["Rawr."]))
    events(client, generate(client, chat_id, kind="normal", text="I see a dragon")["task"]["id"])
    assert any("DRAGON LORE" in m["content"] for m in stub.requests[-1].body["messages"])
    timers = ctx.chats.state_at(chat_id).timers
    assert "Dragons.0" in (timers.get("sticky") or {})
    # The preview is a dry run: it changes no timers.
    client.get(f"/api/chats/{chat_id}/prompt")
    assert ctx.chats.state_at(chat_id).timers == timers


class SaveRefused(Exception):
    """What the database (or anything else) might raise while a reply is stored."""


def test_a_reply_that_cannot_be_saved_waits_in_the_journal_until_it_can(
    client: TestClient, ctx: AppContext, stub: StubServer, chat_id: str, monkeypatch: Any
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise SaveRefused("the database said no")

    monkeypatch.setattr(ctx.chats, "add_reply", refuse)
    stub.script(Reply(tokens=["Lost ", "words."]))
    task = generate(client, chat_id, kind="normal", text="Hello?")["task"]["id"]
    seen = events(client, task)
    # finished and kept on the server's disk: done, being saved
    assert seen[-1][0] == "done" and seen[-1][1]["outcome"] == "saving"
    assert "could not save" in seen[-1][1]["message"] and "SaveRefused" in seen[-1][1]["message"]
    assert client.get(f"/api/tasks/{task}").json()["status"] == "done"
    assert client.post(f"/api/tasks/{task}/stop").status_code == 200
    [saving] = client.get(f"/api/chats/{chat_id}/drafts").json()
    assert saving["text"] == "Lost words." and saving["saving"] is True
    # The database takes it again: the page's next look finds the reply in the chat.
    monkeypatch.undo()
    assert client.get(f"/api/chats/{chat_id}/drafts").json() == []
    assert client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["content"] == "Lost words."
    # The chat is free: the next generation runs and is saved.
    stub.script(Reply(tokens=["Saved."]))
    again = generate(client, chat_id, kind="normal", text="Again?")["task"]["id"]
    assert events(client, again)[-1][0] == "done"
    assert client.get(f"/api/chats/{chat_id}").json()["messages"][-1]["content"] == "Saved."


def test_a_reply_whose_draft_cannot_be_kept_either_still_ends(
    client: TestClient, ctx: AppContext, stub: StubServer, chat_id: str, monkeypatch: Any
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise SaveRefused("the database said no")

    monkeypatch.setattr(ctx.chats, "add_reply", refuse)
    monkeypatch.setattr(ctx.store, "put_document", refuse)
    assert ctx.generation.journal is not None
    monkeypatch.setattr(ctx.generation.journal, "write", refuse)  # its disk is full too
    stub.script(Reply(tokens=["Lost."]))
    task = generate(client, chat_id, kind="normal", text="Hello?")["task"]["id"]
    seen = events(client, task)
    assert seen[-1][0] == "error" and seen[-1][1]["draft_id"] is None
    assert "could not be kept" in seen[-1][1]["message"]
    assert client.get(f"/api/tasks/{task}").json()["status"] == "done"
    assert client.post(f"/api/tasks/{task}/stop").status_code == 200
    monkeypatch.undo()
    stub.script(Reply(tokens=["Saved."]))
    again = generate(client, chat_id, kind="normal", text="Again?")["task"]["id"]
    assert events(client, again)[-1][0] == "done"


def test_stop_while_the_draft_cannot_be_kept_still_stops(
    client: TestClient, ctx: AppContext, stub: StubServer, chat_id: str, monkeypatch: Any
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise SaveRefused("the database said no")

    stub.script(Reply(tokens=[f"w{i} " for i in range(200)], delay=0.05))
    task = generate(client, chat_id, kind="normal", text="A long story")["task"]["id"]
    time.sleep(0.3)
    monkeypatch.setattr(ctx.store, "put_document", refuse)
    stopped = client.post(f"/api/tasks/{task}/stop")
    assert stopped.status_code == 200 and stopped.json()["outcome"] == "stopped"
    assert client.get(f"/api/tasks/{task}").json()["status"] == "done"
    monkeypatch.undo()
    stub.script(Reply(tokens=["Saved."]))
    assert events(client, generate(client, chat_id, kind="normal")["task"]["id"])[-1][0] == "done"


def test_a_lorebook_entry_runs_the_quick_reply_of_its_automation_id(
    client: TestClient, ctx: AppContext, stub: StubServer, chat_id: str
) -> None:
    book = client.post("/api/lorebooks", json={"name": "Weather"}).json()
    book = client.post(f"/api/lorebooks/{book['id']}/entries").json()
    entry = {**book["entries"][0], "key": ["rain"], "content": "It rains.", "automationId": "wet"}
    assert (
        client.put(f"/api/lorebooks/{book['id']}/entries/{entry['uid']}", json=entry).status_code
        == 200
    )
    client.put(
        f"/api/chats/{chat_id}/lorebook",
        json={"lorebook_id": book["id"], "revision": rev(client, chat_id)},
    )
    client.put(
        "/api/quick-replies",
        json={
            "name": "Auto",
            "active": True,
            "replies": [{"label": "Umbrella", "message": "/incvar wet", "automation_id": "wet"}],
        },
    )
    stub.script(Reply(tokens=["Drip."]))
    events(client, generate(client, chat_id, kind="normal", text="Is it rain?")["task"]["id"])
    reply = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    automations = client.get(f"/api/chats/{chat_id}/messages/{reply['id']}/automations").json()
    assert automations == ["wet"]
    offered = client.get(f"/api/chats/{chat_id}/quick-replies").json()["replies"]
    assert [r["automation_id"] for r in offered] == ["wet"]


def test_gen_and_genraw_bring_the_model_text_back_to_the_script(
    client: TestClient, ctx: AppContext, stub: StubServer, chat_id: str
) -> None:
    before = len(client.get(f"/api/chats/{chat_id}").json()["messages"])
    stub.script(Reply(tokens=["A ", "joke."]))
    ran = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": "/gen Tell a joke. | /setvar key=joke", "revision": rev(client, chat_id)},
    )
    assert ran.status_code == 200, ran.text
    assert ran.json()["pipe"] == "A joke."
    sent = stub.requests[-1].body["messages"]
    assert any("Tell a joke." in m["content"] for m in sent)
    assert any("lighthouse keeper" in m["content"] for m in sent)  # the chat's own prompt
    assert len(client.get(f"/api/chats/{chat_id}").json()["messages"]) == before
    assert client.get(f"/api/chats/{chat_id}/variables").json()["local"] == {"joke": "A joke."}

    stub.script(Reply(tokens=["Hi."]))
    raw = client.post(
        f"/api/chats/{chat_id}/script",
        json={
            "text": '/genraw system="Be terse." length=20 Say hi to {{user}}.',
            "revision": rev(client, chat_id),
        },
    ).json()
    assert raw["pipe"] == "Hi."
    body = stub.requests[-1].body
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", "Be terse."),
        ("user", "Say hi to User."),
    ]
    assert body.get("max_tokens") == 20 or body.get("max_completion_tokens") == 20

    stub.script(Reply(status=500, error_message="boom"))
    failed = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": "/genraw Anything", "revision": rev(client, chat_id)},
    )
    assert failed.status_code == 400
    assert failed.json()["detail"]["message"].startswith("/genraw at 1:1")


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (Reply(status=401), "auth"),
        (Reply(status=404), "not_found"),
        (Reply(status=429), "rate_limited"),
        (Reply(status=500), "server"),
        (Reply(stream_error="overloaded"), "server"),
    ],
)
def test_a_failed_reply_names_its_cause(
    client: TestClient, stub: StubServer, chat_id: str, reply: Reply, cause: str
) -> None:
    """The page words the failure in the person's language from `cause`."""
    stub.script(reply)
    started = generate(client, chat_id, kind="normal", text="Is the lamp lit?")
    name, data = events(client, started["task"]["id"])[-1]
    assert name == "error"
    assert data["cause"] == cause
    assert data["message"]


def test_every_event_is_a_frame_of_its_own_id_however_they_are_sent(
    client: TestClient, stub: StubServer, chat_id: str
) -> None:
    """Events sent together (a replay, or tokens that came at once) are still one SSE
    frame each, numbered by the event's index (those a page is not sent leave gaps), so
    a page resumes after any of them."""
    stub.script(Reply(tokens=["A ", "quiet ", "tide ", '"rolls" ', "in.\n"]))
    started = generate(client, chat_id, kind="normal", text="The sea?")
    task = started["task"]["id"]
    assert events(client, task)[-1][0] == "done"

    def frames(since: int) -> list[tuple[int, str, dict]]:  # type: ignore[type-arg]
        url = f"/api/tasks/{task}/events?since={since}"
        with client.stream("GET", url) as response:
            body = response.read().decode()
        out = []
        for block in body.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "id" in fields:
                out.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
        return out

    whole = frames(0)
    ids = [index for index, _, _ in whole]
    assert ids == sorted(set(ids)) and ids[0] == 0
    deltas = [data["text"] for _, name, data in whole if name == "delta"]
    assert "".join(deltas) == 'A quiet tide "rolls" in.\n'
    assert whole[-1][1] == "done"
    middle = ids[len(ids) // 2]
    assert frames(middle) == [frame for frame in whole if frame[0] >= middle]
