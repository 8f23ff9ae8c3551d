"""Regex scripts over the API: the three layers, consent, import and export of
SillyTavern's files, the test box, and what the chat view shows against what it stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.server.context import AppContext
from tests.server.conftest import rev
from tests.server.test_chats import make_chat


def rule(name: str, find: str, replace: str, **more: Any) -> dict[str, Any]:
    return {"scriptName": name, "findRegex": find, "replaceString": replace,
            "placement": [1, 2], **more}  # fmt: skip


def test_global_scripts_are_saved_in_order_and_shape_stored_and_shown_text(
    client: TestClient, ctx: AppContext
) -> None:
    saved = client.put(
        "/api/regex/global",
        json={
            "scripts": [
                rule("Stars", "/\\*/g", "", markdownOnly=True),
                rule("Tidy", "/ +/g", " "),
            ]
        },
    )
    assert saved.status_code == 200, saved.text
    assert [s["scriptName"] for s in saved.json()["scripts"]] == ["Stars", "Tidy"]
    chat_id, ids = make_chat(ctx)
    view = client.get(f"/api/chats/{chat_id}").json()
    greeting = view["messages"][0]
    assert greeting["content"] == "Hello, *traveller*."  # stored as written
    assert greeting["shown"] == "Hello, traveller."  # shown without the stars
    edited = client.patch(
        f"/api/chats/{chat_id}/messages/{ids[1]}",
        json={"content": "so   many   spaces", "revision": rev(client, chat_id)},
    )
    assert edited.status_code == 200, edited.text
    # "Tidy" has no runOnEdit: the edit is stored as typed.
    stored = ctx.chats.store.get_node(chat_id, ids[1]).content
    assert stored == "so   many   spaces"


def test_a_bad_script_is_refused_naming_its_place(client: TestClient) -> None:
    client.put("/api/regex/global", json={"scripts": [rule("Keep", "a", "b")]})
    bad = client.put(
        "/api/regex/global", json={"scripts": [rule("New", "a", "b"), {"findRegex": "x"}]}
    )
    assert bad.status_code == 422, bad.text
    assert "scripts[1]" in bad.text
    kept = client.get("/api/regex/global").json()["scripts"]
    assert [s["scriptName"] for s in kept] == ["Keep"]


def test_character_scripts_need_consent(client: TestClient, ctx: AppContext) -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Kael",
            "extensions": {"regex_scripts": [rule("Own", "/a/g", "b")]}}}  # fmt: skip
    made = client.post(
        "/api/characters/import",
        files={"file": ("Kael.json", json.dumps(card).encode(), "application/json")},
    )
    assert made.status_code in (200, 201), made.text
    kael = made.json()["id"]
    layer = client.get("/api/regex/character", params={"target": kael}).json()
    assert layer["allowed"] is False and [s["scriptName"] for s in layer["scripts"]] == ["Own"]
    allowed = client.put(
        "/api/regex/character/allowed", params={"target": kael}, json={"allowed": True}
    )
    assert allowed.status_code == 200 and allowed.json()["allowed"] is True
    assert client.get("/api/regex/character", params={"target": "nope"}).status_code == 404


def test_import_and_export_sillytavern_files(client: TestClient, tmp_path: Path) -> None:
    script = {**rule("Strip OOC notes", "/\\s*\\(OOC:[^)]*\\)/gi", ""), "id": "old-id",
              "trimStrings": [], "disabled": False, "markdownOnly": False, "promptOnly": True,
              "runOnEdit": True, "substituteRegex": False, "minDepth": None, "maxDepth": None}  # fmt: skip
    up = client.post(
        "/api/regex/global/import",
        files={"file": ("strip.json", json.dumps(script).encode(), "application/json")},
    )
    assert up.status_code == 201, up.text
    (got,) = up.json()["scripts"]
    assert got["scriptName"] == "Strip OOC notes" and got["id"] != "old-id"
    down = client.get(f"/api/regex/global/{got['id']}/export")
    assert down.status_code == 200
    assert "strip_ooc_notes.json" in down.headers["content-disposition"]
    assert json.loads(down.content)["findRegex"] == script["findRegex"]
    refused = client.post(
        "/api/regex/global/import",
        files={"file": ("bad.json", b'{"findRegex": "a"}', "application/json")},
    )
    assert refused.status_code == 422 and "bad.json" in refused.text


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        ("store", "[Mira] waves!"),
        ("display", "Mira waves?"),
        ("prompt", "[Mira] waves!"),
    ],
)
def test_the_test_box(client: TestClient, use: str, expected: str) -> None:
    scripts = [
        rule("Name", "/{{char}}/g", "[$0]", substituteRegex=1),
        rule("Shout", "/!/g", "?", markdownOnly=True),
    ]
    tried = client.post(
        "/api/regex/try",
        json={"scripts": scripts, "text": "Mira waves!", "use": use, "char": "Mira"},
    )
    assert tried.status_code == 200, tried.text
    assert tried.json()["result"] == expected


def test_the_test_box_stops_a_runaway_pattern(client: TestClient) -> None:
    text = "a" * 40 + "!"
    tried = client.post(
        "/api/regex/try",
        json={"scripts": [rule("Runaway", "/(a+)+$/", "X")] * 20, "text": text},
    )
    assert tried.status_code == 200 and tried.json()["result"] == text


def test_the_view_shows_the_reasoning_display_scripts_make(
    client: TestClient, ctx: AppContext
) -> None:
    from taverna.model.chat import GenerationInfo

    client.put(
        "/api/regex/global",
        json={"scripts": [{**rule("Thoughts", "/plan/g", "PLAN", markdownOnly=True), "placement": [6]}]},
    )  # fmt: skip
    chat_id, ids = make_chat(ctx)
    info = GenerationInfo(extras={"reasoning": "the plan is simple"})
    reply = ctx.chats.add_reply(
        chat_id, ids[2], "plan made", revision=rev(client, chat_id), speaker="Mira",
        generation=info,
    )  # fmt: skip
    assert reply.node is not None
    shown = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    assert shown["id"] == reply.node.id
    assert shown["shown_reasoning"] == "the PLAN is simple"
    assert shown["generation"]["extras"]["reasoning"] == "the plan is simple"
    assert shown["shown"] is None  # the reasoning placement leaves the text alone


def test_text_completion_presets_are_listed_chosen_and_hold_their_own_scripts(
    client: TestClient, ctx: AppContext
) -> None:
    from taverna.services.library.service import LibraryKind, LibraryService

    scripts = [rule("Own", "/a/g", "b", promptOnly=True)]
    story = LibraryService(ctx.chats.store).put(
        LibraryKind.TEXT_COMPLETION_PRESET,
        "Story",
        {"temp": 0.8, "extensions": {"regex_scripts": scripts}},
    )
    listed = client.get("/api/presets", params={"kind": "text"}).json()
    assert [(p["name"], p["kind"], p["active"]) for p in listed] == [("Story", "text", False)]
    chosen = client.post(f"/api/presets/{story.id}/activate")
    assert chosen.status_code == 200 and chosen.json()["active"] is True
    assert client.get("/api/presets", params={"kind": "text"}).json()[0]["active"] is True
    layer = client.get("/api/regex/preset", params={"target": story.id}).json()
    assert layer["allowed"] is False and [s["scriptName"] for s in layer["scripts"]] == ["Own"]
    allowed = client.put(
        "/api/regex/preset/allowed", params={"target": story.id}, json={"allowed": True}
    )
    assert allowed.status_code == 200 and allowed.json()["allowed"] is True
    assert client.get("/api/presets", params={"kind": "nope"}).status_code == 400
