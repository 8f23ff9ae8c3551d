"""Every error answer names a stable code (with the values its sentence needs) that a page
says in its own language; the English message stays for the API and the command line."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from taverna.errors import FormatError, NotFound
from taverna.server.context import AppContext
from taverna.server.errors import code_of
from tests.server.conftest import rev
from tests.server.test_chats import make_chat
from tests.stubs.model_server import StubServer
from tests.support.api import stub_connection

pytestmark = pytest.mark.stub_model(key="sk-test-secret-1234")


def detail(response: object) -> dict[str, object]:
    body = response.json()  # type: ignore[attr-defined]
    assert isinstance(body["detail"], dict)
    return body["detail"]


def test_an_error_names_its_code_and_keeps_the_english_message(
    client: TestClient, ctx: AppContext
) -> None:
    chat_id, _ = make_chat(ctx)
    redone = client.post(f"/api/chats/{chat_id}/redo", json={"revision": rev(client, chat_id)})
    assert redone.status_code == 404
    assert detail(redone)["code"] == "nothing_to_redo"
    assert detail(redone)["message"] == "nothing to redo"

    stale = client.post(f"/api/chats/{chat_id}/redo", json={"revision": rev(client, chat_id) + 5})
    assert stale.status_code == 409
    assert detail(stale)["code"] == "stale_revision"

    first = client.post("/api/lorebooks", json={"name": "Atlas"})
    assert first.status_code in (200, 201)
    taken = client.post("/api/lorebooks", json={"name": "Atlas"})
    assert taken.status_code == 409
    assert detail(taken)["code"] == "name_taken"
    assert detail(taken)["params"] == {"name": "Atlas"}
    assert "Atlas" in str(detail(taken)["message"])


def test_an_error_of_a_kind_with_no_code_of_its_own_names_its_kind(client: TestClient) -> None:
    # every error the product raises names its own code (test_error_catalog.py); one made
    # without (a plugin's, say) is answered with its kind's
    assert code_of(NotFound("gone")) == "not_found"
    assert code_of(FormatError("bad")) == "unreadable"
    missing = client.get("/api/chats/no-such-chat")
    assert missing.status_code == 404
    assert detail(missing)["code"] == "no_chat"
    assert detail(missing)["params"] == {"chat_id": "no-such-chat"}
    nowhere = client.get("/api/no-such-path")
    assert detail(nowhere)["code"] == "http_404"


def test_a_refused_field_names_the_check_that_failed(client: TestClient) -> None:
    refused = client.post("/api/lorebooks", json={"name": ""})
    assert refused.status_code == 422
    first = refused.json()["detail"][0]
    # FastAPI's own answer: the page makes `invalid.<type>` of it, with its context.
    assert first["type"] == "string_too_short"
    assert first["ctx"]["min_length"] == 1


def test_a_failed_connection_test_says_why_in_a_code(client: TestClient, stub: StubServer) -> None:
    body = stub_connection(stub, "bad", key="sk-wrong-9999")
    client.post("/api/connections", json=body)
    tested = client.post("/api/connections/bad/test").json()
    assert tested["ok"] is False
    assert tested["cause"] == "auth"
    assert tested["message"]
