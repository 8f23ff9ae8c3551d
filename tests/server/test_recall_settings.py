"""Recall's settings over HTTP: SillyTavern's names, changes merged, bad values refused
with the key named and nothing stored, and a turn after them recalls as they say."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


def test_recall_settings_read_and_changed_under_sillytavern_names(client: TestClient) -> None:
    settings = client.get("/api/recall-settings").json()
    assert settings["enabled_chats"] is False and settings["source"] == "transformers"
    assert (settings["query"], settings["insert"], settings["position"]) == (2, 3, 0)
    assert settings["template"] == "Past events:\n{{text}}"
    changed = client.put(
        "/api/recall-settings",
        json={"enabled_chats": True, "insert": 5, "position": 1, "depth": 4, "depth_role": 2},
    ).json()
    assert changed["enabled_chats"] is True and changed["insert"] == 5
    assert (changed["position"], changed["depth"], changed["depth_role"]) == (1, 4, 2)
    assert changed["query"] == 2  # left out: kept
    assert client.get("/api/recall-settings").json() == changed


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"insert": -1}, "insert"),
        ({"query": 0}, "query"),
        ({"enabled_chats": "yes"}, "enabled_chats"),
        ({"template": 5}, "template"),
        ({"position": 7}, "position"),
        ({"depth_role": True}, "depth_role"),
        ({"score_threshold": 2}, "score_threshold"),
        ({"source": "palm"}, "source"),
        ({"alt_endpoint_url": "file:///etc/passwd"}, "alt_endpoint_url"),
    ],
)
def test_a_bad_recall_setting_is_refused_and_nothing_stored(
    client: TestClient, body: dict[str, object], field: str
) -> None:
    before = client.get("/api/recall-settings").json()
    answer = client.put("/api/recall-settings", json={"budget": 123, **body})
    assert answer.status_code in (400, 422)
    assert field in answer.text
    assert client.get("/api/recall-settings").json() == before
