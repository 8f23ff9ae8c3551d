"""The admin's Accounts page and a person's own page, in Chromium, in English and Chinese,
on a desktop and a phone: the admin adds an account, the new person logs in in a browser
of their own, the admin resets their password (they are logged out) and sets a storage
quota they then meet, a stranger locks their name out and the admin unlocks it, and the
account is deleted. SillyTavern users are imported from a folder on the server machine."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import shot
from tests.browser.test_accounts import PASSWORDS, add_user
from tests.browser.test_phone_and_language import ALLOWED, ENGLISH_WORDS, SMALL_TARGETS, TOO_WIDE
from tests.server.test_accounts_import import make_install
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import serving

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 800}
# Units a Chinese page writes as they are, beside the product's own words.
UNITS = ["MB", "kB", "GB"]
DANA = "dana's first secret"
DANA_AGAIN = "dana's second secret"

WORDS = {
    "en": {
        "accounts": "Accounts",
        "mine": "My account",
        "signed_in": "Signed in as dana",
        "wrong": "Wrong name or password.",
        "too_many": "too many failed logins",
        "full": "holds",
        "locked": "locked out",
        "skipped": "no account named 'carol'",
        "hourly": "0 of 3",
        "reset": "New password set for dana",
    },
    "zh-CN": {
        "accounts": "账户",
        "mine": "我的账户",
        "signed_in": "当前用户：dana",
        "wrong": "用户名或密码错误。",
        "too_many": "登录失败次数过多",
        "full": "字节",
        "locked": "已锁定",
        "skipped": "没有名为 'carol' 的账户",
        "hourly": "0／3",
        "reset": "已为 dana 设置新密码",
    },
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TavernaServer]:
    """A server with accounts and its admin alice, for one test alone (the login limit
    counts every failure from 127.0.0.1)."""
    data = tmp_path / "data"
    add_user(data, "alice", "--admin")
    add_user(data, "bob")
    with serving(data, args=("--accounts",)) as started:
        yield started


def open_page(chromium: Any, server: TavernaServer, lang: str, viewport: dict[str, int]) -> Page:
    phone = viewport["width"] < 700
    context = chromium.new_context(viewport=viewport, has_touch=phone, is_mobile=phone)
    page: Page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{server.url}/#/characters")
    page.evaluate("(lang) => localStorage.setItem('taverna.lang', lang)", lang)
    page.reload()
    return page


def log_in(page: Page, name: str, password: str) -> None:
    page.fill("#login-name", name)
    page.fill("#login-password", password)
    page.click("#login-form button[type=submit]")


def open_nav(page: Page, phone: bool) -> None:
    if phone:
        page.click("#menu-toggle")


def follow_link(page: Page, phone: bool, href: str) -> None:
    """Go by the menu's link; on a phone, wait until the menu has slid away again."""
    page.locator(f"#nav a[href='{href}']").click()
    if phone:
        expect(page.locator("#nav")).to_be_hidden()


def check_page(page: Page, lang: str, phone: bool, what: str) -> None:
    """Nothing English left in the Chinese page; on a phone, nothing wider than the screen
    and every control 44 px each way."""
    if lang != "en":
        assert page.evaluate(ENGLISH_WORDS, ALLOWED + UNITS) == [], what
    if phone:
        assert page.evaluate(TOO_WIDE) == [], what
        assert page.evaluate(SMALL_TARGETS) == [], what


def row(page: Page, name: str) -> Any:
    return page.locator(f"#account-list li[data-name='{name}']")


VARIANTS = [
    ("en", DESKTOP),
    ("en", PHONE),
    ("zh-CN", DESKTOP),
    ("zh-CN", PHONE),
]


