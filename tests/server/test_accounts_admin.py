"""The admin's page over HTTP: every account with what it uses and whether its name is
locked out; unlock, disable, delete (with everything it owns); a person's own limits and
password; SillyTavern users imported from a folder on the server machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext
from taverna.services.accounts.service import LoginLimits
from taverna.services.chats.editing import start_chat
from taverna.services.library.service import LibraryKind
from tests.server.accounts_fixtures import PASSWORD, enable_accounts, log_in
from tests.server.test_accounts_import import make_install
from tests.support.api import events as task_events

WRONG = "not the password"


@pytest.fixture
def app(ctx: AppContext) -> Iterator[object]:
    accounts = enable_accounts(ctx, "alice", "bob", admin="root")
    accounts.limits = LoginLimits(per_name=3, per_address=50)
    app = create_app(ctx)
    with TestClient(app):
        yield app


def browser(app: object, name: str = "", password: str = PASSWORD) -> TestClient:
    browser = TestClient(app)  # type: ignore[arg-type]
    if name:
        log_in(browser, name, password)
    return browser


def users(root: TestClient) -> dict[str, dict[str, object]]:
    answer = root.get("/api/users")
    assert answer.status_code == 200, answer.text
    return {u["name"]: u for u in answer.json()}


def test_the_list_says_what_each_uses_and_who_is_locked_out(app: object, ctx: AppContext) -> None:
    root = browser(app, "root")
    alice = browser(app, "alice")
    assert alice.put("/api/quick-replies", json={"name": "A", "replies": []}).status_code == 200
    ctx.services["accounts"].count_generation(ctx.store.account(name="alice").id)
    stranger = browser(app)
    refused = [
        stranger.post("/api/login", json={"name": "Bob", "password": WRONG}).status_code
        for _ in range(4)
    ]
    assert refused == [401, 401, 401, 429]

    seen = users(root)
    assert seen["alice"]["used_bytes"] > 0  # type: ignore[operator]
    assert seen["alice"]["generations_last_hour"] == 1
    assert seen["root"]["generations_last_hour"] == 0
    assert seen["bob"]["locked_seconds"] > 0  # type: ignore[operator]
    assert seen["alice"]["locked_seconds"] == 0
    assert [seen[n]["disabled"] for n in ("alice", "bob", "root")] == [False] * 3

    unlocked = root.delete("/api/users/bob/lockout")
    assert unlocked.status_code == 200 and unlocked.json()["locked_seconds"] == 0
    assert users(root)["bob"]["locked_seconds"] == 0
    log_in(stranger, "bob")  # at once, without waiting out the window
    assert root.delete("/api/users/nobody/lockout").status_code == 404


def test_a_disabled_account_is_logged_out_and_may_not_log_in_until_enabled(app: object) -> None:
    root = browser(app, "root")
    bob = browser(app, "bob")
    assert bob.get("/api/chats").status_code == 200
    disabled = root.put("/api/users/bob/disabled", json={"disabled": True})
    assert disabled.status_code == 200 and disabled.json()["disabled"] is True
    assert bob.get("/api/chats").status_code == 401
    again = bob.post("/api/login", json={"name": "bob", "password": PASSWORD})
    assert again.status_code == 401
    assert again.json()["detail"]["code"] == "account_disabled"
    # a wrong password says only what it says for anyone
    wrong = bob.post("/api/login", json={"name": "bob", "password": WRONG})
    assert wrong.json()["detail"]["code"] == "wrong_account_name_or_password"
    assert root.put("/api/users/bob/disabled", json={"disabled": False}).status_code == 200
    log_in(bob, "bob")
    assert bob.get("/api/chats").status_code == 200


def test_an_admin_may_not_disable_or_delete_their_own_account(app: object) -> None:
    root = browser(app, "root")
    for refused in (
        root.put("/api/users/root/disabled", json={"disabled": True}),
        root.delete("/api/users/root"),
    ):
        assert refused.status_code == 409
        assert refused.json()["detail"]["code"] == "not_your_own_account"
    assert root.get("/api/users").status_code == 200


def test_deleting_an_account_removes_everything_it_owns_and_nothing_else(
    app: object, ctx: AppContext
) -> None:
    root = browser(app, "root")
    alice = browser(app, "alice")
    bob = browser(app, "bob")
    for name, person in (("alice", alice), ("bob", bob)):
        owner = ctx.store.account(name=name).id
        card = ctx.library(owner).import_bytes(_card(), "Ione.png")
        start_chat(ctx.chats, card.id, title=f"{name}'s chat", owner=owner)
        assert person.put("/api/quick-replies", json={"name": name, "replies": []}).is_success
    alice_id = ctx.store.account(name="alice").id

    gone = root.delete("/api/users/alice")
    assert gone.status_code == 200, gone.text
    assert gone.json() == {"name": "alice", "chats": 1, "documents": gone.json()["documents"]}
    assert gone.json()["documents"] >= 2  # the card and the quick-reply set at least
    assert alice.get("/api/chats").status_code == 401
    assert "alice" not in users(root)
    assert ctx.store.list_chats(owner=alice_id) == []
    assert ctx.store.find_documents(LibraryKind.CHARACTER.value, owner=alice_id) == []
    assert ctx.store.stored_bytes(alice_id) == 0
    # Bob's things are all still there.
    assert [c["title"] for c in bob.get("/api/chats").json()] == ["bob's chat"]
    assert [c["name"] for c in bob.get("/api/characters").json()] == ["Ione Calder"]
    # the name is free again, for a new account with an empty library
    added = root.post("/api/users", json={"name": "alice", "password": PASSWORD, "empty": True})
    assert added.status_code == 201
    assert browser(app, "alice").get("/api/chats").json() == []
    assert root.delete("/api/users/nobody").status_code == 404


def test_a_person_sees_their_own_limits_and_changes_their_own_password(
    app: object, ctx: AppContext
) -> None:
    root = browser(app, "root")
    root.put("/api/users/alice/quota", json={"storage_bytes": 5000, "generations_per_hour": 7})
    alice = browser(app, "alice")
    elsewhere = browser(app, "alice")
    mine = alice.get("/api/me/account").json()
    assert mine["name"] == "alice" and mine["admin"] is False
    assert mine["storage_bytes"] == 5000 and mine["generations_per_hour"] == 7
    assert mine["generations_last_hour"] == 0 and mine["used_bytes"] >= 0

    wrong = alice.put("/api/me/password", json={"old_password": WRONG, "password": "a new secret"})
    assert wrong.status_code == 400
    assert wrong.json()["detail"]["code"] == "current_password_wrong"
    assert wrong.json()["detail"]["field"] == "old_password"
    short = alice.put("/api/me/password", json={"old_password": PASSWORD, "password": "short"})
    assert short.status_code == 400
    changed = alice.put(
        "/api/me/password", json={"old_password": PASSWORD, "password": "a new secret"}
    )
    assert changed.status_code == 200, changed.text
    # This browser stays logged in with the new session's token; the other one is out.
    alice.headers["X-CSRF-Token"] = changed.json()["csrf"]
    assert alice.put("/api/quick-replies", json={"name": "A", "replies": []}).status_code == 200
    assert elsewhere.get("/api/chats").status_code == 401
    log_in(browser(app), "alice", "a new secret")
    refused = browser(app).post("/api/login", json={"name": "alice", "password": PASSWORD})
    assert refused.status_code == 401


def test_wrong_current_passwords_count_against_the_login_limit(app: object) -> None:
    alice = browser(app, "alice")
    body = {"old_password": WRONG, "password": "a new secret"}
    assert [alice.put("/api/me/password", json=body).status_code for _ in range(4)] == [
        400,
        400,
        400,
        429,
    ]


def test_import_users_from_a_folder_on_the_server(app: object, tmp_path: Path) -> None:
    install = make_install(tmp_path / "SillyTavern")
    # the import runs as a task on the server's event loop: one that outlives the request
    with TestClient(app) as root:  # type: ignore[arg-type]
        log_in(root, "root")
        _import_and_follow(app, root, install)


def _import_and_follow(app: object, root: TestClient, install: Path) -> None:
    started = root.post(
        "/api/users/import", json={"path": str(install), "accounts": {"default-user": "root"}}
    )
    assert started.status_code == 202, started.text
    assert [(f["handle"], f["account"]) for f in started.json()["folders"]] == [
        ("alice", "alice"),
        ("bob", "bob"),
        ("carol", "carol"),
        ("default-user", "root"),
    ]
    events = task_events(root, started.json()["task"]["id"])
    progress = [data for name, data in events if name == "progress"]
    assert {p["folder"] for p in progress} == {"alice", "bob", "carol", "default-user"}
    assert any(p.get("total") for p in progress)
    name, done = events[-1]
    assert name == "done", done
    folders = {f["handle"]: f for f in done["folders"]}
    assert folders["alice"]["account"] == "alice"
    # the card, and the chat by the title its file gave it
    assert [s["kind"] for s in folders["alice"]["report"]["stored"]] == ["character", "chat"]
    assert folders["alice"]["report"]["stored"][0]["name"] == "Ione Calder"
    assert folders["carol"]["report"] is None
    assert folders["carol"]["skipped"]["code"] == "no_account_for_user_folder"
    assert folders["carol"]["skipped"]["params"] == {"name": "carol", "handle": "carol"}
    assert folders["default-user"]["account"] == "root"
    alice = browser(app, "alice")
    assert [c["name"] for c in alice.get("/api/characters").json()] == ["Ione Calder"]
    assert [b["name"] for b in root.get("/api/lorebooks").json()] == ["Brasswater"]
    # Only the admin who started it may follow it.
    assert alice.get(f"/api/tasks/{started.json()['task']['id']}/events").status_code == 404


def test_an_import_path_that_is_not_a_sillytavern_folder_names_the_path(
    app: object, tmp_path: Path
) -> None:
    root = browser(app, "root")
    missing = root.post("/api/users/import", json={"path": str(tmp_path / "nowhere")})
    assert missing.status_code == 404
    assert missing.json()["detail"]["code"] == "no_such_folder"
    assert missing.json()["detail"]["file"] == str(tmp_path / "nowhere")
    relative = root.post("/api/users/import", json={"path": "SillyTavern/data"})
    assert relative.status_code == 400
    assert relative.json()["detail"]["code"] == "folder_path_not_absolute"
    assert relative.json()["detail"]["field"] == "path"
    (tmp_path / "empty" / "data").mkdir(parents=True)
    empty = root.post("/api/users/import", json={"path": str(tmp_path / "empty")})
    assert empty.json()["detail"]["code"] == "no_sillytavern_user_folders_here"
    install = make_install(tmp_path / "SillyTavern")
    unknown = root.post(
        "/api/users/import", json={"path": str(install), "accounts": {"dave": "root"}}
    )
    assert unknown.status_code == 404
    assert unknown.json()["detail"]["code"] == "no_user_folder_found"


def test_a_person_who_is_not_an_admin_may_do_none_of_it(app: object, tmp_path: Path) -> None:
    bob = browser(app, "bob")
    install = make_install(tmp_path / "SillyTavern")
    for method, path, body in (
        ("GET", "/api/users", None),
        ("DELETE", "/api/users/alice", None),
        ("DELETE", "/api/users/alice/lockout", None),
        ("PUT", "/api/users/alice/disabled", {"disabled": True}),
        ("POST", "/api/users/import", {"path": str(install)}),
    ):
        answer = bob.request(method, path, json=body)
        assert answer.status_code == 403, (method, path)
        assert answer.json()["detail"]["code"] == "only_admin_may_do_this"
    root = browser(app, "root")
    assert not users(root)["alice"]["disabled"]
    assert browser(app, "alice").get("/api/characters").json() == []


def test_without_accounts_there_is_nothing_to_manage(client: TestClient) -> None:
    assert client.get("/api/users").json()["detail"]["code"] == "no_accounts_to_manage"
    assert client.get("/api/me/account").status_code == 404
    assert (
        client.put("/api/me/password", json={"old_password": "a", "password": "b"}).status_code
        == 404
    )


def _card() -> bytes:
    from importlib.resources import files

    return (files("taverna") / "data" / "Ione Calder.png").read_bytes()
