"""Every view of the page at desktop and phone sizes, in English and Chinese: it loads without
errors, every control has an accessible name, and a SillyTavern folder imports with a report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.browser

VIEWS = [
    "characters",
    "chats",
    "personas",
    "lorebooks",
    "presets",
    "templates",
    "connections",
    "import",
]

# Controls without a name, found in the page: each listed by tag and a bit of its markup.
UNNAMED = """() => {
  const named = (el) => {
    if ((el.getAttribute('aria-label') || '').trim()) return true;
    const by = el.getAttribute('aria-labelledby');
    if (by && document.getElementById(by)?.textContent.trim()) return true;
    if (el.labels && [...el.labels].some((l) => l.textContent.trim())) return true;
    if (['BUTTON', 'A'].includes(el.tagName) && el.textContent.trim()) return true;
    return false;
  };
  const controls = document.querySelectorAll('button, a[href], input:not([type=hidden]):not([hidden]), select, textarea, [role=button], [role=tab]');
  return [...controls].filter((el) => !el.closest('[hidden]') && !named(el)).map((el) => el.outerHTML.slice(0, 120));
}"""


def seed_chat(taverna: TavernaServer, stub: StubServer) -> str:
    """A chat with the sample character: a few turns, one in Chinese, one hidden, long enough to cut."""
    characters = taverna.api("GET", "/characters").json()
    ione = next(c for c in characters if c["name"] == "Ione Calder")
    chat = taverna.api("POST", "/chats", json={"character_id": ione["id"]}).json()
    import httpx

    for i, text in enumerate(
        ["Good evening. Is the ferry still running?", "我们去灯塔吧。", "Tell me about the canal."]
    ):
        stub.script(
            Reply(
                tokens=[f'*She nods.* "The ferry runs till midnight," she says. **Turn {i}.** ' * 3]
            )
        )
        revision = taverna.api("GET", f"/chats/{chat['id']}").json()["revision"]
        started = taverna.api(
            "POST",
            f"/chats/{chat['id']}/generate",
            json={"kind": "normal", "text": text, "revision": revision},
        ).json()
        with httpx.stream(
            "GET", f"{taverna.url}/api/tasks/{started['task']['id']}/events", timeout=30
        ) as response:
            for line in response.iter_lines():
                if line.startswith("event: done"):
                    break
    view = taverna.api("GET", f"/chats/{chat['id']}").json()
    taverna.api(
        "POST",
        f"/chats/{chat['id']}/messages/{view['messages'][3]['id']}/hidden",
        json={"hidden": True, "revision": view["revision"]},
    )
    return str(chat["id"])


def small_context(taverna: TavernaServer, st_fixtures: Path, tokens: int) -> None:
    """Use SillyTavern's default preset with a small context, so old messages are cut."""
    path = st_fixtures / "presets" / "openai" / "Default.json"
    files = {"file": (path.name, path.read_bytes(), "application/json")}
    preset = taverna.api("POST", "/presets/import?kind=chat", files=files).json()
    full = taverna.api("GET", f"/presets/{preset['id']}").json()
    sampling = {"openai_max_context": tokens, "openai_max_tokens": 300}
    taverna.api(
        "PUT",
        f"/presets/{preset['id']}",
        json={"name": "Small", "prompts": full["prompts"], "sampling": sampling},
    )
    taverna.api("POST", f"/presets/{preset['id']}/activate")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_every_view_loads_and_names_its_controls(
    chromium, taverna: TavernaServer, stub: StubServer, st_fixtures: Path, size: str
) -> None:  # type: ignore[no-untyped-def]
    viewport = (
        {"width": 1280, "height": 800} if size == "desktop" else {"width": 375, "height": 812}
    )
    page = chromium.new_page(viewport=viewport)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # The context is small before the replies are made: the line comes from the last
    # reply's prompt as it was sent.
    small_context(taverna, st_fixtures, 1000)
    chat_id = seed_chat(taverna, stub)
    assert taverna.api("GET", f"/chats/{chat_id}/prompt").json()["first_message_in_context"]
    assert taverna.api("GET", f"/chats/{chat_id}/context").json()["first_message_in_context"]
    for lang in ("en", "zh-CN"):
        page.goto(taverna.url + "/#/characters")
        page.locator("#lang-select").select_option(lang)
        for view in VIEWS:
            page.goto(f"{taverna.url}/#/{view}")
            page.locator("main .page-head h1").wait_for()
            assert page.evaluate(UNNAMED) == [], (lang, view)
            if view in ("characters", "lorebooks", "presets", "import"):
                shot(page, f"{size}-{lang}-{view}")
        page.goto(f"{taverna.url}/#/chat/{chat_id}")
        page.locator("ol.messages > li.message").first.wait_for()
        page.locator(".message.hidden-msg").wait_for()
        # The line where the model's context is cut off.
        page.locator(".context-line").wait_for()
        page.locator(".context-line").scroll_into_view_if_needed()
        assert page.evaluate(UNNAMED) == [], (lang, "chat")
        shot(page, f"{size}-{lang}-chat")
        # The inspector: the ledger shows what the small context cut, the trace the lorebook.
        page.locator("#open-inspector").click()
        page.locator("#inspector .pm").first.wait_for()
        page.locator("#inspector [role=tab]").nth(1).click()
        page.locator("#inspector table.ledger tr.cut").first.wait_for()
        page.locator("#inspector [role=tab]").nth(2).click()
        page.locator("#inspector table.trace tbody tr").first.wait_for()
        assert page.evaluate(UNNAMED) == [], (lang, "inspector")
        shot(page, f"{size}-{lang}-trace")
        page.locator("#close-inspector").click()
        characters = taverna.api("GET", "/characters").json()
        page.goto(f"{taverna.url}/#/characters/{characters[0]['id']}")
        page.locator("#character-form").wait_for()
        assert page.evaluate(UNNAMED) == [], (lang, "character")
        shot(page, f"{size}-{lang}-character")
        books = taverna.api("GET", "/lorebooks").json()
        page.goto(f"{taverna.url}/#/lorebooks/{books[0]['id']}")
        page.locator(".entries li button").first.click()
        page.locator(".entry-fields").wait_for()
        assert page.evaluate(UNNAMED) == [], (lang, "lorebook")
        shot(page, f"{size}-{lang}-lorebook")
    # The Chinese catalog is in use: the navigation reads in Chinese.
    expect(page.locator("#nav")).to_contain_text("角色")
    page.locator("#lang-select").select_option("en")
    assert errors == []
    page.close()


