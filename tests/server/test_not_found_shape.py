"""With accounts, another account's id is answered exactly as an id that does not exist:
the same status, error code, field and message (the id aside). Every route whose path
names one library document or one chat (enumerated from the app) is called twice by Bob:
with Alice's id and with an id no one has."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.model.chat import new_id
from taverna.services.accounts.ownership import DOCUMENT_PARAMS
from tests.server.test_accounts_isolation import api_routes, body_for, sample_png, server

__all__ = ["server"]

NAMED = sorted(DOCUMENT_PARAMS | {"chat_id"})


def _shape(response: Any, asked: str) -> tuple[int, Any, Any, str]:
    body = response.json()
    detail = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(detail, dict):
        return response.status_code, None, None, str(body).replace(asked, "<id>")
    return (
        response.status_code,
        detail.get("code"),
        detail.get("field"),
        str(detail.get("message")).replace(asked, "<id>"),
    )


@pytest.mark.parametrize("param", NAMED)
def test_not_yours_and_not_there_are_one_answer(
    server: tuple[TestClient, TestClient, dict[str, Any]], param: str
) -> None:
    _alice, bob, ids = server
    theirs, nowhere = str(ids[param]), new_id()
    called = 0
    for method, path, route in api_routes(bob):
        if set(re.findall(r"\{([^}:]+)", path)) != {param}:
            continue
        answers = []
        for value in (theirs, nowhere):
            url = re.sub(r"\{[^}]+\}", value, path)
            query = {"revision": ids["revision"]}
            if any(p.name == "file" for p in route.dependant.body_params):
                upload = {"file": ("x.png", sample_png((0, 90, 0)), "image/png")}
                answers.append(bob.request(method, url, params=query, files=upload))
            elif route.dependant.body_params:
                body = body_for(method, path, ids)
                answers.append(bob.request(method, url, params=query, json=body))
            else:
                answers.append(bob.request(method, url, params=query))
        other, missing = answers
        where = f"{method} {path}"
        if other.status_code == 422 and missing.status_code == 422:
            continue  # the body was refused before any id was looked at
        assert other.status_code == 404, f"{where}: {other.text[:300]}"
        assert _shape(other, theirs) == _shape(missing, nowhere), where
        called += 1
    assert called >= 1, param
