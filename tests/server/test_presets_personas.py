"""Preset, template and persona endpoints, and that the active preset reaches the prompt."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from taverna.server.context import AppContext


def upload(client: TestClient, url: str, path: Path):  # type: ignore[no-untyped-def]
    return client.post(url, files={"file": (path.name, path.read_bytes(), "application/json")})


def test_chat_preset_prompt_manager_round_trip(client: TestClient, st_fixtures: Path) -> None:
    path = st_fixtures / "presets" / "openai" / "Default.json"
    imported = upload(client, "/api/presets/import?kind=chat", path)
    assert imported.status_code == 201, imported.text
    preset_id = imported.json()["id"]
    preset = client.get(f"/api/presets/{preset_id}").json()
    ids = [p["identifier"] for p in preset["prompts"]]
    assert ids[:2] == ["main", "worldInfoBefore"] and "chatHistory" in ids
    assert preset["sampling"]["temperature"] == 1 or "temperature" in preset["sampling"]
    prompts = preset["prompts"]
    prompts[0], prompts[1] = prompts[1], prompts[0]
    main = next(p for p in prompts if p["identifier"] == "main")
    main["content"] = "Write as {{char}}, 简洁地."
    nsfw = next(p for p in prompts if p["identifier"] == "nsfw")
    nsfw["enabled"] = False
    saved = client.put(
        f"/api/presets/{preset_id}",
        json={
            "name": "Mine",
            "prompts": prompts,
            "sampling": {"temperature": 0.5, "openai_max_context": 8000},
        },
    )
    assert saved.status_code == 200, saved.text
    again = client.get(f"/api/presets/{preset_id}").json()
    assert again["name"] == "Mine"
    assert [p["identifier"] for p in again["prompts"]][:2] == ["worldInfoBefore", "main"]
    assert next(p for p in again["prompts"] if p["identifier"] == "nsfw")["enabled"] is False
    assert again["sampling"]["temperature"] == 0.5
    assert client.post(f"/api/presets/{preset_id}/activate").json()["active"] is True
    assert client.get("/api/presets?kind=chat").json()[0]["active"] is True
    exported = client.get(f"/api/presets/{preset_id}/export").json()
    assert any(o["character_id"] == 100001 for o in exported["prompt_order"])
    # The active preset shapes the prompt.
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hi."}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    client.post(
        "/api/connections",
        json={"name": "c", "api": "openai", "url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    prompt = client.get(f"/api/chats/{chat['id']}/prompt").json()
    assert any("Write as Mira, 简洁地." in m["content"] for m in prompt["prompt"]["messages"])
    assert client.delete(f"/api/presets/{preset_id}").status_code == 204


def test_templates(client: TestClient, st_fixtures: Path) -> None:
    folder = st_fixtures / "presets" / "instruct"
    path = sorted(folder.glob("*.json"))[0]
    imported = upload(client, "/api/presets/import?kind=instruct", path)
    assert imported.status_code == 201, imported.text
    template = client.get(f"/api/presets/{imported.json()['id']}").json()
    assert template["kind"] == "instruct" and "input_sequence" in template["data"]
    changed = client.put(
        f"/api/presets/{template['id']}",
        json={"name": template["name"], "data": {"input_sequence": "<|user|>"}},
    )
    assert changed.status_code == 200
    assert changed.json()["data"]["input_sequence"] == "<|user|>"
    assert client.post(f"/api/presets/{template['id']}/activate").status_code == 200
    # A template file is not a chat preset.
    assert upload(client, "/api/presets/import?kind=chat", path).status_code == 422


def test_preset_bad_input(client: TestClient, ctx: AppContext, st_fixtures: Path) -> None:
    path = st_fixtures / "presets" / "openai" / "Default.json"
    preset_id = upload(client, "/api/presets/import?kind=chat", path).json()["id"]
    before = client.get(f"/api/presets/{preset_id}").json()
    bad = client.put(
        f"/api/presets/{preset_id}",
        json={"name": "x", "prompts": [{"identifier": "main", "content": 5}]},
    )
    assert bad.status_code == 422
    assert client.put(f"/api/presets/{preset_id}", json={"name": ""}).status_code == 422
    assert client.get(f"/api/presets/{preset_id}").json() == before
    assert client.get("/api/presets?kind=nonsense").status_code == 400
    assert client.get("/api/presets/nope").status_code == 404
    card = client.post("/api/characters", json={"name": "C"}).json()
    assert client.get(f"/api/presets/{card['id']}").status_code == 404  # a character is no preset
    assert (
        client.post(
            "/api/presets/import?kind=chat",
            files={"file": ("x.json", b"[1,2]", "application/json")},
        ).status_code
        == 422
    )
    ctx.upload_limit = 10
    assert upload(client, "/api/presets/import?kind=chat", path).status_code == 413
    assert len(client.get("/api/presets?kind=chat").json()) == 1


def test_personas(client: TestClient) -> None:
    first = client.post(
        "/api/personas", json={"name": "Ann", "description": "A sailor.", "is_default": True}
    )
    assert first.status_code == 201, first.text
    second = client.post(
        "/api/personas",
        json={"name": "小明", "position": 4, "depth": 1, "role": 1, "is_default": True},
    ).json()
    listed = {p["name"]: p for p in client.get("/api/personas").json()}
    assert listed["小明"]["is_default"] and not listed["Ann"]["is_default"]
    assert (listed["小明"]["position"], listed["小明"]["depth"], listed["小明"]["role"]) == (
        4,
        1,
        1,
    )
    updated = client.put(
        f"/api/personas/{second['id']}",
        json={"name": "小明", "description": "学生", "is_default": True},
    )
    assert updated.json()["description"] == "学生"
    assert client.post("/api/personas", json={"name": "Ann"}).status_code == 409
    for body in ({"name": ""}, {"name": "x", "position": 12}, {"name": "x", "role": "user"}):
        assert client.post("/api/personas", json=body).status_code == 422
    # The default persona names the user in a new chat.
    card = client.post(
        "/api/characters", json={"name": "Mira", "first_mes": "Hello {{user}}."}
    ).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    view = client.get(f"/api/chats/{chat['id']}").json()
    assert view["messages"][0]["content"] == "Hello 小明." and view["persona"]["name"] == "小明"
    assert client.delete(f"/api/personas/{second['id']}").status_code == 204
    assert client.delete(f"/api/personas/{second['id']}").status_code == 404
    assert client.put("/api/personas/nope", json={"name": "x"}).status_code == 404


def test_library_regex_scripts_shape_the_prompt(
    client: TestClient, ctx: AppContext, st_fixtures: Path
) -> None:
    from taverna.services.library.service import LibraryService

    script = st_fixtures / "handmade" / "exports" / "strip_ooc_notes.json"
    LibraryService(ctx.store).import_bytes(script.read_bytes(), script.name)
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hi."}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    from taverna.model.chat import NodeRole

    current = ctx.chats.get_chat(chat["id"])
    ctx.chats.append(
        chat["id"], NodeRole.USER, "Let's sail. (OOC: back in 5)", revision=current.revision
    )
    messages = client.get(f"/api/chats/{chat['id']}/prompt").json()["prompt"]["messages"]
    sent = [m["content"] for m in messages if "Let's sail." in m["content"]]
    assert sent and all("OOC" not in text for text in sent)


def test_persona_picture_shows_on_the_users_messages(client: TestClient) -> None:
    from taverna.formats.png_card import default_avatar

    persona = client.post("/api/personas", json={"name": "Wren", "is_default": True}).json()
    placeholder = client.get(persona["avatar_url"])
    assert placeholder.headers["content-type"].startswith("image/svg+xml")
    png = default_avatar()
    assert (
        client.post(
            f"/api/personas/{persona['id']}/avatar", files={"file": ("w.png", png, "image/png")}
        ).status_code
        == 200
    )
    assert client.get(persona["avatar_url"]).content == png
    bad = client.post(
        f"/api/personas/{persona['id']}/avatar",
        files={"file": ("w.png", b"not a picture", "image/png")},
    )
    assert bad.status_code == 422
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hi."}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    view = client.get(f"/api/chats/{chat['id']}").json()
    assert view["persona"] == {
        "id": persona["id"],
        "name": "Wren",
        "avatar_url": persona["avatar_url"],
    }
    assert client.get("/api/personas/nope/avatar").status_code == 404


def test_add_and_delete_a_custom_prompt_slot(client: TestClient, st_fixtures: Path) -> None:
    path = st_fixtures / "presets" / "openai" / "Default.json"
    preset_id = upload(client, "/api/presets/import?kind=chat", path).json()["id"]
    before = client.get(f"/api/presets/{preset_id}").json()["prompts"]
    slot = {
        "name": "Weather",
        "role": "user",
        "content": "[It is raining over {{char}}, 下雨了.]",
        "injection_position": 1,
        "injection_depth": 0,
        "injection_order": 50,
        "enabled": True,
    }
    added = client.post(f"/api/presets/{preset_id}/prompts", json=slot)
    assert added.status_code == 201, added.text
    prompts = added.json()["prompts"]
    assert len(prompts) == len(before) + 1
    new = prompts[-1]
    assert (new["name"], new["role"], new["injection_depth"], new["injection_order"]) == (
        "Weather",
        "user",
        0,
        50,
    )
    assert new["enabled"] is True and new["deletable"] is True
    assert not any(p["deletable"] for p in before)
    exported = client.get(f"/api/presets/{preset_id}/export").json()
    order = next(o for o in exported["prompt_order"] if o["character_id"] == 100001)["order"]
    assert order[-1] == {"identifier": new["identifier"], "enabled": True}
    # The active preset's new slot reaches the prompt, in the chat at depth 0.
    client.post(f"/api/presets/{preset_id}/activate")
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hi."}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    client.post(
        "/api/connections",
        json={"name": "c", "api": "openai", "url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    messages = client.get(f"/api/chats/{chat['id']}/prompt").json()["prompt"]["messages"]
    assert messages[-1]["content"] == "[It is raining over Mira, 下雨了.]"
    assert messages[-1]["role"] == "user"
    gone = client.delete(f"/api/presets/{preset_id}/prompts/{new['identifier']}")
    assert gone.status_code == 200
    assert [p["identifier"] for p in gone.json()["prompts"]] == [p["identifier"] for p in before]
    messages = client.get(f"/api/chats/{chat['id']}/prompt").json()["prompt"]["messages"]
    assert not any("raining" in m["content"] for m in messages)


def test_prompt_slot_bad_input(client: TestClient, st_fixtures: Path) -> None:
    path = st_fixtures / "presets" / "openai" / "Default.json"
    preset_id = upload(client, "/api/presets/import?kind=chat", path).json()["id"]
    url = f"/api/presets/{preset_id}/prompts"
    before = client.get(f"/api/presets/{preset_id}").json()["prompts"]
    for bad in (
        {"name": ""},
        {"name": "x", "role": "narrator"},
        {"name": "x", "injection_position": 2},
        {"name": "x", "injection_depth": -1},
        {"name": "x", "injection_depth": "deep"},
        {"name": "x", "surprise": 1},
    ):
        assert client.post(url, json=bad).status_code == 422, bad
    assert client.post("/api/presets/nope/prompts", json={"name": "x"}).status_code == 404
    for builtin in ("main", "chatHistory", "worldInfoBefore", "jailbreak"):
        assert client.delete(f"{url}/{builtin}").status_code == 400, builtin
    assert client.delete(f"{url}/nope").status_code == 404
    assert client.get(f"/api/presets/{preset_id}").json()["prompts"] == before


def test_new_preset_starts_from_the_product_defaults(client: TestClient) -> None:
    made = client.post("/api/presets", json={"kind": "chat", "name": "Fresh"})
    assert made.status_code == 201, made.text
    assert made.json()["name"] == "Fresh" and made.json()["kind"] == "chat"
    preset = client.get(f"/api/presets/{made.json()['id']}").json()
    assert "chatHistory" in [p["identifier"] for p in preset["prompts"]]
    assert preset["sampling"]["temperature"] == 0.9  # Taverna Default's
    template = client.post("/api/presets", json={"kind": "instruct", "name": "My ChatML"})
    assert template.status_code == 201, template.text
    data = client.get(f"/api/presets/{template.json()['id']}").json()["data"]
    assert data["name"] == "My ChatML" and "<|im_start|>" in data["input_sequence"]
    taken = client.post("/api/presets", json={"kind": "chat", "name": "Fresh"})
    assert taken.status_code == 409 and taken.json()["detail"]["code"] == "name_taken"
    assert client.post("/api/presets", json={"kind": "nope", "name": "X"}).status_code == 400
    assert [p["name"] for p in client.get("/api/presets?kind=chat").json()] == ["Fresh"]


def test_save_as_copies_the_preset_and_leaves_the_original(client: TestClient) -> None:
    first = client.post("/api/presets", json={"kind": "chat", "name": "Base"}).json()
    copy = client.post(f"/api/presets/{first['id']}/copy", json={"name": "Base 2"})
    assert copy.status_code == 201, copy.text
    copy_id = copy.json()["id"]
    assert copy_id != first["id"] and copy.json()["name"] == "Base 2"
    edited = client.get(f"/api/presets/{copy_id}").json()
    edited["prompts"][0]["content"] = "Only in the copy."
    saved = client.put(
        f"/api/presets/{copy_id}",
        json={"name": "Base 2", "prompts": edited["prompts"], "sampling": {"temperature": 0.3}},
    )
    assert saved.status_code == 200, saved.text
    original = client.get(f"/api/presets/{first['id']}").json()
    assert original["sampling"]["temperature"] == 0.9
    assert all(p.get("content") != "Only in the copy." for p in original["prompts"])
    taken = client.post(f"/api/presets/{first['id']}/copy", json={"name": "Base 2"})
    assert taken.status_code == 409
    context = client.post("/api/presets", json={"kind": "context", "name": "Story"}).json()
    again = client.post(f"/api/presets/{context['id']}/copy", json={"name": "Story B"}).json()
    assert again["kind"] == "context"
    assert client.get(f"/api/presets/{again['id']}").json()["data"]["name"] == "Story B"


def test_text_completion_presets_are_imported_chosen_exported_and_deleted(
    client: TestClient,
) -> None:
    """The presets page keeps Text Completion presets beside the chat ones: imported as
    `kind=text`, chosen, exported as they came, deleted; not opened for editing."""
    story = {"temp": 0.7, "rep_pen": 1.1, "top_k": 40, "extensions": {"regex_scripts": []}}
    imported = client.post(
        "/api/presets/import?kind=text",
        files={"file": ("Story.json", json.dumps(story).encode(), "application/json")},
    )
    assert imported.status_code == 201, imported.text
    made = imported.json()
    assert (made["name"], made["kind"]) == ("Story", "text")
    wrong = client.post(
        "/api/presets/import?kind=chat",
        files={"file": ("Story.json", json.dumps(story).encode(), "application/json")},
    )
    assert wrong.status_code == 422 and "not a chat preset" in wrong.text
    assert client.post(f"/api/presets/{made['id']}/activate").json()["active"] is True
    assert client.get("/api/presets?kind=text").json()[0]["active"] is True
    exported = client.get(f"/api/presets/{made['id']}/export")
    assert exported.status_code == 200 and json.loads(exported.content)["top_k"] == 40
    assert client.get(f"/api/presets/{made['id']}").status_code == 404  # not edited here
    assert client.post("/api/presets", json={"kind": "text", "name": "New"}).status_code == 400
    assert client.delete(f"/api/presets/{made['id']}").status_code == 204
    assert client.get("/api/presets?kind=text").json() == []


def test_a_chat_view_names_its_persona_without_reading_every_persona_again(
    client: TestClient, ctx: AppContext
) -> None:
    made = [
        client.post("/api/personas", json={"name": f"P{i}", "is_default": i == 3}).json()
        for i in range(6)
    ]
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hi."}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    assert client.get(f"/api/chats/{chat['id']}").json()["persona"]["name"] == "P3"
    assert ctx.turns is not None
    parsed = ctx.turns.documents.parses
    for _ in range(3):
        assert client.get(f"/api/chats/{chat['id']}").json()["persona"]["id"] == made[3]["id"]
    assert ctx.turns.documents.parses == parsed
    # the library's changes are seen at once: the default mark moves to another persona,
    # and the persona the chat speaks as (by its user name) goes: the default stands in
    client.put(f"/api/personas/{made[5]['id']}", json={"name": "Wren", "is_default": True})
    assert client.get(f"/api/chats/{chat['id']}").json()["persona"]["id"] == made[3]["id"]
    assert client.delete(f"/api/personas/{made[3]['id']}").status_code == 204
    view = client.get(f"/api/chats/{chat['id']}").json()
    assert view["persona"]["id"] == made[5]["id"]
    assert view["persona"]["avatar_url"] == f"/api/personas/{made[5]['id']}/avatar"
    assert ctx.turns.documents.parses > parsed
