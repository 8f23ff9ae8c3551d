"""Login rate limits: per account name and per client address, answered with 429 and a
Retry-After header; a correct password does not get through while the limit holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext
from taverna.services.accounts.service import LoginLimits
from tests.server.accounts_fixtures import PASSWORD, enable_accounts

WRONG = "not the password"


@pytest.fixture
def app(ctx: AppContext) -> Iterator[object]:
    accounts = enable_accounts(ctx, "alice", "bob", "carol")
    accounts.limits = LoginLimits(per_name=3, per_address=5)
    app = create_app(ctx)
    with TestClient(app):
        yield app


def _login(client: TestClient, name: str, password: str) -> int:
    return client.post("/api/login", json={"name": name, "password": password}).status_code


def test_an_account_name_is_refused_for_a_while_after_its_failures(app: object) -> None:
    home = TestClient(app, client=("192.0.2.1", 50000))  # type: ignore[arg-type]
    assert [_login(home, "alice", WRONG) for _ in range(3)] == [401, 401, 401]
    refused = home.post("/api/login", json={"name": "alice", "password": PASSWORD})
    assert refused.status_code == 429
    wait = int(refused.headers["Retry-After"])
    assert 1 <= wait <= 15 * 60
    detail = refused.json()["detail"]
    assert detail["code"] == "too_many_logins" and detail["params"]["seconds"] == wait
    assert "try again" in detail["message"]
    # From elsewhere too: the limit is the name's, not the address's.
    away = TestClient(app, client=("198.51.100.7", 50000))  # type: ignore[arg-type]
    assert _login(away, "alice", PASSWORD) == 429
    # Another person from the same address still logs in.
    assert _login(home, "bob", PASSWORD) == 200
    # A name no account has is limited the same way (names are not probed).
    assert [_login(away, "nobody", WRONG) for _ in range(4)] == [401, 401, 401, 429]


def test_an_address_is_refused_after_failures_across_names(app: object) -> None:
    noisy = TestClient(app, client=("203.0.113.9", 50000))  # type: ignore[arg-type]
    names = ["alice", "bob", "carol", "dave", "erin"]
    assert [_login(noisy, name, WRONG) for name in names] == [401] * 5
    refused = noisy.post("/api/login", json={"name": "carol", "password": PASSWORD})
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    quiet = TestClient(app, client=("192.0.2.50", 50000))  # type: ignore[arg-type]
    assert _login(quiet, "carol", PASSWORD) == 200


def test_a_successful_login_clears_the_names_failures(app: object) -> None:
    client = TestClient(app, client=("192.0.2.60", 50000))  # type: ignore[arg-type]
    assert [_login(client, "alice", WRONG) for _ in range(2)] == [401, 401]
    assert _login(client, "alice", PASSWORD) == 200
    assert [_login(client, "alice", WRONG) for _ in range(2)] == [401, 401]
    assert _login(client, "alice", PASSWORD) == 200


def test_the_window_passes(ctx: AppContext) -> None:
    accounts = enable_accounts(ctx, "alice")
    accounts.limits = LoginLimits(per_name=1, per_address=10)
    from datetime import timedelta

    from taverna.errors import NotLoggedIn, TooManyLogins

    with pytest.raises(NotLoggedIn):
        accounts.login("alice", WRONG, address="a")
    with pytest.raises(TooManyLogins):
        accounts.login("alice", PASSWORD, address="a")
    accounts.limits = LoginLimits(per_name=1, per_address=10, window=timedelta(seconds=0))
    token, session = accounts.login("alice", PASSWORD, address="a")
    assert token and session.account.name == "alice"
