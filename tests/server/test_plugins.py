"""Plugins, Quick Reply tools and event automations, and tool steps over the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from taverna.model.chat import NodeRole
from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from taverna.services.chats.generated_reply import ToolStep
from tests.plugins.install import write_distribution
from tests.server.conftest import rev
from tests.server.test_chats import make_chat


@pytest.fixture
def plugged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.syspath_prepend(str(write_distribution(tmp_path / "site")))
    context = open_context(tmp_path / "data")
    with TestClient(create_app(context)) as test_client:
        yield test_client


def test_the_plugins_are_listed_with_their_grants(plugged: TestClient) -> None:
    answer = plugged.get("/api/plugins")
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["grants"] == ["read_chats", "change_prompts", "call_models", "see_keys"]
    assert "message_edited" in data["events"] and "chat_completion_prompt_ready" in data["events"]
    by_name = {p["name"]: p for p in data["plugins"]}
    assert by_name["mood"]["grants"] == ["change_prompts", "read_chats"]
    assert by_name["mood"]["version"] == "1.0" and by_name["mood"]["error"] is None
    assert by_name["nosy"]["grants"] == []
    assert "read_minds" in by_name["broken"]["error"]


def test_a_quick_reply_keeps_its_tool_and_events(client: TestClient) -> None:
    tool = {
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    saved = client.put(
        "/api/quick-replies",
        json={
            "name": "Tools",
            "replies": [
                {"label": "weather", "message": "/pass sunny", "tool": tool},
                {"label": "watch", "message": "/pass", "events": ["message_edited"]},
            ],
        },
    )
    assert saved.status_code == 200, saved.text
    replies = saved.json()["replies"]
    assert replies[0]["tool"] == tool and replies[0]["events"] == []
    assert replies[1]["tool"] is None and replies[1]["events"] == ["message_edited"]
    exported = client.get(f"/api/quick-replies/{saved.json()['id']}/export").json()
    assert exported["qrList"][0]["tool"]["name"] == "weather"
    assert exported["qrList"][1]["executeOnEvents"] == ["message_edited"]
    assert "executeOnEvents" not in exported["qrList"][0]


@pytest.mark.parametrize(
    ("reply", "wrong"),
    [
        ({"label": "x", "events": ["on_full_moon"]}, "on_full_moon"),
        ({"label": "x", "tool": {"name": "bad name!"}}, "name"),
        ({"label": "x", "tool": {"name": "t", "parameters": {"type": "array"}}}, "object"),
    ],
)
def test_a_bad_tool_or_event_is_refused_naming_it(
    client: TestClient, reply: dict[str, object], wrong: str
) -> None:
    answer = client.put("/api/quick-replies", json={"name": "Bad", "replies": [reply]})
    assert answer.status_code == 422
    assert wrong in answer.text
    assert client.get("/api/quick-replies").json() == []  # nothing stored


def test_a_tool_step_is_shown_with_its_call_and_result(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    chat = ctx.chats.get_chat(chat_id)
    step = ToolStep("Let me roll.", "call_1", "roll_dice", '{"formula": "1d6"}', '{"total": 4}')
    ctx.chats.add_reply(
        chat_id,
        chat.active_leaf_id,
        "A four.",
        revision=rev(client, chat_id),
        speaker="Ione Calder",
        tool_steps=[step],
    )
    messages = client.get(f"/api/chats/{chat_id}").json()["messages"]
    shown = messages[-2]
    assert shown["role"] == NodeRole.SYSTEM.value and shown["hidden"] is True
    assert shown["tool_calls"] == [
        {
            "id": "call_1",
            "name": "roll_dice",
            "arguments": '{"formula": "1d6"}',
            "result": '{"total": 4}',
        }
    ]
    assert messages[-1]["tool_calls"] is None
