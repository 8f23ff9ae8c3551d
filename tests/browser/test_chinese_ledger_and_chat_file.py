"""On a Chinese page: the prompt inspector's ledger of a chat longer than its context (the
cut messages and why, the tokens no part owns), and a chat file with a bad line or loose
values imported from the page. No English word is left in what a person reads (names and
their own content aside). Screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import shot
from tests.browser.test_chinese_server_words import DESKTOP, PHONE, no_english, open_zh
from tests.browser.test_pages import small_context
from tests.stubs.model_server import StubServer
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


KEEPER = "守灯人"


def _keeper_chat(taverna: TavernaServer, width: int) -> str:
    """A chat with a character who has two blocks of example dialogue and a character's
    note at depth 2, whose history the context cannot hold: one long message stops it, so
    the example blocks fit after it."""
    found = [c for c in taverna.api("GET", "/characters").json() if c["name"] == KEEPER]
    character = (
        found[0]
        if found
        else taverna.api(
            "POST",
            "/characters",
            json={
                "name": KEEPER,
                "description": "守着海边灯塔的老人。",
                "first_mes": "潮水来了。",
                "mes_example": (
                    "<START>\n{{user}}: 灯还亮着吗？\n{{char}}: 一直亮着。\n"
                    "<START>\n{{user}}: 今晚有船吗？\n{{char}}: 有两条。"
                ),
                "depth_prompt": "记得看潮汐表。",
                "depth_prompt_depth": 2,
                "depth_prompt_role": "system",
            },
        ).json()
    )
    lines = [
        message(
            "用户" if i % 2 == 0 else KEEPER,
            i % 2 == 0,
            ("雾很浓，灯塔的光一圈圈扫过海面。" * 400) if i == 25 else f"第{i}段：海浪拍岸。",
        )
        for i in range(30)
    ]
    files = {"file": (f"守灯{width}.jsonl", chat_file(KEEPER, lines), "application/jsonl")}
    made = taverna.api("POST", "/chats/import", files=files, data={"character_id": character["id"]})
    assert made.status_code == 201, made.text
    chat_id: str = made.json()["id"]
    return chat_id


# The engine's English words for where a part came from (its `source`).
ENGINE_WORDS = re.compile(
    r"reply priming|token padding|older messages|\d+ messages|block \d|depth \d|story string"
    r"|lorebook and extension|context template|being continued|system message"
)


def _no_words_hidden_as_names(page: Page) -> None:
    """What the page marks as a name (left as written) holds no words of the engine's."""
    named = page.locator(
        '#inspector table.ledger td.src [translate="no"], '
        '#inspector table.ledger td.src[translate="no"]'
    ).all_inner_texts()
    hidden = [text for text in named if ENGINE_WORDS.search(text)]
    assert not hidden, hidden


