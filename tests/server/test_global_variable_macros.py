"""Global variables set by prompt macros ({{setglobalvar}}, {{addglobalvar}}) are kept after
the reply is stored, as SillyTavern saves them; a preview (dry run) keeps nothing."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.stubs.model_server import Reply, StubServer
from tests.support.api import connect, events, generate, start_chat


def test_macros_keep_global_variables_after_a_stored_reply(
    client: TestClient, stub: StubServer
) -> None:
    connect(client, stub)
    chat_id = start_chat(
        client,
        name="Wren",
        description="Visits before this one: {{getglobalvar::visits}}.",
        personality="{{addglobalvar::visits::1}}curious",
        first_mes="Hi.",
    )
    assert client.get(f"/api/chats/{chat_id}/prompt").status_code == 200  # a preview
    assert client.get("/api/variables").json() == {}
    for visit in (1, 2):
        stub.script(Reply(tokens=["Hello again."]))
        started = generate(client, chat_id, kind="normal", text="Hello")
        assert events(client, started["task"]["id"])[-1][0] == "done"
        assert client.get("/api/variables").json() == {"visits": visit}
        # the next turn's prompt reads what the last stored turn kept
        sent = " ".join(m["content"] for m in stub.requests[-1].body["messages"])
        before = "" if visit == 1 else str(visit - 1)
        assert f"Visits before this one: {before}." in sent, sent
