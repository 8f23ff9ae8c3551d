"""The first open of the page moves little: its files come gzip-compressed, only the active
language's catalogue is read, and the next open asks with each file's ETag and gets "not
modified" answers without bodies. Counted as the bytes the browser took off the network."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page

pytestmark = pytest.mark.browser

# The most a first open may move, headers and bodies together.
FIRST_OPEN_LIMIT = 150_000


def counting(context: Any, page: Any) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
    """Bytes taken off the network by request id, and each response's url and headers."""
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    moved: dict[str, int] = {}
    answers: dict[str, dict[str, str]] = {}

    def finished(event: dict[str, Any]) -> None:
        moved[event["requestId"]] = int(event["encodedDataLength"])

    def answered(event: dict[str, Any]) -> None:
        response = event["response"]
        headers = {k.lower(): v for k, v in response["headers"].items()}
        answers[event["requestId"]] = {
            "url": response["url"],
            "status": str(response["status"]),
            **headers,
        }

    cdp.on("Network.loadingFinished", finished)
    cdp.on("Network.responseReceived", answered)
    return moved, answers


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_the_first_open_moves_at_most_150_kb(  # type: ignore[no-untyped-def]
    chromium, taverna: TavernaServer, size: str, lang: str
) -> None:
    context, page, errors = new_page(chromium, SIZES[size], lang)
    moved, answers = counting(context, page)
    page.goto(f"{taverna.url}/")
    expect(page.locator("#nav")).to_contain_text(catalog(lang)["nav.characters"])
    page.wait_for_load_state("networkidle")
    total = sum(moved.values())
    urls = [a["url"] for a in answers.values()]
    print(f"\n{size} {lang}: first open {total:,} bytes in {len(moved)} requests")
    assert total <= FIRST_OPEN_LIMIT, (total, sorted(urls))
    # Only the active language's catalogue.
    books = [u.rsplit("/", 1)[-1] for u in urls if "/i18n/" in u]
    assert books == [f"{lang}.json"]
    # The page's own text files come compressed, each with an ETag to ask with next time.
    page_files = [a for a in answers.values() if a["url"].endswith((".js", ".css", ".json"))]
    page_files = [a for a in page_files if "/api/" not in a["url"]]
    assert page_files
    for answer in page_files:
        assert answer.get("content-encoding") == "gzip", answer["url"]
        assert answer.get("etag"), answer["url"]
    shot(page, f"{size}-{lang}-first-open")

    # The next open: every page file is checked by its ETag and comes back "not modified",
    # headers without a body.
    moved.clear()
    answers.clear()
    page.reload()
    expect(page.locator("#nav")).to_contain_text(catalog(lang)["nav.characters"])
    page.wait_for_load_state("networkidle")
    again = {
        rid: a["url"]
        for rid, a in answers.items()
        if a["url"].endswith((".js", ".css", ".json")) and "/api/" not in a["url"]
    }
    assert again
    assert [(url, moved.get(rid)) for rid, url in again.items() if moved.get(rid, 0) > 1_000] == []
    print(f"{size} {lang}: next open {sum(moved.values()):,} bytes")
    assert sum(moved.values()) < total / 3
    assert errors == []
    context.close()
