"""Character endpoints: import by upload, create, edit every field, picture, export, bad input."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from taverna.formats.card_json import read_card_json
from taverna.formats.png_card import read_png_card
from taverna.server.context import AppContext

SAMPLE = Path(__file__).resolve().parents[2] / "taverna" / "data" / "Ione Calder.png"


def upload(client: TestClient, name: str, data: bytes, url: str = "/api/characters/import"):  # type: ignore[no-untyped-def]
    return client.post(url, files={"file": (name, data, "application/octet-stream")})


def test_import_png_card_then_read_list_and_picture(client: TestClient) -> None:
    response = upload(client, SAMPLE.name, SAMPLE.read_bytes())
    assert response.status_code == 201, response.text
    card = response.json()
    assert card["name"] == "Ione Calder"
    assert card["first_mes"]
    listed = client.get("/api/characters").json()
    assert [c["id"] for c in listed] == [card["id"]]
    picture = client.get(card["avatar_url"])
    assert picture.status_code == 200 and picture.content.startswith(b"\x89PNG")
    assert card["replaced"] is False
    # The same card again replaces that character (the answer says so); nothing is added.
    again = upload(client, SAMPLE.name, SAMPLE.read_bytes())
    assert again.status_code == 201 and again.json()["replaced"] is True
    assert again.json()["id"] == card["id"]
    assert [c["id"] for c in client.get("/api/characters").json()] == [card["id"]]


def test_import_json_card_from_fixtures(client: TestClient, st_fixtures: Path) -> None:
    path = st_fixtures / "handmade" / "cards" / "Kael.v3.json"
    response = upload(client, path.name, path.read_bytes())
    assert response.status_code == 201, response.text
    assert response.json()["name"]


def test_create_edit_every_field_and_export(client: TestClient) -> None:
    created = client.post("/api/characters", json={"name": "林月", "description": "A poet."})
    assert created.status_code == 201, created.text
    card = created.json()
    fields = {
        "name": "林月",
        "nickname": "Yue",
        "description": "A poet of the 江南.",
        "personality": "calm",
        "scenario": "a boat at night",
        "first_mes": "Hello {{user}}.",
        "alternate_greetings": ["Hi.", "Evening."],
        "group_only_greetings": ["All of you!"],
        "mes_example": "<START>\n{{char}}: Verse.",
        "system_prompt": "Write like {{char}}.",
        "post_history_instructions": "Stay brief.",
        "depth_prompt": "Remember the moon.",
        "depth_prompt_depth": 2,
        "depth_prompt_role": "user",
        "talkativeness": 0.8,
        "creator_notes": "notes",
        "creator": "me",
        "character_version": "2",
        "tags": ["poetry", "诗"],
        "revision": card["revision"],
    }
    updated = client.put(f"/api/characters/{card['id']}", json=fields)
    assert updated.status_code == 200, updated.text
    got = client.get(f"/api/characters/{card['id']}").json()
    for key, value in fields.items():
        if key != "revision":
            assert got[key] == value, key
    as_json = client.get(f"/api/characters/{card['id']}/export?format=json")
    assert as_json.status_code == 200
    assert "attachment" in as_json.headers["content-disposition"]
    character = read_card_json(as_json.content)
    assert character.alternate_greetings == ["Hi.", "Evening."]
    assert character.depth_prompt.prompt == "Remember the moon."
    as_png = client.get(f"/api/characters/{card['id']}/export?format=png")
    assert read_png_card(as_png.content).character.name == "林月"
    # The picture without a card picture is a lettered placeholder.
    placeholder = client.get(got["avatar_url"])
    assert placeholder.headers["content-type"].startswith("image/svg+xml")
    assert "林" in placeholder.text
    png = as_png.content
    changed = client.post(
        f"/api/characters/{card['id']}/avatar", files={"file": ("p.png", png, "image/png")}
    )
    assert changed.status_code == 200
    assert client.get(got["avatar_url"]).content.startswith(b"\x89PNG")


def test_stale_edit_is_409(client: TestClient) -> None:
    card = client.post("/api/characters", json={"name": "A"}).json()
    client.put(
        f"/api/characters/{card['id']}",
        json={"name": "A", "description": "1", "revision": card["revision"]},
    )
    stale = client.put(
        f"/api/characters/{card['id']}",
        json={"name": "A", "description": "2", "revision": card["revision"]},
    )
    assert stale.status_code == 409
    assert client.get(f"/api/characters/{card['id']}").json()["description"] == "1"


def test_bad_input_stores_nothing(client: TestClient, ctx: AppContext) -> None:
    assert upload(client, "notes.txt", b"just some text").status_code == 422
    assert upload(client, "broken.png", b"\x89PNG\r\n\x1a\nxxxx").status_code == 422
    assert upload(client, "broken.json", b'{"name": 5').status_code == 422
    ctx.upload_limit = 1024
    too_big = upload(client, SAMPLE.name, SAMPLE.read_bytes())
    assert too_big.status_code == 413
    assert "MiB" in too_big.json()["detail"]["message"]
    assert client.post("/api/characters/import").status_code == 422  # no file at all
    for body in (
        {"name": ""},
        {"name": 5},
        {"name": "x", "tags": "a"},
        {"name": "x", "talkativeness": 3},
        {"name": "x", "bogus": 1},
    ):
        assert client.post("/api/characters", json=body).status_code == 422, body
    assert client.get("/api/characters").json() == []
    assert client.get("/api/characters/nope").status_code == 404
    assert client.put("/api/characters/nope", json={"name": "x"}).status_code == 404
    assert client.delete("/api/characters/nope").status_code == 404
    assert client.get("/api/characters/nope/avatar").status_code == 404
    assert client.get("/api/characters/nope/export").status_code == 404


def test_duplicate_name_is_refused_and_delete_works(client: TestClient) -> None:
    card = client.post("/api/characters", json={"name": "Twin"}).json()
    assert client.post("/api/characters", json={"name": "Twin"}).status_code == 409
    assert client.get(f"/api/characters/{card['id']}/export?format=gif").status_code == 400
    assert client.delete(f"/api/characters/{card['id']}").status_code == 204
    assert client.get("/api/characters").json() == []


def test_start_a_chat_with_the_greetings(client: TestClient) -> None:
    card = client.post(
        "/api/characters",
        json={
            "name": "Mira",
            "first_mes": "Hi {{user}}, I am {{char}}.",
            "alternate_greetings": ["Yo."],
        },
    ).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]})
    assert chat.status_code == 201, chat.text
    view = client.get(f"/api/chats/{chat.json()['id']}").json()
    assert view["messages"][0]["content"] == "Hi User, I am Mira."
    assert view["messages"][0]["candidate_count"] == 2
    assert view["characters"][0]["avatar_url"] == f"/api/characters/{card['id']}/avatar"
    listed = client.get(f"/api/chats?character_id={card['id']}").json()
    assert [c["id"] for c in listed] == [chat.json()["id"]]
    assert client.post("/api/chats", json={"character_id": "nope"}).status_code == 404


HEADER_SAFE = re.compile(r"^[\x20-\x7e]*$")


@pytest.mark.parametrize(
    ("name", "plain", "exact"),
    [
        ("A\x7fB", "A_B", "A_B"),
        ('Zoë "the" 50% \\ bold', "Zoe _the_ 50_ _ bold", "Zoë _the_ 50% _ bold"),
        ("evil\u202egnp.exe", "evil_gnp.exe", "evil_gnp.exe"),
        ("王小明", "___", "王小明"),
        ("\x00\r\n", "___", "___"),
    ],
)
def test_an_exported_file_name_is_safe_in_the_header(
    client: TestClient, name: str, plain: str, exact: str
) -> None:
    card = client.post("/api/characters", json={"name": name}).json()
    for extension in ("json", "png"):
        response = client.get(f"/api/characters/{card['id']}/export?format={extension}")
        assert response.status_code == 200
        header = response.headers["content-disposition"]
        assert HEADER_SAFE.match(header), header
        found = re.fullmatch(r"attachment; filename=\"([^\"]*)\"; filename\*=UTF-8''(\S+)", header)
        assert found, header
        assert found[1] == f"{plain}.{extension}"
        assert unquote(found[2]) == f"{exact}.{extension}"
