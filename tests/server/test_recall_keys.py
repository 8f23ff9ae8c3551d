"""The server's embeddings key goes only to the operator's endpoint. With accounts, a
person who names an embeddings endpoint of their own (`alt_endpoint_url`) never makes
the server send its key there: a canary key and two embeddings servers on 127.0.0.1, the
operator's and the person's, show where each key arrives. A person's own key is kept
encrypted, never read back, and sent only to the site it was given for."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from taverna.services.connections.secrets_file import SECRETS_FILE
from taverna.services.house.data import DATABASE_URL_ENV as STORE_URL_ENV
from taverna.store.testing import DATABASE_URL_ENV, backends
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.server.conftest import rev
from tests.stubs.embeddings_server import EmbeddingsStub, embeddings_stub

CANARY = "sk-operator-canary-7f3a9c"
OWN_KEY = "sk-bobs-own-key-4242"


@pytest.fixture(params=backends())
def ctx(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppContext]:
    """A server's context over SQLite, or over PostgreSQL in a schema of its own."""
    if request.param == "sqlite":
        context = open_context(tmp_path / "data")
        yield context
        context.close()
        return
    url = os.environ[DATABASE_URL_ENV]
    schema = f"t_{uuid.uuid4().hex[:16]}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    monkeypatch.setenv(STORE_URL_ENV, f"{url}?options=-csearch_path%3D{schema}")
    context = open_context(tmp_path / "data")
    try:
        yield context
    finally:
        context.close()
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


@pytest.fixture
def stubs(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EmbeddingsStub, EmbeddingsStub]]:
    """The operator's embeddings server (with the server's key) and one of a person's."""
    with embeddings_stub() as operator, embeddings_stub() as own:
        monkeypatch.setenv("TAVERNA_EMBEDDINGS_URL", operator.url)
        monkeypatch.setenv("TAVERNA_EMBEDDINGS_KEY", CANARY)
        yield operator, own


def _ok(response: object, status: int = 200) -> dict[str, object]:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    data: dict[str, object] = response.json()  # type: ignore[attr-defined]
    return data


def _say(client: TestClient, chat_id: str, text: str) -> None:
    body = {"text": f"/sys {text}", "revision": rev(client, chat_id)}
    _ok(client.post(f"/api/chats/{chat_id}/script", json=body))


def _embedded(stub: EmbeddingsStub, text: str, seconds: float = 20.0) -> list[str]:
    """The Authorization headers `stub` was sent once it embedded `text`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if any(text in t for t in stub.texts_of("emb")):
            with stub.lock:
                return list(stub.authorizations)
        time.sleep(0.02)
    raise AssertionError(f"{text!r} was never embedded at {stub.url}")


def test_the_operators_key_never_reaches_an_endpoint_a_person_names(
    ctx: AppContext, stubs: tuple[EmbeddingsStub, EmbeddingsStub]
) -> None:
    operator, own = stubs
    enable_accounts(ctx, "bob", admin="root")
    with TestClient(create_app(ctx)) as client:
        log_in(client, "bob")
        card = _ok(client.post("/api/characters", json={"name": "Keeper"}), 201)
        chat_id = str(_ok(client.post("/api/chats", json={"character_id": card["id"]}), 201)["id"])
        settings = {
            "enabled_chats": True,
            "source": "openai",
            "alt_endpoint_url": own.url,
            "openai_model": "emb",
        }
        _ok(client.put("/api/recall-settings", json=settings))
        _say(client, chat_id, "first words")
        assert _embedded(own, "first words")
        assert all(CANARY not in header for header in own.authorizations)
        assert own.authorizations and set(own.authorizations) == {""}

        # Bob's own key: kept encrypted, shown by its end only, sent to his endpoint.
        shown = _ok(client.put("/api/recall-settings", json={"api_key": OWN_KEY}))
        assert shown["api_key_hint"] == f"…{OWN_KEY[-4:]}"
        assert OWN_KEY not in json.dumps(shown)
        assert OWN_KEY not in json.dumps(_ok(client.get("/api/recall-settings")))
        secrets = (ctx.data_dir / SECRETS_FILE).read_text(encoding="utf-8")
        assert OWN_KEY not in secrets and CANARY not in secrets
        _say(client, chat_id, "second words")
        assert _embedded(own, "second words")[-1] == f"Bearer {OWN_KEY}"

        # Another site gets neither key, until a key is given with it.
        with embeddings_stub() as elsewhere:
            moved = {"alt_endpoint_url": elsewhere.url}
            assert _ok(client.put("/api/recall-settings", json=moved))["api_key_hint"] == ""
            _say(client, chat_id, "third words")
            assert set(_embedded(elsewhere, "third words")) == {""}

        # The operator's endpoint (named or left empty) gets the operator's key.
        _ok(client.put("/api/recall-settings", json={"alt_endpoint_url": ""}))
        _say(client, chat_id, "fourth words")
        assert set(_embedded(operator, "fourth words")) == {f"Bearer {CANARY}"}
    everything = [*own.authorizations]
    assert all(CANARY not in header for header in everything)


def test_a_key_is_refused_with_a_bad_setting_and_nothing_is_kept(
    ctx: AppContext, stubs: tuple[EmbeddingsStub, EmbeddingsStub]
) -> None:
    _, own = stubs
    enable_accounts(ctx, "bob", admin="root")
    with TestClient(create_app(ctx)) as client:
        log_in(client, "bob")
        bad = {"api_key": OWN_KEY, "alt_endpoint_url": own.url, "query": -1}
        assert client.put("/api/recall-settings", json=bad).status_code == 422
        assert _ok(client.get("/api/recall-settings"))["api_key_hint"] == ""
        no_site = client.put("/api/recall-settings", json={"api_key": OWN_KEY})
        assert no_site.status_code == 422
        assert no_site.json()["detail"]["code"] == "recall_key_needs_endpoint"
        line = client.put(
            "/api/recall-settings", json={"api_key": "sk-x\ny", "alt_endpoint_url": own.url}
        )
        assert line.status_code == 422
