"""What the server says, on a Chinese page: a refused request told in a toast, a failed reply
told where it failed with Retry, the report of a SillyTavern folder import with the files it
left out and why, the first-connection form, a connection test and a group chat. In each, no
English word is left in what a person reads (names, their own content and the model API's
own words aside). Screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import shot
from tests.browser.test_phone_and_language import ALLOWED, ENGLISH_WORDS
from tests.stubs.model_server import Reply, StubServer
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import new_page

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 800}


def open_zh(chromium, viewport: dict[str, int]):  # type: ignore[no-untyped-def]
    context, page, errors = new_page(chromium, viewport, "zh-CN")
    return context, page, errors


def no_english(page: Page, what: str) -> None:
    found = page.evaluate(ENGLISH_WORDS, ALLOWED)
    assert found == [], f"{what}: English on the Chinese page: {found}"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_refused_request_and_a_connection_test_are_told_in_chinese(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    viewport: dict[str, int],
) -> None:
    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{taverna.url}/#/connections")
    page.locator("#c-name").fill("远方")
    page.locator("#c-api").select_option("openai")
    page.locator("#c-url").fill("ftp://127.0.0.1/v1")
    page.locator("#c-model").fill("m")
    page.locator("#connection-form button[type=submit]").click()
    toast = page.locator("#toasts .toast.error").last
    expect(toast).to_contain_text("URL 必须以 http:// 或 https:// 开头")
    no_english(page, "refused connection")
    shot(page, f"zh-{viewport['width']}-refused-connection")
    assert "远方" not in [c["name"] for c in taverna.api("GET", "/connections").json()]

    # a connection test that cannot reach its server says so in Chinese
    made = taverna.api(
        "POST",
        "/connections",
        json={"name": "无处", "api": "openai", "url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    assert made.status_code == 201, made.text
    page.reload()
    item = page.locator(".connection", has_text="无处")
    item.get_by_role("button", name="测试").click()
    status = item.get_by_role("status")
    expect(status).to_contain_text("无法连接")
    no_english(page, "connection test")
    shot(page, f"zh-{viewport['width']}-connection-test")
    taverna.api("DELETE", "/connections/无处")
    assert errors == []
    context.close()


def test_a_failed_reply_is_told_in_chinese_with_retry(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    stub: StubServer,
) -> None:
    character = taverna.api("GET", "/characters").json()[0]
    chat = taverna.api("POST", "/chats", json={"character_id": character["id"]}).json()
    context, page, errors = open_zh(chromium, PHONE)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator("ol.messages .message").first.wait_for()
    stub.script(Reply(status=503, error_message="upstream overloaded"), Reply(tokens=["好的。"]))
    page.locator("#chat-input").fill("渡船什么时候开？")
    page.locator("#send").click()
    failure = page.locator("#failure")
    expect(failure).to_be_visible()
    expect(failure.get_by_role("button", name="重试", exact=True)).to_be_visible()
    no_english(page, "failed reply")
    shot(page, "zh-375-failed-reply")
    failure.get_by_role("button", name="重试", exact=True).click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("好的。")
    no_english(page, "retried reply")
    assert errors == []
    context.close()


def _folder(root: Path) -> Path:
    """A SillyTavern user folder with one good card and files the import leaves out."""
    folder = root / "default-user"
    (folder / "characters").mkdir(parents=True)
    # a loose value SillyTavern reads anyway: the report tells how it was read
    card = {"name": "小雪", "description": "画家。", "first_mes": "你好。", "talkativeness": "0.5"}
    (folder / "characters" / "小雪.json").write_text(json.dumps(card), encoding="utf-8")
    (folder / "characters" / "broken.png").write_bytes(b"this is no picture")
    (folder / "chats" / "小雪").mkdir(parents=True)
    (folder / "chats" / "小雪" / "empty.jsonl").write_text("", encoding="utf-8")
    (folder / "thumbnails").mkdir()
    (folder / "thumbnails" / "x.txt").write_text("not imported", encoding="utf-8")
    return folder


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_folder_import_report_says_why_in_chinese(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    tmp_path: Path,
    viewport: dict[str, int],
) -> None:
    folder = _folder(tmp_path)
    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{taverna.url}/#/import")
    page.locator("#st-folder").set_input_files(str(folder))
    report = page.locator(".report")
    report.locator("h3").first.wait_for(timeout=30000)
    expect(report).to_contain_text("小雪")
    expect(report).to_contain_text("JSON 无效，位于第 1 行第 1 列")
    expect(report).to_contain_text("空的聊天文件")
    expect(report).to_contain_text("taverna 不导入这类文件")
    expect(report).to_contain_text("已移入 data.extensions.talkativeness")
    no_english(page, "folder import report")
    shot(page, f"zh-{viewport['width']}-import-report")
    assert errors == []
    context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_first_connection_form_is_chinese(
    chromium,  # type: ignore[no-untyped-def]
    bare: TavernaServer,
    viewport: dict[str, int],
) -> None:
    character = bare.api("GET", "/characters").json()[0]
    chat = bare.api("POST", "/chats", json={"character_id": character["id"]}).json()
    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{bare.url}/#/chat/{chat['id']}")
    form = page.locator("#first-connection-form")
    expect(form).to_be_visible()
    no_english(page, "first connection form")
    shot(page, f"zh-{viewport['width']}-first-connection")
    # a refusal by the server is said in Chinese too
    form.locator("select").first.select_option("openai")
    form.locator("input[type=url]").fill("ftp://127.0.0.1/v1")
    form.locator("button[type=submit]").click()
    expect(page.locator("#toasts .toast.error").last).to_contain_text("URL 必须以")
    no_english(page, "first connection refused")
    assert errors == []
    context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_group_chat_is_chinese(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    stub: StubServer,
    viewport: dict[str, int],
) -> None:
    ids = []
    for name in ("阿岚", "白露"):
        found = [c for c in taverna.api("GET", "/characters").json() if c["name"] == name]
        ids.append(
            found[0]["id"]
            if found
            else taverna.api(
                "POST", "/characters", json={"name": name, "first_mes": f"{name}挥手。"}
            ).json()["id"]
        )
    group = taverna.api(
        "POST",
        "/groups",
        json={"name": f"港口{viewport['width']}", "character_ids": ids},
    ).json()
    chat = taverna.api("POST", f"/groups/{group['id']}/chats", json={}).json()
    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{taverna.url}/#/chat/{chat['id']}")
    page.locator("ol.messages .message").first.wait_for()
    stub.script(Reply(tokens=["阿岚说话了。"]), Reply(tokens=["白露说话了。"]))
    page.locator("#chat-input").fill("大家好")
    page.locator("#send").click()
    expect(page.locator("ol.messages > li.message").last).to_contain_text("说话了。")
    expect(page.locator("#send")).to_be_visible()
    page.wait_for_timeout(500)
    no_english(page, "group chat")
    shot(page, f"zh-{viewport['width']}-group-chat")
    assert errors == []
    context.close()
