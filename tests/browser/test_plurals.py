"""Counts read right in both languages: "1 message · 1 branch", not "1 messages · 1 branches";
the catalogue's plural forms are chosen by the language's own plural rules."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import new_page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("size", "lang", "viewport", "one", "many"),
    [
        (
            "desktop",
            "en",
            {"width": 1280, "height": 800},
            "1 message · 1 branch",
            "2 messages · 3 branches",
        ),
        (
            "phone",
            "zh-CN",
            {"width": 375, "height": 812},
            "1 条消息 · 1 个分支",
            "2 条消息 · 3 个分支",
        ),
    ],
)
def test_counts_of_one_and_of_many_read_right(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size, lang, viewport, one, many
) -> None:
    name = f"Solo {size}"
    card = taverna.api("POST", "/characters", json={"name": name, "first_mes": "Alone."}).json()
    taverna.api("POST", "/chats", json={"character_id": card["id"]})
    context, page, _ = new_page(chromium, viewport, lang)
    page.goto(f"{taverna.url}/#/chats")
    item = page.locator("li", has_text=name).first
    expect(item).to_contain_text(one)
    said = page.evaluate(
        """async () => {
            const { t } = await import('/js/i18n.js');
            return [t('chats.summary', { messages: 2, branches: 3 }), t('chats.length', { n: 0 }),
                    t('chats.length', { n: 1 }), t('import.chat_done', { n: 1 }),
                    t('chats.summary', { messages: 1, branches: 2 }),
                    t('lorebooks.entries', { n: 1 }), t('lorebooks.entries', { n: 2 }),
                    t('qr.count', { n: 1 }), t('chat.fork_follow', { n: 1, k: 2 }),
                    t('tree.summary', { messages: 5, runs: 1, here: 4 }), t('tree.run_count', { n: 1 })];
        }"""
    )
    assert said[0] == many
    if lang == "en":
        assert said[1:] == [
            "0 messages",
            "1 message",
            "Chat imported: 1 message",
            "1 message · 2 branches",
            "1 entry",
            "2 entries",
            "1 reply",
            "1 message follows on candidate 2.",
            "5 messages in 1 run; you are at #4.",
            "1 message",
        ]
    else:
        assert said[1:] == [
            "0 条消息",
            "1 条消息",
            "聊天已导入：1 条消息",
            "1 条消息 · 2 个分支",
            "1 个条目",
            "2 个条目",
            "1 条回复",
            "候选 2 之后还有 1 条消息。",
            "共 5 条消息，分为 1 段；你在 #4。",
            "1 条消息",
        ]
    shot(page, f"{size}-{lang}-plural-counts")
    context.close()