@pytest.mark.parametrize(
    ("lang", "viewport"),
    VARIANTS,
    ids=lambda v: str(v.get("width", v)) if isinstance(v, dict) else v,
)
def test_the_admin_manages_an_account_from_the_page(
    chromium: Any, server: TavernaServer, lang: str, viewport: dict[str, int]
) -> None:
    words = WORDS[lang]
    phone = viewport["width"] < 700
    size = "phone" if phone else "desktop"
    admin = open_page(chromium, server, lang, viewport)
    errors: list[str] = []
    admin.on("pageerror", lambda e: errors.append(str(e)))
    log_in(admin, "alice", PASSWORDS["alice"])
    expect(admin.locator("#account")).to_be_visible()
    open_nav(admin, phone)
    follow_link(admin, phone, "#/accounts")
    expect(row(admin, "bob")).to_be_visible()
    expect(row(admin, "alice")).to_be_visible()
    # An admin may not disable or delete their own account: no buttons for it.
    expect(row(admin, "alice").locator(".delete-account")).to_have_count(0)

    # Add an account.
    admin.fill("#new-account-name", "dana")
    admin.fill("#new-account-password", DANA)
    admin.click("#new-account-form button[type=submit]")
    expect(row(admin, "dana")).to_be_visible()
    check_page(admin, lang, phone, "accounts")
    shot(admin, f"admin-{size}-{lang}-accounts")

    # Dana logs in in a browser of her own: her name, My account, no Accounts.
    user = open_page(chromium, server, lang, viewport)
    log_in(user, "dana", DANA)
    expect(user.locator("#account")).to_contain_text(words["signed_in"])
    open_nav(user, phone)
    expect(user.locator("#nav a[href='#/accounts']")).to_have_count(0)
    follow_link(user, phone, "#/account")
    expect(user.locator("#my-storage")).to_be_visible()
    check_page(user, lang, phone, "my account")
    shot(user, f"admin-{size}-{lang}-my-account")

    # The admin resets her password: her session ends; the new password lets her in.
    row(admin, "dana").locator(".reset-password").click()
    row(admin, "dana").locator("input[type=password]").fill(DANA_AGAIN)
    check_page(admin, lang, phone, "reset password form")
    row(admin, "dana").locator("form:not([hidden]) button[type=submit]").click()
    expect(admin.locator(".toast", has_text=words["reset"])).to_be_visible()
    user.reload()
    expect(user.locator("#login-form")).to_be_visible()
    log_in(user, "dana", DANA)
    expect(user.locator("#login-error")).to_have_text(words["wrong"])
    log_in(user, "dana", DANA_AGAIN)
    expect(user.locator("#account")).to_contain_text(words["signed_in"])

    # A storage quota of nothing: her next write that adds to her library is refused.
    row(admin, "dana").locator(".set-quota").click()
    row(admin, "dana").locator("input[id^=storage-]").fill("0")
    row(admin, "dana").locator("input[id^=hourly-]").fill("3")
    check_page(admin, lang, phone, "quota form")
    shot(admin, f"admin-{size}-{lang}-quota")
    row(admin, "dana").locator("form:not([hidden]) button[type=submit]").click()
    expect(row(admin, "dana")).to_contain_text(words["hourly"])
    user.goto(f"{server.url}/#/account")
    user.reload()  # drawn afresh: the quota just set
    expect(user.locator("#my-generations")).to_contain_text(words["hourly"])
    user.goto(f"{server.url}/#/lorebooks")
    user.once("dialog", lambda dialog: dialog.accept("Tide tables"))
    user.locator("main .page-head button").nth(1).click()
    expect(user.locator(".toast.error")).to_contain_text(words["full"])
    expect(user.locator(".toast.error")).to_contain_text("dana")
    shot(user, f"admin-{size}-{lang}-quota-met")

    # A stranger tries her name until it is locked out; the admin unlocks it.
    stranger = open_page(chromium, server, lang, viewport)
    for _ in range(5):
        log_in(stranger, "dana", "a guess that is wrong")
        expect(stranger.locator("#login-error")).to_have_text(words["wrong"])
        stranger.locator("#login-error").evaluate("(el) => { el.textContent = ''; }")
    log_in(stranger, "dana", DANA_AGAIN)
    expect(stranger.locator("#login-error")).to_contain_text(words["too_many"])
    shot(stranger, f"admin-{size}-{lang}-locked-login")
    admin.click("#accounts-refresh")
    expect(row(admin, "dana")).to_contain_text(words["locked"])
    check_page(admin, lang, phone, "locked out")
    shot(admin, f"admin-{size}-{lang}-locked")
    row(admin, "dana").locator(".unlock").click()
    expect(row(admin, "dana").locator(".unlock")).to_have_count(0)
    expect(row(admin, "dana")).not_to_contain_text(words["locked"])
    log_in(stranger, "dana", DANA_AGAIN)
    expect(stranger.locator("#account")).to_contain_text(words["signed_in"])

    # Deleted, with a confirmation that says what goes with it: she is logged out.
    said: list[str] = []

    def accept(dialog: Any) -> None:
        said.append(dialog.message)
        dialog.accept()

    admin.once("dialog", accept)
    row(admin, "dana").locator(".delete-account").click()
    expect(row(admin, "dana")).to_have_count(0)
    assert "dana" in said[0] and re.search("chats|聊天", said[0])
    user.reload()
    expect(user.locator("#login-form")).to_be_visible()
    assert errors == []


