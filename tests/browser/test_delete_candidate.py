"""Deleting a reply that is one of several candidates asks about that candidate (the others
stay), not "Delete this message?"; a message of one candidate is still asked about as a message."""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import new_page

pytestmark = pytest.mark.browser


def chat_with_candidates(server: TavernaServer, name: str) -> str:
    character = server.api("POST", "/characters", json={"name": name, "first_mes": "Hi."}).json()
    lines = [
        {"user_name": "You", "character_name": name, "create_date": "2024-05-01@10h00m00s"},
        {"name": name, "is_user": False, "send_date": "2024-05-01@10h00m01s", "mes": "Hi."},
        {"name": "You", "is_user": True, "send_date": "2024-05-01@10h00m02s", "mes": "Lamp?"},
        {
            "name": name, "is_user": False, "send_date": "2024-05-01@10h00m03s",
            "mes": "Lit.", "swipes": ["Lit.", "Dark.", "Broken."], "swipe_id": 0,
        },
    ]  # fmt: skip
    body = "\n".join(json.dumps(line) for line in lines).encode()
    done = server.api(
        "POST",
        "/chats/import",
        files={"file": (f"{name}.jsonl", body, "application/jsonl")},
        data={"character_id": character["id"]},
    ).json()
    return str(done["id"])


@pytest.mark.parametrize(
    ("size", "lang", "viewport", "delete", "candidate", "message"),
    [
        (
            "desktop",
            "en",
            {"width": 1280, "height": 800},
            "Delete",
            "candidate (1 of 3)",
            "Delete this message?",
        ),
        (
            "phone",
            "zh-CN",
            {"width": 375, "height": 812},
            "删除",
            "第 1 个，共 3 个",
            "删除这条消息",
        ),
    ],
)
def test_deleting_one_candidate_asks_about_the_candidate(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size, lang, viewport, delete, candidate, message
) -> None:
    chat_id = chat_with_candidates(taverna, f"Lampkeeper {size}")
    context, page, _ = new_page(chromium, viewport, lang)
    asked: list[str] = []
    page.on("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    reply = page.locator("li.message", has_text="Lit.")
    reply.wait_for()
    shot(page, f"{size}-{lang}-delete-candidate")
    reply.get_by_role("button", name=delete, exact=True).click()
    page.locator("li.message", has_text="Lamp?").get_by_role(
        "button", name=delete, exact=True
    ).click()
    page.wait_for_timeout(300)
    assert len(asked) == 2, asked
    assert candidate in asked[0] and message not in asked[0], asked
    assert asked[1].startswith(message), asked
    # Dismissed: nothing was deleted.
    assert page.locator("li.message", has_text="Lit.").count() == 1
    context.close()
