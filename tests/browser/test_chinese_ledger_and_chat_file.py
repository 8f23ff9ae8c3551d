"""On a Chinese page: the prompt inspector's ledger of a chat longer than its context (the
cut messages and why, the tokens no part owns), and a chat file with a bad line or loose
values imported from the page. No English word is left in what a person reads (names and
their own content aside). Screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import shot
from tests.browser.test_chinese_server_words import DESKTOP, PHONE, no_english, open_zh
from tests.browser.test_pages import small_context
from tests.stubs.taverna_server import TavernaServer

pytestmark = pytest.mark.browser

SENT = "2024-05-01T10:00:00.000Z"


def chat_file(name: str, lines: list[str]) -> bytes:
    header = {"user_name": "用户", "character_name": name, "create_date": SENT}
    return "\n".join([json.dumps(header, ensure_ascii=False), *lines]).encode()


def message(name: str, user: bool, text: str) -> str:
    line = {"name": name, "is_user": user, "mes": text, "send_date": SENT}
    return json.dumps(line, ensure_ascii=False)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_ledger_of_a_chat_longer_than_its_context_is_chinese(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    st_fixtures: Path,
    viewport: dict[str, int],
) -> None:
    small_context(taverna, st_fixtures, 1500)
    character = taverna.api("GET", "/characters").json()[0]
    name = character["name"]
    lines = [
        message(
            "用户" if i % 2 == 0 else name, i % 2 == 0, f"第{i}段：" + "河水慢慢流过石桥。" * 12
        )
        for i in range(30)
    ]
    files = {"file": ("长聊天.jsonl", chat_file(name, lines), "application/jsonl")}
    made = taverna.api("POST", "/chats/import", files=files, data={"character_id": character["id"]})
    assert made.status_code == 201, made.text
    chat_id = made.json()["id"]
    ledger = taverna.api("GET", f"/chats/{chat_id}/prompt").json()["prompt"]["ledger"]
    cut = [i for i in ledger["items"] if not i["included"] and i["kind"] == "history"]
    assert cut and all(i["code"] for i in cut), (
        ledger["budget"],
        ledger["total_tokens"],
        [(i["kind"], i["included"], i["reason"]) for i in ledger["items"]][:8],
    )

    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    page.locator("ol.messages .message").first.wait_for()
    page.locator("#open-inspector").click()
    page.locator("#inspector [data-tab=ledger]").click()
    rows = page.locator("#inspector table.ledger tbody tr.cut")
    expect(rows.first).to_contain_text("已裁剪：预算：聊天记录从新到旧填入")
    expect(page.locator("#inspector table.ledger")).to_contain_text("每条回复都带有引导词元")
    no_english(page, "inspector ledger")
    rows.first.scroll_into_view_if_needed()
    shot(page, f"zh-{viewport['width']}-ledger-context-full")
    assert errors == []
    context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_chat_file_with_a_bad_line_is_told_in_chinese(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    tmp_path: Path,
    viewport: dict[str, int],
) -> None:
    name = taverna.api("GET", "/characters").json()[0]["name"]
    broken = tmp_path / "坏行.jsonl"
    broken.write_bytes(chat_file(name, [message(name, False, "你好。"), '{"name": 哎}']))
    listed = tmp_path / "列表行.jsonl"
    listed.write_bytes(chat_file(name, [message(name, False, "你好。"), "[1, 2]"]))
    loose = tmp_path / "松散.jsonl"
    # a file imported before gives back its chat and no warnings: one file a viewport
    loose_line = json.loads(message("用户", True, f"早。{viewport['width']}"))
    loose_line["is_user"] = "yes"
    loose.write_bytes(chat_file(name, [message(name, False, "你好。"), json.dumps(loose_line)]))

    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{taverna.url}/#/import")
    page.locator("#chat-file").set_input_files(str(broken))
    toast = page.locator("#toasts .toast.error").last
    expect(toast).to_contain_text("第 3 行：不是有效的 JSON，位于第 10 列")
    expect(toast).to_contain_text("坏行.jsonl")
    no_english(page, "chat file with a line that is not JSON")
    shot(page, f"zh-{viewport['width']}-chat-file-bad-line")

    page.locator("#chat-file").set_input_files(str(listed))
    toast = page.locator("#toasts .toast.error", has_text="列表行.jsonl")
    expect(toast).to_contain_text("第 3 行：应为 JSON 对象，实际是 列表")
    no_english(page, "chat file with a list for a line")

    page.locator("#chat-file").set_input_files(str(loose))
    # the warning is told for 8 seconds, as the chat opens
    warning = page.locator("#toasts .toast.warning").last
    expect(warning).to_contain_text("松散.jsonl")
    expect(warning).to_contain_text("第 3 行：")
    no_english(page, "chat file read loosely")
    shot(page, f"zh-{viewport['width']}-chat-file-loose")
    page.wait_for_url("**/#/chat/**")
    assert errors == []
    context.close()