@pytest.mark.parametrize(
    ("lang", "viewport"), [("en", DESKTOP), ("zh-CN", PHONE)], ids=["en-desktop", "zh-phone"]
)
def test_the_admin_imports_sillytavern_users_from_a_folder_on_the_server(
    chromium: Any, server: TavernaServer, tmp_path: Path, lang: str, viewport: dict[str, int]
) -> None:
    words = WORDS[lang]
    phone = viewport["width"] < 700
    size = "phone" if phone else "desktop"
    install = make_install(tmp_path / "SillyTavern")
    admin = open_page(chromium, server, lang, viewport)
    log_in(admin, "alice", PASSWORDS["alice"])
    expect(admin.locator("#account")).to_be_visible()
    admin.goto(f"{server.url}/#/accounts")
    # a path that is no SillyTavern folder: said with the path, nothing stored
    admin.fill("#st-server-path", str(tmp_path / "nowhere"))
    admin.click("#st-server-import")
    expect(admin.locator("#st-server-status")).to_contain_text(str(tmp_path / "nowhere"))
    admin.fill("#st-server-path", str(install))
    admin.fill("#st-server-mapping", "default-user=alice")
    admin.click("#st-server-import")
    summary = admin.locator("#st-server-summary")
    expect(summary.locator("[data-handle=alice]")).to_contain_text("Ione Calder")
    expect(summary.locator("[data-handle=carol]")).to_contain_text(words["skipped"])
    expect(summary.locator("[data-handle=default-user]")).to_contain_text("Brasswater")
    expect(admin.locator("#st-server-import")).to_be_enabled()
    check_page(admin, lang, phone, "import summary")
    summary.scroll_into_view_if_needed()
    shot(admin, f"admin-{size}-{lang}-import")
    # What went into bob's account is bob's: he sees the lorebook on his own page.
    bob = open_page(chromium, server, lang, viewport)
    log_in(bob, "bob", PASSWORDS["bob"])
    expect(bob.locator("#account")).to_be_visible()
    bob.goto(f"{server.url}/#/lorebooks")
    # The list's link to it (the World Info panel names every book too, folded).
    expect(bob.get_by_role("link", name="Brasswater")).to_be_visible()


