"""Favourites and tags of characters: imported from SillyTavern cards (`tags`, `fav` and
`data.extensions.fav`), filtered in the character list, a star that marks one, and the
marks in the card exported again. English on a desktop, Chinese on a phone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import SIZES, catalog, new_page, say

pytestmark = pytest.mark.browser


def _card(name: str, tags: list[str], *, fav: object = None, top_fav: object = None) -> dict:
    extensions: dict[str, object] = {}
    if fav is not None:
        extensions["fav"] = fav
    card: dict[str, object] = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {"name": name, "first_mes": "Hello.", "tags": tags, "extensions": extensions},
    }
    if top_fav is not None:
        card["fav"] = top_fav
    return card


@pytest.mark.parametrize(("size", "lang"), [("desktop", "en"), ("phone", "zh-CN")])
def test_favourites_and_tags_filter_the_list_and_go_back_out(  # type: ignore[no-untyped-def]
    chromium, fresh: TavernaServer, tmp_path: Path, size: str, lang: str
) -> None:
    knight, sailor, old = f"Knight {size}", f"Sailor {size}", f"Elder {size}"
    sea, knights = f"sea-{size}", f"knight-{size}"
    cards = [
        _card(knight, [knights, sea], fav=True),
        _card(sailor, [sea]),
        # an old card: its mark at the top level, as the string SillyTavern once wrote
        _card(old, [knights], top_fav="true"),
    ]
    paths = []
    for card in cards:
        path = tmp_path / f"{card['data']['name']}.json"  # type: ignore[index]
        path.write_text(json.dumps(card))
        paths.append(str(path))
    words = catalog(lang)
    context, page, errors = new_page(chromium, SIZES[size], lang)
    try:
        page.goto(f"{fresh.url}/#/characters")
        page.locator("#card-file").set_input_files(paths)
        grid = page.locator("ul.cards")
        for name in (knight, sailor, old):
            expect(grid.locator(".card", has_text=name)).to_be_visible()

        favorites = page.locator("#favorites-only")
        expect(favorites).to_have_attribute("aria-pressed", "false")
        favorites.click()
        expect(grid.locator(".card", has_text=knight)).to_be_visible()
        expect(grid.locator(".card", has_text=old)).to_be_visible()
        expect(grid.locator(".card", has_text=sailor)).to_have_count(0)
        favorites.click()

        by_sea = page.locator(f".tag-filter[data-tag={sea}]")
        by_sea.click()
        expect(by_sea).to_have_attribute("aria-pressed", "true")
        expect(grid.locator(".card", has_text=old)).to_have_count(0)
        expect(grid.locator(".card", has_text=sailor)).to_be_visible()
        page.locator(f".tag-filter[data-tag={knights}]").click()
        expect(grid.locator(".card")).to_have_count(1)
        expect(grid.locator(".card", has_text=knight)).to_be_visible()
        shot(page, f"{size}-{lang}-character-filters")
        # Filters stay as left, after a reload too.
        page.reload()
        expect(grid.locator(".card")).to_have_count(1)
        page.locator(f".tag-filter[data-tag={knights}]").click()
        page.locator(f".tag-filter[data-tag={sea}]").click()

        # The star marks the sailor as a favourite, stored in the card.
        star = grid.locator(".card", has_text=sailor).locator(".star")
        expect(star).to_have_attribute("aria-label", say(words, "characters.favorite", name=sailor))
        star.click()
        expect(star).to_have_attribute("aria-pressed", "true")
        favorites.click()
        expect(grid.locator(".card", has_text=sailor)).to_be_visible()
        shot(page, f"{size}-{lang}-character-favourites")
        favorites.click()
        assert errors == []
    finally:
        context.close()

    listed = {c["name"]: c for c in fresh.api("GET", "/characters").json()}
    assert listed[sailor]["favorite"] is True and listed[old]["favorite"] is True
    exported = fresh.api(
        "GET", f"/characters/{listed[sailor]['id']}/export", params={"format": "json"}
    ).json()
    assert exported["data"]["extensions"]["fav"] is True
    assert exported["data"]["tags"] == [sea]
    elder = fresh.api("GET", f"/characters/{listed[old]['id']}/export", params={"format": "json"})
    assert elder.json()["fav"] == "true"  # an old card's mark goes back as it came
