"""Every 5xx answer has the project's JSON error shape: a full disk (507), a database or
Redis that does not answer (503), a bug (500), never the framework's plain text."""

from __future__ import annotations

import errno
import sqlite3

import pytest
import redis
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from taverna.server.errors import install_error_handlers


def _app(error: Exception) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/write")
    def write() -> None:
        raise error

    return app


def _database_full() -> Exception:
    return sa.exc.OperationalError(
        "INSERT", {}, sqlite3.OperationalError("database or disk is full")
    )


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), 507, "disk_full"),
        (OSError(errno.EFBIG, "File too large"), 507, "disk_full"),
        (_database_full(), 507, "disk_full"),
        (
            sa.exc.OperationalError("SELECT 1", {}, Exception("connection refused")),
            503,
            "store_unavailable",
        ),
        (redis.ConnectionError("Error 111 connecting to 127.0.0.1:6390"), 503, "store_unavailable"),
        (RuntimeError("a bug"), 500, "internal"),
    ],
)
def test_an_unexpected_error_answers_json(error: Exception, status: int, code: str) -> None:
    client = TestClient(_app(error), raise_server_exceptions=False)
    answer = client.post("/write")
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("application/json")
    detail = answer.json()["detail"]
    assert detail["code"] == code
    assert detail["message"]
    assert "a bug" not in detail["message"]  # the server's insides stay in its log
