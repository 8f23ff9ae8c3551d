"""A server with accounts over a real SQLite store, and clients logged in as its people."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi.testclient import TestClient

from taverna.providers.outbound import OutboundPolicy
from taverna.server.accounts import COOKIE
from taverna.server.context import AppContext
from taverna.services.accounts.service import AccountService

PASSWORD = "correct horse battery"


def enable_accounts(
    ctx: AppContext, *names: str, admin: str = "", outbound_allow: Sequence[str] = ("127.0.0.1",)
) -> AccountService:
    """Turn accounts on in `ctx` and add `names` (and `admin`, an admin) with PASSWORD.
    `outbound_allow`: what the operator lets accounts' model URLs reach besides public
    addresses (`server.toml`); the tests' model servers listen on 127.0.0.1."""
    accounts = AccountService(ctx.store)
    ctx.services["accounts"] = accounts
    if ctx.outbound is not None:
        ctx.outbound.policy = OutboundPolicy.of(outbound_allow)
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
