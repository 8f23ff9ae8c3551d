"""A picture attached in the page: chosen, sent with a message, shown, and sent to the model."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_chat_flow import DESKTOP, PHONE, wait_idle
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.browser


def picture_file(tmp_path: Path) -> Path:
    path = tmp_path / "harbour.png"
    image = Image.new("RGB", (320, 200), (30, 110, 170))
    image.paste((240, 200, 60), (40, 40, 120, 120))
    out = io.BytesIO()
    image.save(out, format="PNG")
    path.write_bytes(out.getvalue())
    return path


def test_send_a_picture_from_the_page(
    chromium,
    taverna: TavernaServer,
    stub: StubServer,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    # a custom endpoint sees pictures; the preset turns inline images on
    taverna.api(
        "POST",
        "/connections",
        json={"name": "vision", "api": "openai-compatible", "url": stub.base_url("openai"),
              "model": "stub-model", "key": None, "default": True},
    )  # fmt: skip
    preset = {
        "chat_completion_source": "custom",
        "openai_max_context": 4095,
        "image_inlining": True,
    }
    files = {"file": ("Vision.json", json.dumps(preset).encode(), "application/json")}
    preset_id = taverna.api("POST", "/presets/import?kind=chat", files=files).json()["id"]
    taverna.api("POST", f"/presets/{preset_id}/activate")
    card = taverna.api("POST", "/characters", json={"name": "Nell", "first_mes": "Show me."}).json()
    chat = taverna.api("POST", "/chats", json={"character_id": card["id"]}).json()

    page = chromium.new_page(viewport=DESKTOP)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    expect(page.locator("ol.messages > li.message")).to_have_count(1)
    with page.expect_file_chooser() as chooser:
        page.locator("#attach-picture").click()
    chooser.value.set_files(str(picture_file(tmp_path)))
    expect(page.locator("#pending-picture img")).to_be_visible()
    expect(page.locator("#pending-picture")).to_contain_text("320×200")
    shot(page, "picture-pending")

    stub.script(Reply(tokens=["A ", "yellow ", "square."]))
    page.fill("#chat-input", "What do you see?")
    page.click("#send")
    wait_idle(page, "yellow square")
    sent = page.locator("ol.messages > li.message.user").last
    expect(sent.locator("img.attached-picture")).to_be_visible()
    assert page.locator("#pending-picture").is_hidden()
    last = stub.requests[-1].body["messages"][-1]
    assert last["content"][0] == {"type": "text", "text": "What do you see?"}
    assert last["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    shot(page, "picture-sent")

    # it stays after a reload, and it can be taken off (the model no longer sees it)
    page.reload()
    sent = page.locator("ol.messages > li.message.user").last
    expect(sent.locator("img.attached-picture")).to_be_visible()
    sent.hover()
    sent.locator("button.picture-remove").click()
    expect(page.locator("ol.messages > li.message.user").last.locator("img")).to_have_count(0)

    page.set_viewport_size(PHONE)
    page.reload()
    expect(page.locator("#attach-picture")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], width
    shot(page, "picture-phone")
    page.close()
