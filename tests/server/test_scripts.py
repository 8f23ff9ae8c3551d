"""The chat's script endpoint: a line starting with `/` runs as STscript in the chat."""

from __future__ import annotations

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taverna.engine.script import CATALOGUE
from taverna.server.context import AppContext
from taverna.services.library.editing import create_character
from taverna.services.library.service import LibraryService
from tests.server.conftest import rev
from tests.server.test_chats import make_chat


def test_a_script_writes_messages_and_variables(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    answer = client.post(
        f"/api/chats/{chat_id}/script",
        json={
            "text": "/setvar key=mood calm | /sys The wind rises. | /echo {{getvar::mood}}",
            "revision": rev(client, chat_id),
        },
    )
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["pipe"] == "calm"
    assert data["notices"] == [{"severity": "info", "text": "calm"}]
    assert [m["content"] for m in data["chat"]["messages"]][-1] == "The wind rises."
    assert data["follow_up"] is None
    narrator = ctx.chats.active_path(chat_id).nodes[-1]
    assert dict(ctx.chats.state_at(chat_id, narrator.id).variables) == {"mood": "calm"}
    assert dict(ctx.chats.state_at(chat_id, ids[1]).variables) == {}


def test_a_script_asks_for_a_reply(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    data = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": "/trigger", "revision": rev(client, chat_id)},
    ).json()
    assert data["follow_up"] == "trigger"


def test_a_script_error_names_the_command_and_position(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    answer = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": "/pass ok |\n/var nope 1", "revision": rev(client, chat_id)},
    )
    assert answer.status_code == 400
    assert answer.json()["detail"]["message"].startswith("/var at 2:1: no such variable")


def test_a_stale_revision_is_a_conflict(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    answer = client.post(f"/api/chats/{chat_id}/script", json={"text": "/send hi", "revision": 1})
    assert answer.status_code == 409


def test_variables_are_read_and_replaced_per_branch(client: TestClient, ctx: AppContext) -> None:
    chat_id, ids = make_chat(ctx)
    client.post(
        f"/api/chats/{chat_id}/script",
        json={
            "text": "/setvar key=hp 10 | /setglobalvar key=day 3",
            "revision": rev(client, chat_id),
        },
    )
    data = client.get(f"/api/chats/{chat_id}/variables").json()
    assert data["local"] == {"hp": "10"} and data["global"] == {"day": "3"}
    assert data["node_id"] == ids[-1]
    saved = client.put(
        f"/api/chats/{chat_id}/variables",
        json={"local": {"hp": "7", "name": "Mira"}, "revision": rev(client, chat_id)},
    ).json()
    assert saved["local"] == {"hp": "7", "name": "Mira"}
    assert dict(ctx.chats.state_at(chat_id, ids[0]).variables) == {}
    assert client.put("/api/variables", json={"global": {"day": 4}}).json() == {"day": 4}
    assert client.get("/api/variables").json() == {"day": 4}
    assert (
        client.put(
            f"/api/chats/{chat_id}/variables",
            json={"local": {"": "x"}, "revision": rev(client, chat_id)},
        ).status_code
        == 422
    )


def test_an_injection_reaches_the_next_prompt(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    before = client.get(f"/api/chats/{chat_id}/prompt")
    assert before.status_code == 200, before.text
    client.post(
        f"/api/chats/{chat_id}/script",
        json={
            "text": "/inject id=weather position=chat depth=0 role=user It is raining on {{user}}.",
            "revision": rev(client, chat_id),
        },
    )
    prompt = client.get(f"/api/chats/{chat_id}/prompt").text
    assert "It is raining on Ann." in prompt
    client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": "/flushinject weather", "revision": rev(client, chat_id)},
    )
    assert "It is raining" not in client.get(f"/api/chats/{chat_id}/prompt").text


_WORDS = st.sampled_from(
    [
        f"/{name}"
        for name in sorted(CATALOGUE)
        if name not in ("trigger", "continue", "swipe", "impersonate")
    ]
    + [
        "|",
        "||",
        "{:",
        ":}",
        ":}()",
        '"',
        "\\",
        "\\|",
        "{{pipe}}",
        "{{var::x}}",
        "key=x",
        "left=x",
        "rule=eq",
        "index=0",
        "guard=off",
        "1",
        "0-1",
        "x",
        "hi",
        "\n",
        "/*",
        "*|",
        "id=a",
        "name=Bob",
        "at=0",
        "{{getvar::x}}",
        "[1]",
        "/:x",
    ]
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(_WORDS, max_size=20).map(" ".join))
def test_fuzzed_scripts_never_crash_the_server(
    client: TestClient, ctx: AppContext, script: str
) -> None:
    chat_id = _fuzz_chat(ctx)
    answer = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": script or "/pass", "revision": rev(client, chat_id)},
    )
    assert answer.status_code in (200, 400, 404), answer.text
    assert client.get(f"/api/chats/{chat_id}").status_code == 200


def _fuzz_chat(ctx: AppContext) -> str:
    """One chat per server context for the fuzzed scripts (they add to it as they run)."""
    found = ctx.services.get("fuzzed chat")
    if not isinstance(found, str):
        found = ctx.services["fuzzed chat"] = make_chat(ctx)[0]
    return found


def test_a_quick_reply_reads_the_chat_input(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    ran = client.post(
        f"/api/chats/{chat_id}/script",
        json={
            "text": "/pass You typed: {{input}}",
            "revision": rev(client, chat_id),
            "input": "hello",
        },
    ).json()
    assert ran["pipe"] == "You typed: hello"


def test_setinput_hands_the_page_new_input_text(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    data = client.post(
        f"/api/chats/{chat_id}/script",
        json={
            "text": "/setinput Draft reply | /pass [{{input}}]",
            "revision": rev(client, chat_id),
        },
    ).json()
    assert data["pipe"] == "[Draft reply]"
    assert data["input"] == "Draft reply"
    untouched = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": "/pass x", "revision": rev(client, chat_id)},
    ).json()
    assert untouched["input"] is None


def test_stop_finds_no_generation_in_an_idle_chat(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    data = client.post(
        f"/api/chats/{chat_id}/script",
        json={"text": "/stop", "revision": rev(client, chat_id)},
    ).json()
    assert data["pipe"] == "false"


def test_page_commands_change_settings_and_tags(client: TestClient, ctx: AppContext) -> None:
    chat_id, _ids = make_chat(ctx)
    create_character(LibraryService(ctx.chats.store), {"name": "Mira", "tags": ["guide"]})
    script = (
        "/sysprompt-state off | /setvar key=a {{pipe}} | /sysprompt-state | /setvar key=b {{pipe}}"
        " | /tag-add harbour | /tag-exists harbour | /setvar key=c {{pipe}}"
        " | /tag-remove harbour | /tag-list | /pass {{getvar::a}}/{{getvar::b}}/{{getvar::c}}/[{{pipe}}]"
    )
    data = client.post(
        f"/api/chats/{chat_id}/script", json={"text": script, "revision": rev(client, chat_id)}
    ).json()
    assert data["pipe"] == "false/false/true/[guide]"