def _codes(taverna: TavernaServer, chat_id: str) -> set[str]:
    ledger = taverna.api("GET", f"/chats/{chat_id}/prompt").json()["prompt"]["ledger"]
    return {i["source_code"] for i in ledger["items"] if i["source_code"]}


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_where_each_part_came_from_is_said_in_chinese(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    stub: StubServer,
    st_fixtures: Path,
    viewport: dict[str, int],
) -> None:
    """The inspector's source column and the prompt's message heads, for a Chat Completion
    prompt (older messages cut, example blocks, a character's note at depth) and the same
    chat as a Text Completion prompt (token padding, example blocks, the note at depth)."""
    small_context(taverna, st_fixtures, 1500)
    chat_id = _keeper_chat(taverna, viewport["width"])
    codes = _codes(taverna, chat_id)
    assert {"reply_priming", "older_messages", "depth_injection", "example_block_turn"} <= codes, (
        codes
    )

    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    page.locator("ol.messages .message").first.wait_for()
    page.locator("#open-inspector").click()
    heads = page.locator("#inspector .prompt-messages .pm-source")
    expect(heads.filter(has_text="示例第 1 组，第 2 轮")).to_have_count(1)
    expect(heads.filter(has_text=f"深度 2，系统：{KEEPER}")).to_have_count(1)
    no_english(page, "inspector prompt, Chat Completion")
    shot(page, f"zh-{viewport['width']}-prompt-sources")
    page.locator("#inspector [data-tab=ledger]").click()
    table = page.locator("#inspector table.ledger")
    expect(table).to_contain_text("回复引导")
    expect(table).to_contain_text("条更早的消息")
    expect(table).to_contain_text("示例第 2 组，第 1 轮")
    expect(table).to_contain_text(f"深度 2，系统：{KEEPER}")
    no_english(page, "inspector ledger, Chat Completion")
    _no_words_hidden_as_names(page)
    table.locator("tr", has_text="条更早的消息").scroll_into_view_if_needed()
    shot(page, f"zh-{viewport['width']}-ledger-sources")
    page.locator("#close-inspector").click()

    # The same chat through a Text Completion connection.
    name = f"文本{viewport['width']}"
    made = taverna.api(
        "POST",
        "/connections",
        json={
            "name": name,
            "api": "openai-text",
            "url": stub.base_url("openai-text"),
            "model": "m",
        },
    )
    assert made.status_code == 201, made.text
    revision = taverna.api("GET", f"/chats/{chat_id}?limit=1").json()["revision"]
    chosen = taverna.api(
        "PUT", f"/chats/{chat_id}/connection", json={"connection": name, "revision": revision}
    )
    assert chosen.status_code == 200, chosen.text
    prompt = taverna.api("GET", f"/chats/{chat_id}/prompt").json()["prompt"]
    assert prompt["kind"] == "text"
    codes = {i["source_code"] for i in prompt["ledger"]["items"] if i["source_code"]}
    assert {"token_padding", "depth_injection", "example_block"} <= codes, codes
    page.locator("#open-inspector").click()
    page.locator("#inspector [data-tab=ledger]").click()
    table = page.locator("#inspector table.ledger")
    expect(table).to_contain_text("词元余量")
    expect(table).to_contain_text("示例第 1 组")
    expect(table).to_contain_text("深度 2，系统：角色注释")
    no_english(page, "inspector ledger, Text Completion")
    _no_words_hidden_as_names(page)
    shot(page, f"zh-{viewport['width']}-ledger-sources-text")
    assert errors == []
    context.close()


def test_where_each_part_came_from_reads_in_english_on_an_english_page(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    st_fixtures: Path,
) -> None:
    small_context(taverna, st_fixtures, 1500)
    chat_id = _keeper_chat(taverna, 0)
    context = chromium.new_context(viewport=DESKTOP)
    context.add_init_script("localStorage.setItem('taverna.lang', 'en')")
    page = context.new_page()
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    page.locator("ol.messages .message").first.wait_for()
    page.locator("#open-inspector").click()
    page.locator("#inspector [data-tab=ledger]").click()
    table = page.locator("#inspector table.ledger")
    expect(table).to_contain_text("reply priming")
    expect(table).to_contain_text("25 older messages")
    expect(table).to_contain_text("example block 2, turn 1")
    expect(table).to_contain_text(f"depth 2 system: {KEEPER}")
    shot(page, "en-1280-ledger-sources")
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
    # the file and the line are each named once
    said = toast.inner_text()
    assert said.count("坏行.jsonl") == 1 and said.count("3") == 1, said
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
    # the line named once and what was read in words; the field's path under "details"
    expect(warning).to_contain_text('第 3 行：文本 "yes" 按真值读取')
    expect(warning.locator("details.field-path code")).to_have_text("is_user")
    assert warning.inner_text().count("3") == 1, warning.inner_text()
    no_english(page, "chat file read loosely")
    shot(page, f"zh-{viewport['width']}-chat-file-loose")
    page.wait_for_url("**/#/chat/**")
    assert errors == []
    context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_broken_file_is_told_in_chinese_with_the_readers_words_folded(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    tmp_path: Path,
    viewport: dict[str, int],
) -> None:
    """Cards and chat files a library cannot read (not a zip, JSON with a syntax error, text
    that is not UTF-8): the sentence says why in Chinese, the library's
    English is a fold away, marked as the original."""
    name = taverna.api("GET", "/characters").json()[0]["name"]
    files = {
        "不是压缩包.charx": (b"PK\x03\x04" + b"\0" * 64, "文件不是 zip 压缩包"),
        "坏编码.json": (b'{"name": "\xff"}', "第 10 字节不能作为 UTF-8 字符的开头"),
        "坏卡.json": (
            b'{"spec": "chara_card_v2", "data": {"name": x}}',
            "JSON 无效，位于第 1 行第 44 列",
        ),
    }
    context, page, errors = open_zh(chromium, viewport)
    page.goto(f"{taverna.url}/#/import")
    for file, (data, said) in files.items():
        path = tmp_path / file
        path.write_bytes(data)
        page.locator("#card-files").set_input_files(str(path))
        toast = page.locator("#toasts .toast.error", has_text=file)
        expect(toast).to_contain_text(said)
        fold = toast.locator("details.raw-detail")
        expect(fold.locator("summary")).to_have_text("原始信息（英文）")
        no_english(page, f"card {file}")
        fold.locator("summary").click()
        expect(fold.locator("[translate=no]")).to_be_visible()
        shot(page, f"zh-{viewport['width']}-broken-{path.suffix[1:]}")
        page.evaluate("document.getElementById('toasts').replaceChildren()")

    # a chat file whose text is not UTF-8
    latin = tmp_path / "旧编码.jsonl"
    latin.write_bytes(chat_file(name, [message(name, False, "你好。")]) + b"\n" + b"\xff\xfe")
    page.locator("#chat-file").set_input_files(str(latin))
    toast = page.locator("#toasts .toast.error", has_text="旧编码.jsonl")
    expect(toast).to_contain_text("字节不能作为 UTF-8 字符的开头")
    no_english(page, "chat file not UTF-8")
    shot(page, f"zh-{viewport['width']}-chat-file-not-utf8")
    assert errors == []
    context.close()