@pytest.mark.parametrize(("lang", "viewport"), [("en", DESKTOP)], ids=["en-desktop"])
def test_a_person_changes_their_own_password(
    chromium: Any, server: TavernaServer, lang: str, viewport: dict[str, int]
) -> None:
    mine = open_page(chromium, server, lang, viewport)
    log_in(mine, "bob", PASSWORDS["bob"])
    elsewhere = open_page(chromium, server, lang, viewport)
    log_in(elsewhere, "bob", PASSWORDS["bob"])
    expect(elsewhere.locator("#account")).to_be_visible()
    mine.goto(f"{server.url}/#/account")
    form = mine.locator("#my-password-form")
    form.locator("#my-old-password").fill(PASSWORDS["bob"])
    form.locator("#my-new-password").fill("bob's newer secret")
    form.locator("#my-new-password-again").fill("bob's other secret")
    form.locator("button[type=submit]").click()
    expect(mine.locator("#my-password-error")).to_have_text("The two new passwords differ.")
    form.locator("#my-old-password").fill("not bob's password")
    form.locator("#my-new-password-again").fill("bob's newer secret")
    form.locator("button[type=submit]").click()
    expect(mine.locator("#my-password-error")).to_contain_text("current password is not right")
    form.locator("#my-old-password").fill(PASSWORDS["bob"])
    form.locator("button[type=submit]").click()
    expect(mine.locator(".toast", has_text="Password changed")).to_be_visible()
    shot(mine, "admin-desktop-en-own-password")
    # this browser stays logged in (its writes carry the new session's token); the other
    # one is logged out
    mine.goto(f"{server.url}/#/lorebooks")
    mine.once("dialog", lambda dialog: dialog.accept("Bob's tides"))
    mine.locator("main .page-head button").nth(1).click()
    expect(mine.locator(".toast.error")).to_have_count(0)
    expect(mine.locator("main h1")).not_to_have_text("Lorebooks")
    elsewhere.reload()
    expect(elsewhere.locator("#login-form")).to_be_visible()
    log_in(elsewhere, "bob", "bob's newer secret")
    expect(elsewhere.locator("#account")).to_be_visible()


@pytest.mark.parametrize(
    ("lang", "viewport"), [("en", DESKTOP), ("zh-CN", PHONE)], ids=["en-desktop", "zh-phone"]
)
def test_the_admin_lifts_a_client_addresss_lockout(
    chromium: Any, server: TavernaServer, lang: str, viewport: dict[str, int]
) -> None:
    phone = viewport["width"] < 700
    size = "phone" if phone else "desktop"
    admin = open_page(chromium, server, lang, viewport)
    errors: list[str] = []
    admin.on("pageerror", lambda e: errors.append(str(e)))
    log_in(admin, "alice", PASSWORDS["alice"])
    expect(admin.locator("#account")).to_be_visible()
    admin.goto(f"{server.url}/#/accounts")
    expect(admin.locator("#address-lockouts")).to_be_visible()
    # Someone on this machine guesses at 20 names: the address is locked out, so even
    # bob's right password is refused from it.
    for i in range(20):
        guess = {"name": f"guess-{i}", "password": "a guess that is wrong"}
        assert httpx.post(f"{server.url}/api/login", json=guess, timeout=30).status_code == 401
    bob = {"name": "bob", "password": PASSWORDS["bob"]}
    assert httpx.post(f"{server.url}/api/login", json=bob, timeout=30).status_code == 429
    admin.click("#accounts-refresh")
    entry = admin.locator("#address-lockouts li[data-address='127.0.0.1']")
    expect(entry).to_contain_text(WORDS[lang]["locked"])
    expect(entry).to_contain_text("20")
    check_page(admin, lang, phone, "address lockouts")
    entry.scroll_into_view_if_needed()
    shot(admin, f"admin-{size}-{lang}-address-locked")
    entry.locator(".unlock-address").click()
    expect(entry).to_have_count(0)
    expect(admin.locator(".toast", has_text="127.0.0.1")).to_be_visible()
    assert httpx.post(f"{server.url}/api/login", json=bob, timeout=30).status_code == 200
    assert errors == []
