"""Pictures on messages through the server: upload, attach, show, send inline, undo, export."""

from __future__ import annotations

import base64
import io
import json

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from tests.server.conftest import rev
from tests.stubs.model_server import Reply, StubServer
from tests.support.api import events, generate

pytestmark = pytest.mark.stub_model(models=("gpt-4o", "gpt-3.5-turbo"))


def png_bytes(width: int = 8, height: int = 6) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (20, 90, 160)).save(out, format="PNG")
    return out.getvalue()


def setup_chat(client: TestClient, stub: StubServer, *, inlining: bool, model: str) -> str:
    connection = {"name": "stub", "api": "openai", "url": stub.base_url("openai"), "model": model}
    assert client.post("/api/connections", json=connection).status_code == 201
    preset = {
        "chat_completion_source": "openai",
        "openai_max_context": 4095,
        "image_inlining": inlining,
        "inline_image_quality": "high",
        "openai_model": model,
    }
    files = {"file": ("Pictures.json", json.dumps(preset).encode(), "application/json")}
    imported = client.post("/api/presets/import?kind=chat", files=files)
    assert imported.status_code == 201, imported.text
    assert client.post(f"/api/presets/{imported.json()['id']}/activate").status_code == 200
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": "Hello."}).json()
    return str(client.post("/api/chats", json={"character_id": card["id"]}).json()["id"])


def upload(client: TestClient, data: bytes, name: str = "photo.png") -> dict:  # type: ignore[type-arg]
    response = client.post("/api/images", files={"file": (name, data, "image/png")})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_upload_stores_a_picture_once_and_serves_it(client: TestClient) -> None:
    data = png_bytes()
    first, again = upload(client, data), upload(client, data)
    assert first == again
    assert first["url"].startswith("/api/images/") and first["url"].endswith(".png")
    assert (first["width"], first["height"], first["media_type"]) == (8, 6, "image/png")
    served = client.get(first["url"])
    assert served.status_code == 200 and served.content == data
    assert served.headers["content-type"] == "image/png"


def test_a_file_that_is_no_picture_is_refused_with_its_name(client: TestClient) -> None:
    response = client.post("/api/images", files={"file": ("notes.png", b"<svg/>", "image/png")})
    assert response.status_code == 422
    assert "notes.png" in response.text
    assert client.get("/api/images/" + "0" * 64 + ".png").status_code == 404
    assert client.get("/api/images/..%2F..%2Fetc%2Fpasswd").status_code == 404


def test_a_sent_picture_is_shown_and_goes_to_a_model_that_sees(
    client: TestClient, stub: StubServer
) -> None:
    chat_id = setup_chat(client, stub, inlining=True, model="gpt-4o")
    picture = upload(client, png_bytes(1024, 1024))
    stub.script(Reply(tokens=["A blue square."]))
    started = generate(client, chat_id, kind="normal", text="What is it?", image=picture["url"])
    # the start answers with the run; the message is there to read once it is posted
    shown = client.get(f"/api/chats/{chat_id}").json()["messages"]
    sent = [m for m in shown if m["role"] == "user"][-1]
    assert sent["content"] == "What is it?" and sent["image_url"] == picture["url"]
    seen = events(client, started["task"]["id"])
    assert seen[-1][0] == "done", str(seen[-1][1])
    last = stub.requests[-1].body["messages"][-1]
    encoded = base64.b64encode(client.get(picture["url"]).content).decode()
    assert last["content"] == [
        {"type": "text", "text": "What is it?"},
        {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{encoded}", "detail": "high"},
        },
    ]
    view = client.get(f"/api/chats/{chat_id}").json()
    assert [m["image_url"] for m in view["messages"]] == [None, picture["url"], None]


def test_pictures_stay_home_when_inlining_is_off(client: TestClient, stub: StubServer) -> None:
    chat_id = setup_chat(client, stub, inlining=False, model="gpt-4o")
    picture = upload(client, png_bytes())
    stub.script(Reply(tokens=["Hm."]))
    started = generate(client, chat_id, kind="normal", text="Look.", image=picture["url"])
    events(client, started["task"]["id"])
    assert stub.requests[-1].body["messages"][-1]["content"] == "Look."


def test_pictures_stay_home_for_a_model_that_cannot_see(
    client: TestClient, stub: StubServer
) -> None:
    chat_id = setup_chat(client, stub, inlining=True, model="gpt-3.5-turbo")
    picture = upload(client, png_bytes())
    stub.script(Reply(tokens=["Hm."]))
    started = generate(client, chat_id, kind="normal", text="Look.", image=picture["url"])
    events(client, started["task"]["id"])
    assert stub.requests[-1].body["messages"][-1]["content"] == "Look."


def test_attach_and_remove_a_picture_with_undo(client: TestClient, stub: StubServer) -> None:
    chat_id = setup_chat(client, stub, inlining=True, model="gpt-4o")
    greeting = client.get(f"/api/chats/{chat_id}").json()["messages"][0]["id"]
    picture = upload(client, png_bytes())
    url = f"/api/chats/{chat_id}/messages/{greeting}/image"
    attached = client.put(url, json={"image": picture["url"], "revision": rev(client, chat_id)})
    assert attached.status_code == 200, attached.text
    assert attached.json()["messages"][0]["image_url"] == picture["url"]
    removed = client.put(url, json={"image": None, "revision": rev(client, chat_id)})
    assert removed.json()["messages"][0]["image_url"] is None
    undone = client.post(f"/api/chats/{chat_id}/undo", json={"revision": rev(client, chat_id)})
    assert undone.status_code == 200
    assert client.get(f"/api/chats/{chat_id}").json()["messages"][0]["image_url"] == picture["url"]
    # a picture that was never uploaded is refused, naming the field
    bad = client.put(
        url, json={"image": "/api/images/nothing.png", "revision": rev(client, chat_id)}
    )
    assert bad.status_code == 404 and "image" in bad.text
    unsent = client.post(
        f"/api/chats/{chat_id}/generate",
        json={
            "kind": "normal",
            "text": "x",
            "image": "https://example.com/a.png",
            "revision": rev(client, chat_id),
        },
    )
    assert unsent.status_code == 404


def test_export_keeps_the_picture_in_sillytavern_s_place(
    client: TestClient, stub: StubServer
) -> None:
    chat_id = setup_chat(client, stub, inlining=True, model="gpt-4o")
    greeting = client.get(f"/api/chats/{chat_id}").json()["messages"][0]["id"]
    picture = upload(client, png_bytes())
    client.put(
        f"/api/chats/{chat_id}/messages/{greeting}/image",
        json={"image": picture["url"], "revision": rev(client, chat_id)},
    )
    exported = client.get(f"/api/chats/{chat_id}/export")
    lines = [json.loads(line) for line in exported.text.splitlines() if line.strip()]
    assert lines[1]["extra"]["image"] == picture["url"]
    assert lines[1]["extra"]["inline_image"] is True