def test_merged_system_messages_name_each_part_in_chinese(
    chromium,  # type: ignore[no-untyped-def]
    taverna: TavernaServer,
    st_fixtures: Path,
) -> None:
    """Squashed system messages: each merged part in the page's language (a character's
    note at depth 0 by its depth and role, the post-history instructions by the slot's
    name), the character's name as written."""
    path = st_fixtures / "presets" / "openai" / "Default.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(squash_system_messages=True, openai_max_context=4000)
    files = {"file": ("合并.json", json.dumps(data).encode(), "application/json")}
    preset = taverna.api("POST", "/presets/import?kind=chat", files=files).json()
    taverna.api("POST", f"/presets/{preset['id']}/activate")
    name = "合并守灯人"
    character = taverna.api(
        "POST",
        "/characters",
        json={
            "name": name,
            "first_mes": "潮水来了。",
            "post_history_instructions": "只写一段。",
            "depth_prompt": "记得看潮汐表。",
            "depth_prompt_depth": 0,
            "depth_prompt_role": "system",
        },
    ).json()
    lines = [message("用户" if i % 2 == 0 else name, i % 2 == 0, f"第{i}段。") for i in range(4)]
    files = {"file": ("合并.jsonl", chat_file(name, lines), "application/jsonl")}
    made = taverna.api("POST", "/chats/import", files=files, data={"character_id": character["id"]})
    assert made.status_code == 201, made.text
    chat_id = made.json()["id"]
    ledger = taverna.api("GET", f"/chats/{chat_id}/prompt").json()["prompt"]["ledger"]
    merged = [i for i in ledger["items"] if i["source_code"] == "merged"]
    assert any(i["source"] == f"depth 0 system: {name}+jailbreak:character" for i in merged), [
        i["source"] for i in ledger["items"]
    ]

    context, page, errors = open_zh(chromium, DESKTOP)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    page.locator("ol.messages .message").first.wait_for()
    page.locator("#open-inspector").click()
    page.locator("#inspector [data-tab=ledger]").click()
    table = page.locator("#inspector table.ledger")
    row = table.locator("tr[data-source-code=merged]", has_text=name)
    expect(row).to_have_count(1)
    expect(row.locator("td.src")).to_have_text(f"深度 0，系统：{name} + 历史后指令")
    no_english(page, "inspector ledger, merged system messages")
    _no_words_hidden_as_names(page)
    row.scroll_into_view_if_needed()
    shot(page, "zh-1280-ledger-merged")
    assert errors == []
    context.close()
