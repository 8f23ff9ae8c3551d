"""Every page, view and dialog walked three ways: in Chinese with no English word left in what
a person reads (names and their own content aside); at a phone's 375 px with nothing wider
than the screen and nothing overflowing sideways inside it; and on a touch screen with every
control at least 44 px each way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import TavernaServer, shot
from tests.browser.test_pages import seed_chat
from tests.stubs.model_server import StubServer
from tests.support.browser import new_page

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 812}
DESKTOP = {"width": 1280, "height": 800}

# ASCII words a Chinese page may show: product and API names, key names, file formats and
# units. A person's own text and the names they gave are marked translate="no" in the page.
ALLOWED = [
    "SillyTavern",
    "taverna",
    "Python",
    "API",
    "URL",
    "HTTP",
    "ID",
    "JSON",
    "JSONL",
    "PNG",
    "CHARX",
    "zip",
    "UTF-8",
    "base64",
    "GGUF",
    "CPU",
    "CSS",
    "GPU",
    "settings.json",
    "gguf",
    "OpenAI",
    "JavaScript",
    "AI",
    "Anthropic",
    "Google",
    "Mistral",
    "KoboldCpp",
    "llama.cpp",
    "SmolLM2-135M",
    "Shift",
    "Enter",
    "Ctrl",
    "Top",
    "Min",
    "ms",
]

# Visible English words outside content marked translate="no": text, option labels, hints.
ENGLISH_WORDS = """(allowed) => {
  const ok = new Set(allowed);
  const found = [];
  const words = (text, where) => {
    for (const raw of text.match(/[A-Za-z0-9][\\w.+'’\\/:-]*/g) || []) {
      const word = raw.replace(/[.'’+:-]+$/, '');
      if ((word.match(/[A-Za-z]/g) || []).length < 2) continue;
      if (word.includes('/') || ok.has(word)) continue;
      found.push(`${word} (${where})`);
    }
  };
  const where = (el) => {
    const tag = el.tagName.toLowerCase();
    const id = el.id ? `#${el.id}` : '';
    const cls = typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\\s+/).join('.')}` : '';
    return tag + id + cls;
  };
  const excluded = (el) => !!el.closest('[translate="no"], script, style, noscript');
  const seen = (el) => el.checkVisibility({ visibilityProperty: true });
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || excluded(el) || el.tagName === 'OPTION' || !seen(el)) continue;
    words(node.textContent, where(el));
  }
  for (const select of document.querySelectorAll('select')) {
    if (excluded(select) || !seen(select)) continue;
    for (const option of select.options) {
      if (!option.closest('[translate="no"]')) words(option.textContent, `${where(select)} option`);
    }
  }
  for (const el of document.querySelectorAll('[placeholder]')) {
    if (!excluded(el) && seen(el)) words(el.getAttribute('placeholder'), `${where(el)} placeholder`);
  }
  return found;
}"""

# Anything wider than the screen, and any box whose content spills or scrolls sideways.
TOO_WIDE = """() => {
  const width = document.documentElement.clientWidth;
  const found = [];
  const where = (el) => {
    const tag = el.tagName.toLowerCase();
    const id = el.id ? `#${el.id}` : '';
    const cls = typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\\s+/).join('.')}` : '';
    return tag + id + cls;
  };
  if (document.documentElement.scrollWidth > width + 1) {
    found.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px`);
  }
  for (const el of document.body.querySelectorAll('*')) {
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    const box = el.getBoundingClientRect();
    if (box.width <= 1 || box.height <= 1) continue;
    // What shows of it: a box that clips its content (a line cut with an ellipsis, a
    // scrolling list) hides what lies past its edges.
    let left = box.left;
    let right = box.right;
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX === 'visible') continue;
      const edge = up.getBoundingClientRect();
      left = Math.max(left, edge.left);
      right = Math.min(right, edge.right);
    }
    if (right > left && (left < -1 || right > width + 1)) {
      found.push(`${where(el)} reaches ${Math.round(left)}..${Math.round(right)} px`);
      continue;
    }
    if (['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName)) continue;
    if (el.scrollWidth <= el.clientWidth + 1 || el.clientWidth === 0) continue;
    const style = getComputedStyle(el);
    // A line cut with an ellipsis says it goes on; a person's own code block scrolls.
    if (style.textOverflow === 'ellipsis' && ['hidden', 'clip'].includes(style.overflowX)) continue;
    if (el.closest('[translate="no"]') && el.closest('pre')) continue;
    found.push(`${where(el)} overflows sideways: ${el.scrollWidth} px in ${el.clientWidth} px (${style.overflowX})`);
  }
  return found;
}"""

# Controls smaller than 44 x 44 px (a checkbox counts with the label it sits in).
SMALL_TARGETS = """() => {
  const found = [];
  const controls = document.querySelectorAll('button, a[href], select, input:not([type=hidden]), textarea, summary, [role=button], [role=tab]');
  for (const el of controls) {
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    // A link inside a sentence is read as part of it, not tapped as a button.
    if (el.tagName === 'A' && el.closest('p')) continue;
    const target = el.closest('label') || el;
    const box = target.getBoundingClientRect();
    if (box.width < 43.5 || box.height < 43.5) {
      const name = (el.getAttribute('aria-label') || el.textContent || el.id || el.tagName).trim().slice(0, 40);
      found.push(`${el.tagName.toLowerCase()} "${name}" ${Math.round(box.width)}x${Math.round(box.height)}`);
    }
  }
  return found;
}"""


def seed(taverna: TavernaServer, stub: StubServer) -> dict[str, str]:
    """A chat with a second branch, and the ids of the things each page edits."""
    chat_id = seed_chat(taverna, stub)
    view = taverna.api("GET", f"/chats/{chat_id}").json()
    taverna.api(
        "POST",
        f"/chats/{chat_id}/branches",
        json={
            "name": "灯塔",
            "node_id": view["messages"][2]["id"],
            "revision": view["revision"],
        },
    )
    view = taverna.api("GET", f"/chats/{chat_id}").json()
    taverna.api(
        "POST",
        f"/chats/{chat_id}/checkpoints",
        json={"name": "渡口", "node_id": view["messages"][1]["id"], "revision": view["revision"]},
    )
    characters = taverna.api("GET", "/characters").json()
    others = [
        taverna.api("POST", "/characters", json={"name": name, "first_mes": f"{name}挥手。"}).json()
        for name in ("阿岚", "白露")
    ]
    group = taverna.api(
        "POST", "/groups", json={"name": "港口", "character_ids": [c["id"] for c in others]}
    ).json()
    group_chat = taverna.api("POST", f"/groups/{group['id']}/chats", json={}).json()
    books = taverna.api("GET", "/lorebooks").json()
    chat_preset = taverna.api("GET", "/presets?kind=chat").json()[0]
    templates = [
        found[0]
        for kind in ("instruct", "context", "sysprompt")
        if (found := taverna.api("GET", f"/presets?kind={kind}").json())
    ]
    return {
        "chat": chat_id,
        "group-chat": group_chat["id"],
        "character": characters[0]["id"],
        "lorebook": books[0]["id"],
        "preset": chat_preset["id"],
        **{f"template-{p['kind']}": p["id"] for p in templates},
    }


Step = tuple[str, str, Callable[[Page], None] | None]


def click(selector: str, then: str | None = None) -> Callable[[Page], None]:
    def act(page: Page) -> None:
        page.locator(selector).first.click()
        if then:
            page.locator(then).first.wait_for()

    return act


def search(page: Page) -> None:
    click("#open-search", "#chat-search")(page)
    page.locator("#chat-search-input").fill("ferry")
    page.locator("#chat-search-input").press("Enter")
    page.locator("#chat-search .search-hit").first.wait_for()


def search_all(page: Page) -> None:
    page.locator("#message-search").fill("ferry")
    page.locator("#message-search").press("Enter")
    page.locator(".message-search .search-hit").first.wait_for()


def new_reply_set(page: Page) -> None:
    """A new Quick Reply set (its name asked in a dialog) with one empty reply row."""
    page.once("dialog", lambda dialog: dialog.accept("晨间"))
    click("#qr-new", "#qr-add")(page)
    click("#qr-add", ".qr-rows > *")(page)


def fold_open(fold: str) -> Callable[[Page], None]:
    """Open the chat settings and unfold one of its sections."""

    def act(page: Page) -> None:
        click("#open-settings", "#chat-settings")(page)
        page.locator(f"{fold} > summary").first.click()
        page.locator(f"{fold}[open]").first.wait_for()

    return act


def steps(ids: dict[str, str]) -> list[Step]:
    """(name, address, what to do there): every view, and each dialog opened in place."""
    chat = f"#/chat/{ids['chat']}"
    walk: list[Step] = [
        ("characters", "#/characters", None),
        ("character", f"#/characters/{ids['character']}", None),
        ("character-new", "#/characters/new", None),
        ("chats", "#/chats", None),
        ("groups", "#/groups", None),
        ("personas", "#/personas", click("main .page-head button.primary", ".editor .fields")),
        ("lorebooks", "#/lorebooks", None),
        (
            "lorebook",
            f"#/lorebooks/{ids['lorebook']}",
            click(".entries li button", ".entry-fields"),
        ),
        ("presets", "#/presets", None),
        (
            "preset",
            f"#/presets/{ids['preset']}",
            click(".prompt-order button.link:enabled", ".slot-editor select"),
        ),
        ("templates", "#/templates", None),
        ("quick-replies", "#/quick-replies", None),
        ("quick-reply-set", "#/quick-replies", new_reply_set),
        ("regex", "#/regex", None),
        ("regex-script", "#/regex", click("#regex-new", "#regex-name")),
        ("group-new", "#/groups", click("#new-group", "#group-name")),
        ("group-chat", f"#/chat/{ids['group-chat']}", None),
        ("search-across", "#/chats", search_all),
        ("plugins", "#/plugins", None),
        ("connections", "#/connections", None),
        ("import", "#/import", None),
        ("chat", chat, None),
        ("inspector", chat, click("#open-inspector", "#inspector .pm")),
        (
            "ledger",
            chat,
            lambda p: (
                click("#open-inspector", "#inspector .pm")(p),
                click("#inspector [data-tab=ledger]", "table.ledger")(p),
            ),
        ),
        (
            "trace",
            chat,
            lambda p: (
                click("#open-inspector", "#inspector .pm")(p),
                click("#inspector [data-tab=trace]", "table.trace")(p),
            ),
        ),
        ("tree", chat, click("#open-tree", "#tree .checkpoint-row")),
        ("settings", chat, click("#open-settings", "#chat-settings")),
        ("summary-settings", chat, fold_open(".summary-settings")),
        ("recall-settings", chat, fold_open(".recall-settings")),
        ("search", chat, search),
    ]
    for key, value in ids.items():
        if key.startswith("template-"):
            walk.append((key, f"#/presets/{value}", None))
    return walk


def visit(page: Page, url: str, address: str, action: Callable[[Page], None] | None) -> None:
    # Each step from a fresh load: what one dialog left open never hides the next page.
    page.goto("about:blank")
    page.goto(f"{url}/{address}")
    page.locator("main h1").first.wait_for()
    if address.startswith("#/chat/"):
        page.locator("ol.messages > li.message").first.wait_for()
    page.wait_for_load_state("networkidle")
    if action:
        action(page)
    page.wait_for_timeout(150)


def walk(
    chromium: Any,
    taverna: TavernaServer,
    ids: dict[str, str],
    lang: str,
    check: str,
    args: Any = None,
    **context: Any,
) -> dict[str, list[str]]:
    browser = chromium.new_context(**context)
    page = browser.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{taverna.url}/#/characters")
    page.evaluate("(lang) => localStorage.setItem('taverna.lang', lang)", lang)
    failures: dict[str, list[str]] = {}
    size = "phone" if context["viewport"]["width"] < 700 else "desktop"
    for name, address, action in steps(ids):
        visit(page, taverna.url, address, action)
        found = page.evaluate(check, args) if args is not None else page.evaluate(check)
        if found:
            failures[name] = found
        shot(page, f"walk-{size}-{lang}-{name}")
    browser.close()
    assert errors == []
    return failures


def report(failures: dict[str, list[str]]) -> str:
    """What each step found, one step a line."""
    return "\n".join(f"{step}: {sorted(set(found))}" for step, found in failures.items())


@pytest.fixture(scope="module")
def ids(taverna: TavernaServer, stub: StubServer) -> dict[str, str]:
    return seed(taverna, stub)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_no_english_word_on_a_chinese_page(
    chromium, taverna: TavernaServer, ids, size: str
) -> None:  # type: ignore[no-untyped-def]
    viewport = DESKTOP if size == "desktop" else PHONE
    failures = walk(chromium, taverna, ids, "zh-CN", ENGLISH_WORDS, ALLOWED, viewport=viewport)
    assert not failures, report(failures)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_every_page_fits_a_phone(chromium, taverna: TavernaServer, ids, lang: str) -> None:  # type: ignore[no-untyped-def]
    failures = walk(
        chromium, taverna, ids, lang, TOO_WIDE, viewport=PHONE, has_touch=True, is_mobile=True
    )
    assert not failures, report(failures)


def test_touch_targets_are_44_px(chromium, taverna: TavernaServer, ids) -> None:  # type: ignore[no-untyped-def]
    failures = walk(
        chromium, taverna, ids, "en", SMALL_TARGETS, viewport=PHONE, has_touch=True, is_mobile=True
    )
    assert not failures, report(failures)


def test_the_input_hint_follows_the_device(chromium, taverna: TavernaServer, ids) -> None:  # type: ignore[no-untyped-def]
    chat = f"#/chat/{ids['chat']}"
    desk = chromium.new_context(viewport=DESKTOP)
    page = desk.new_page()
    visit(page, taverna.url, chat, None)
    field = page.locator("#chat-input")
    assert "Enter sends" in (field.get_attribute("placeholder") or "")
    desk.close()
    touch = chromium.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    page = touch.new_page()
    visit(page, taverna.url, chat, None)
    field = page.locator("#chat-input")
    hint = field.get_attribute("placeholder") or ""
    assert "Send button" in hint and "Enter adds a line" in hint
    before = len(taverna.api("GET", f"/chats/{ids['chat']}").json()["messages"])
    field.fill("first line")
    field.press("Enter")
    field.type("second line")
    assert page.locator("#chat-input").input_value() == "first line\nsecond line"
    assert len(taverna.api("GET", f"/chats/{ids['chat']}").json()["messages"]) == before
    shot(page, "phone-input-hint")
    touch.close()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_search_hit_names_the_default_persona_in_chinese(
    chromium, taverna: TavernaServer, ids, size: str
) -> None:  # type: ignore[no-untyped-def]
    """The default persona's messages read "用户" in the chat; a search hit on one says the
    same, never the stored "User"."""
    context = chromium.new_context(viewport=DESKTOP if size == "desktop" else PHONE)
    context.add_init_script("localStorage.setItem('taverna.lang', 'zh-CN')")
    page = context.new_page()
    visit(page, taverna.url, f"#/chat/{ids['chat']}", search)
    heads = page.locator("#chat-search .search-hit .search-head")
    said = " | ".join(heads.all_inner_texts())
    assert "#1 用户" in said and "User" not in said, said
    shot(page, f"search-hit-persona-{size}-zh")
    context.close()


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_sillytaverns_own_prompt_slots_read_in_the_page_language(
    chromium, taverna: TavernaServer, ids, size: str, lang: str
) -> None:  # type: ignore[no-untyped-def]
    """The prompt manager's built-in slots under SillyTavern's names read in Chinese on a
    Chinese page (as the inspector says them); English keeps SillyTavern's names."""
    context, page, _ = new_page(chromium, DESKTOP if size == "desktop" else PHONE, lang)
    visit(page, taverna.url, f"#/presets/{ids['preset']}", None)
    main = page.locator(".prompt-order .slot[data-identifier=main] button.link")
    history = page.locator(".prompt-order .slot[data-identifier=chatHistory] button.link")
    if lang == "en":
        assert (main.inner_text(), history.inner_text()) == ("Main Prompt", "Chat History")
    else:
        assert (main.inner_text(), history.inner_text()) == ("主提示词", "聊天记录")
        assert "Main Prompt" not in page.locator(".prompt-order").inner_text()
    shot(page, f"prompt-slots-{size}-{lang}")
    context.close()


def test_a_trace_reason_reads_as_one_sentence_on_a_phone(
    chromium, taverna: TavernaServer, ids
) -> None:  # type: ignore[no-untyped-def]
    """A phone lays a table cell's children side by side: a reason naming a key (主关键词
    “ferry”…) is one run of text, never the key in a column of its own."""
    context = chromium.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    context.add_init_script("localStorage.setItem('taverna.lang', 'zh-CN')")
    page = context.new_page()
    chat = f"#/chat/{ids['chat']}"
    visit(page, taverna.url, chat, None)
    click("#open-inspector", "#inspector .pm")(page)
    click("#inspector [data-tab=trace]", "table.trace")(page)
    cells = page.locator("table.trace td[data-label]", has=page.locator("[translate=no]"))
    assert cells.count() > 0
    runs = cells.evaluate_all(
        """(cells) => cells.map((td) => [...td.childNodes].filter(
             (n) => n.nodeType === 1 || n.textContent.trim()).length)"""
    )
    assert set(runs) == {1}, runs
    shot(page, "trace-reason-phone-zh")
    context.close()
