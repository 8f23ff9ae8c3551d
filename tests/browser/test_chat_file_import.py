"""Importing one SillyTavern chat file from the Import page: it goes to the character it
names; naming one the library lacks, the page asks to choose a character or create it.
Both languages, both sizes."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import shot
from tests.stubs.taverna_server import TavernaServer
from tests.support.browser import SIZES, new_page

pytestmark = pytest.mark.browser


def st_chat(character: str, words: str) -> bytes:
    lines = [
        {"user_name": "You", "character_name": character, "create_date": "2024-05-01@10h00m00s"},
        {"name": character, "is_user": False, "send_date": "2024-05-01@10h00m01s", "mes": "Hi."},
        {"name": "You", "is_user": True, "send_date": "2024-05-01@10h00m02s", "mes": words},
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


def pick(page: Page, name: str, data: bytes) -> None:
    page.goto(page.url.split("#")[0] + "#/import")
    page.locator("#pick-chat-file").wait_for()
    page.locator("#chat-file").set_input_files(
        files=[{"name": name, "mimeType": "application/jsonl", "buffer": data}]
    )


def chats_of(server: TavernaServer, name: str) -> list[str]:
    found = [c for c in server.api("GET", "/characters").json() if c["name"] == name]
    assert len(found) == 1, found
    listed = server.api("GET", f"/chats?character_id={found[0]['id']}").json()
    return [c["id"] for c in listed]


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_a_chat_file_is_imported_from_the_page(
    chromium,  # type: ignore[no-untyped-def]
    fresh: TavernaServer,
    size: str,
    lang: str,
) -> None:
    mira = f"Mira {size}"
    fresh.api("POST", "/characters", json={"name": mira, "first_mes": "Hi."})
    context, page, errors = new_page(chromium, SIZES[size], lang)
    page.goto(f"{fresh.url}/#/import")
    shot(page, f"{size}-{lang}-import-page")

    # The file names a character of the library: the chat opens at once.
    pick(page, f"{mira}.jsonl", st_chat(mira, "Is the lamp lit?"))
    expect(page.locator(".message", has_text="Is the lamp lit?")).to_be_visible()
    assert "#/chat/" in page.url
    assert page.url.rsplit("/", 1)[1] in chats_of(fresh, mira)

    # A character the library lacks: the page asks; create it and import.
    nemo = f"Nemo {size}"
    pick(page, f"{nemo}.jsonl", st_chat(nemo, "Who are you?"))
    expect(page.locator(".chat-file-choice")).to_contain_text(nemo)
    shot(page, f"{size}-{lang}-import-chat-choose")
    page.locator("#chat-file-create").click()
    expect(page.locator(".message", has_text="Who are you?")).to_be_visible()
    assert page.url.rsplit("/", 1)[1] in chats_of(fresh, nemo)

    # Or choose one of the library's characters for it.
    ghost = f"Ghost {size}"
    pick(page, f"{ghost}.jsonl", st_chat(ghost, "Anyone there?"))
    page.locator("#chat-file-character").select_option(label=mira)
    page.locator("#chat-file-use").click()
    expect(page.locator(".message", has_text="Anyone there?")).to_be_visible()
    assert page.url.rsplit("/", 1)[1] in chats_of(fresh, mira)
    assert not [c for c in fresh.api("GET", "/characters").json() if c["name"] == ghost]
    assert errors == []
    context.close()


def test_a_refused_chat_file_names_its_file_and_line_once(chromium, fresh: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    """In English too: the file named once, the line of the file once (never the parser's
    own count of lines), and a loose value's line before its field."""
    name = "Mira once"
    fresh.api("POST", "/characters", json={"name": name, "first_mes": "Hi."})
    head = st_chat(name, "Fine.").decode().splitlines()
    context = chromium.new_context(viewport=SIZES["desktop"])
    context.add_init_script("localStorage.setItem('taverna.lang', 'en')")
    page = context.new_page()
    page.goto(f"{fresh.url}/#/import")
    pick(page, "broken.jsonl", "\n".join([*head, '{"name": x}']).encode())
    toast = page.locator("#toasts .toast.error", has_text="broken.jsonl")
    expect(toast).to_contain_text("line 4: not valid JSON at column 10")
    said = toast.inner_text()
    assert said.count("broken.jsonl") == 1 and "line 1" not in said, said
    loose = json.loads(head[1])
    loose["is_user"] = "yes"
    pick(page, "loose.jsonl", "\n".join([*head, json.dumps(loose)]).encode())
    warning = page.locator("#toasts .toast.warning", has_text="loose.jsonl")
    # The line and what was read in words; the field's path folded under "details".
    expect(warning).to_contain_text('line 4: the text "yes" is read as true')
    expect(warning.locator("details.field-path code")).to_have_text("is_user")
    context.close()
