"""A server with accounts over a real SQLite store, and clients logged in as its people."""

from __future__ import annotations

from fastapi.testclient import TestClient

from taverna.server.accounts import COOKIE
from taverna.server.context import AppContext
from taverna.services.accounts import AccountService

PASSWORD = "correct horse battery"


def enable_accounts(ctx: AppContext, *names: str, admin: str = "") -> AccountService:
    """Turn accounts on in `ctx` and add `names` (and `admin`, an admin) with PASSWORD."""
    accounts = AccountService(ctx.store)
    ctx.services["accounts"] = accounts
    if admin:
        accounts.add(admin, PASSWORD, admin=True)
    for name in names:
        accounts.add(name, PASSWORD)
    return accounts


def log_in(client: TestClient, name: str, password: str = PASSWORD) -> dict[str, str]:
    """Log `client` in as `name`; what /api/login answered. Later writes carry its CSRF
    token, as the page's do."""
    response = client.post("/api/login", json={"name": name, "password": password})
    assert response.status_code == 200, response.text
    me: dict[str, str] = response.json()
    assert COOKIE in client.cookies
    client.headers["X-CSRF-Token"] = me["csrf"]
    return me