def test_import_a_sillytavern_folder_from_the_page(
    chromium, taverna: TavernaServer, st_fixtures: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "default-user"
    shutil.copytree(st_fixtures / "handmade" / "user-data", folder)
    (folder / "characters").mkdir()
    shutil.copy(
        st_fixtures / "content" / "default_Seraphina.png", folder / "characters" / "Seraphina.png"
    )
    (folder / "thumbnails").mkdir()
    (folder / "thumbnails" / "x.txt").write_text("not imported")
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(taverna.url + "/#/import")
    page.locator("#st-folder").set_input_files(str(folder))
    page.locator(".report h3").first.wait_for(timeout=30000)
    expect(page.locator(".report")).to_contain_text("Seraphina")
    expect(page.locator(".report")).to_contain_text("thumbnails")
    shot(page, "desktop-import-report")
    page.goto(taverna.url + "/#/chats")
    expect(page.locator(".chats-list")).to_contain_text("Seraphina")
    page.close()


def test_connections_page_adds_tests_and_picks_a_model(
    chromium, taverna: TavernaServer, stub: StubServer
) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(taverna.url + "/#/connections")
    page.locator("#c-name").fill("second stub")
    page.locator("#c-api").select_option("openai-compatible")
    page.locator("#c-url").fill(stub.base_url("openai"))
    page.locator("#c-model").fill("stub-model")
    page.locator("#c-key").fill("sk-never-shown-0000")
    page.locator("#connection-form").get_by_role("button", name="Save").click()
    item = page.locator(".connection", has_text="second stub")
    item.wait_for()
    assert "sk-never-shown" not in page.content()
    item.get_by_role("button", name="Test").click()
    expect(item.get_by_role("status")).to_contain_text("Works")
    item.get_by_role("button", name="Models").click()
    picker = item.get_by_label("Pick a model")
    expect(picker.locator("option", has_text="stub-model")).to_have_count(1)
    shot(page, "desktop-connections")
    page.close()


def test_drop_a_card_on_the_character_list(chromium, taverna: TavernaServer) -> None:  # type: ignore[no-untyped-def]
    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    page.goto(taverna.url + "/#/characters")
    page.locator(".dropzone").wait_for()
    card = '{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Dropped Dana", "first_mes": "Hi."}}'
    page.evaluate(
        """(text) => {
            const data = new DataTransfer();
            data.items.add(new File([text], 'dana.json', { type: 'application/json' }));
            document.querySelector('.dropzone').dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true }));
        }""",
        card,
    )
    page.locator(".card", has_text="Dropped Dana").wait_for()
    page.close()
