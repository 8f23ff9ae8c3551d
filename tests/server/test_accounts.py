"""Accounts on the server: login and logout, sessions, CSRF, the admin's routes, quotas;
single-user mode unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext
from taverna.services.library.service import LibraryKind
from tests.server.accounts_fixtures import PASSWORD, enable_accounts, log_in


@pytest.fixture
def app_client(ctx: AppContext) -> Iterator[TestClient]:
    enable_accounts(ctx, "alice", "bob", admin="root")
    with TestClient(create_app(ctx)) as client:
        yield client


def other(client: TestClient) -> TestClient:
    """A second browser on the same server (its own cookies)."""
    return TestClient(client.app)


def test_single_user_mode_needs_no_login(client: TestClient) -> None:
    assert client.get("/api/me").json() == {"user": "", "mode": "single-user"}
    assert client.get("/api/chats").status_code == 200
    assert client.post("/api/login", json={"name": "a", "password": "b"}).status_code == 404


def test_without_a_session_the_api_answers_401_and_the_page_loads(
    app_client: TestClient,
) -> None:
    assert app_client.get("/api/chats").status_code == 401
    assert app_client.get("/api/me").status_code == 401
    assert app_client.get("/api/health").status_code == 200
    page = app_client.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower()


def test_login_sets_a_http_only_strict_cookie_and_logout_ends_it(
    app_client: TestClient,
) -> None:
    response = app_client.post("/api/login", json={"name": "alice", "password": PASSWORD})
    assert response.status_code == 200
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    me = response.json()
    assert me["name"] == "alice" and me["mode"] == "accounts" and len(me["csrf"]) > 30
    app_client.headers["X-CSRF-Token"] = me["csrf"]
    assert app_client.get("/api/chats").json() == []
    assert app_client.get("/api/me").json()["name"] == "alice"
    assert app_client.post("/api/logout").status_code == 204
    app_client.headers.pop("X-CSRF-Token")
    assert app_client.get("/api/chats").status_code == 401


def test_a_wrong_password_or_name_is_refused_alike(app_client: TestClient) -> None:
    wrong = app_client.post("/api/login", json={"name": "alice", "password": "nope nope"})
    nobody = app_client.post("/api/login", json={"name": "carol", "password": PASSWORD})
    assert wrong.status_code == nobody.status_code == 401
    assert wrong.json()["detail"]["message"] == nobody.json()["detail"]["message"]


def test_a_write_without_the_csrf_token_is_refused(app_client: TestClient) -> None:
    me = log_in(app_client, "alice")
    app_client.headers.pop("X-CSRF-Token")
    body = {"name": "A", "replies": []}
    refused = app_client.put("/api/quick-replies", json=body)
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]["message"]
    app_client.headers["X-CSRF-Token"] = "forged"
    assert app_client.put("/api/quick-replies", json=body).status_code == 403
    app_client.headers["X-CSRF-Token"] = me["csrf"]
    assert app_client.put("/api/quick-replies", json=body).status_code == 200


def test_passwords_are_stored_hashed(app_client: TestClient, ctx: AppContext) -> None:
    stored = ctx.store.account(name="alice").password_hash
    assert PASSWORD not in stored and stored.startswith("$argon2id$")


def test_the_admin_adds_people_resets_passwords_and_sets_quotas(app_client: TestClient) -> None:
    log_in(app_client, "root")
    added = app_client.post("/api/users", json={"name": "carol", "password": "a long secret"})
    assert added.status_code == 201
    again = app_client.post("/api/users", json={"name": "carol", "password": "a long secret"})
    assert again.status_code == 409
    assert (
        app_client.post("/api/users", json={"name": "dave", "password": "short"}).status_code == 400
    )
    names = [u["name"] for u in app_client.get("/api/users").json()]
    assert names == ["alice", "bob", "carol", "root"]

    carol = other(app_client)
    log_in(carol, "carol", "a long secret")
    reset = app_client.put("/api/users/carol/password", json={"password": "another secret"})
    assert reset.status_code == 200
    assert carol.get("/api/chats").status_code == 401  # a new password ends the sessions
    log_in(carol, "carol", "another secret")

    quota = {"storage_bytes": 1000, "generations_per_hour": 2}
    answer = app_client.put("/api/users/carol/quota", json=quota).json()
    assert answer["storage_bytes"] == 1000 and answer["generations_per_hour"] == 2
    # Someone who is not an admin may do none of it.
    assert carol.get("/api/users").status_code == 403
    assert carol.put("/api/users/carol/quota", json={}).status_code == 403


def test_the_storage_quota_refuses_an_upload_with_413(
    app_client: TestClient, ctx: AppContext
) -> None:
    log_in(app_client, "root")
    app_client.put("/api/users/alice/quota", json={"storage_bytes": 2000})
    alice = other(app_client)
    log_in(alice, "alice")
    small = alice.put("/api/quick-replies", json={"name": "A", "replies": []})
    assert small.status_code == 200
    big = alice.put(
        "/api/quick-replies", json={"name": "B", "replies": [{"label": "x", "message": "y" * 4000}]}
    )
    assert big.status_code == 413
    message = big.json()["detail"]["message"]
    assert "alice" in message and "2000" in message
    owner = ctx.store.account(name="alice").id
    assert [
        d.name for d in ctx.store.find_documents(LibraryKind.QUICK_REPLY_SET.value, owner=owner)
    ] == ["A"]


def test_the_generation_quota_answers_429(app_client: TestClient, ctx: AppContext) -> None:
    accounts = ctx.services["accounts"]
    accounts.set_quota("alice", storage_bytes=None, generations_per_hour=2)
    alice = ctx.store.account(name="alice").id
    accounts.count_generation(alice)
    accounts.count_generation(alice)
    with pytest.raises(Exception) as refused:
        accounts.count_generation(alice)
    assert "2 of 2 model requests this hour" in str(refused.value)
    # Over HTTP: the route answers 429 before any work.
    client = other(app_client)
    log_in(client, "alice")
    chat = ctx.chats.create_chat("Mine", owner=alice).chat
    response = client.post(
        f"/api/chats/{chat.id}/generate", json={"text": "hi", "revision": chat.revision}
    )
    assert response.status_code == 429
    assert "model requests this hour" in response.json()["detail"]["message"]
