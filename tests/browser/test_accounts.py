"""Two people on one `taverna serve --accounts`, each in their own browser: a login form
first (the server answers 401), then only their own chats, their name and a logout in
the header."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from taverna.server.context import open_context
from taverna.services.chats.editing import start_chat
from tests.browser.conftest import shot
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import serving

PASSWORDS = {"alice": "alice's long secret", "bob": "bob's long secret"}


def add_user(data: Path, name: str, *extra: str) -> None:
    taverna = str(Path(sys.executable).parent / "taverna")
    subprocess.run(
        [taverna, "user", "add", name, "--data", str(data), *extra],
        input=PASSWORDS[name] + "\n",
        text=True,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TavernaServer]:
    data = tmp_path_factory.mktemp("accounts") / "data"
    add_user(data, "alice", "--admin")
    add_user(data, "bob")
    card = (files("taverna") / "data" / "Ione Calder.png").read_bytes()
    ctx = open_context(data)
    try:
        accounts = ctx.accounts()
        for name in PASSWORDS:
            owner = accounts.get(name).id
            character = ctx.library(owner).import_bytes(card, "Ione.png")
            start_chat(ctx.chats, character.id, title=f"{name.title()}'s own chat", owner=owner)
    finally:
        ctx.close()
    with serving(data, args=("--accounts",)) as server:
        yield server


@pytest.mark.parametrize("name", list(PASSWORDS))
def test_each_person_logs_in_and_sees_only_their_chats(
    chromium: object, shared: TavernaServer, name: str
) -> None:
    from playwright.sync_api import expect

    other = next(n for n in PASSWORDS if n != name)
    context = chromium.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{shared.url}/#/chats")
    expect(page.locator("#login-form")).to_be_visible()
    expect(page.locator("#nav")).to_be_hidden()
    page.fill("#login-name", name)
    page.fill("#login-password", "wrong password")
    page.click("#login-form button[type=submit]")
    expect(page.locator("#login-error")).to_have_text("Wrong name or password.")
    if name == "alice":
        shot(page, "accounts-login")
    page.fill("#login-password", PASSWORDS[name])
    page.click("#login-form button[type=submit]")
    expect(page.locator("#account")).to_contain_text(f"Signed in as {name}")
    expect(page.get_by_text(f"{name.title()}'s own chat")).to_be_visible()
    expect(page.get_by_text(f"{other.title()}'s own chat")).to_have_count(0)
    shot(page, f"accounts-{name}-chats")
    # A write from the page carries the session's CSRF token: the rename is stored.
    renamed = f"{name.title()}'s renamed chat"
    page.once("dialog", lambda dialog: dialog.accept(renamed))
    page.get_by_role("button", name="Rename").click()
    expect(page.get_by_text(renamed)).to_be_visible()
    page.reload()
    expect(page.get_by_text(renamed)).to_be_visible()
    # Logging out brings the login form back, and the API answers 401 again.
    page.click("#logout")
    expect(page.locator("#login-form")).to_be_visible()
    context.close()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_login_form_and_the_account_header_are_chinese_and_fit(
    chromium: object, shared: TavernaServer, size: str
) -> None:
    """A server with accounts, walked in Chinese: the login form, a wrong password, then a
    page with the account's name and logout in the header. No English word but names, and
    at 375 px nothing wider than the screen."""
    from playwright.sync_api import expect

    from tests.browser.test_phone_and_language import (
        ALLOWED,
        DESKTOP,
        ENGLISH_WORDS,
        PHONE,
        TOO_WIDE,
    )

    phone = size == "phone"
    context = chromium.new_context(  # type: ignore[attr-defined]
        viewport=PHONE if phone else DESKTOP, has_touch=phone, is_mobile=phone
    )
    context.add_init_script("localStorage.setItem('taverna.lang', 'zh-CN')")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    found: dict[str, list[str]] = {}

    def check(step: str) -> None:
        page.wait_for_timeout(150)
        words = page.evaluate(ENGLISH_WORDS, ALLOWED)
        wide = page.evaluate(TOO_WIDE) if phone else []
        if words or wide:
            found[step] = words + wide
        shot(page, f"accounts-{size}-zh-{step}")

    page.goto(f"{shared.url}/#/chats")
    expect(page.locator("#login-form")).to_be_visible()
    check("login")
    page.fill("#login-name", "bob")
    page.fill("#login-password", "wrong password")
    page.click("#login-form button[type=submit]")
    expect(page.locator("#login-error")).to_have_text("用户名或密码错误。")
    check("login-failed")
    page.fill("#login-password", PASSWORDS["bob"])
    page.click("#login-form button[type=submit]")
    expect(page.locator("#account")).to_contain_text("bob")
    # the chat's title as the person named it (the walk above may have renamed it)
    expect(page.get_by_text(re.compile("^Bob's .* chat$"))).to_be_visible()
    check("chats")
    assert not found, "\n".join(f"{step}: {sorted(set(f))}" for step, f in found.items())
    assert errors == []
    context.close()
