"""A running `taverna serve` and pages in Chromium, as the browser tests set them up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.stubs.model_server import StubServer
from tests.stubs.taverna_server import TavernaServer

I18N = Path(__file__).resolve().parents[2] / "taverna" / "web" / "i18n"


def catalog(lang: str) -> dict[str, str]:
    """The page's words in `lang`, by key."""
    return dict(json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8")))


def say(words: dict[str, str], key: str, **params: object) -> str:
    """The words of `key` with their {placeholders} filled in."""
    text = words[key]
    for name, value in params.items():
        text = text.replace("{" + name + "}", str(value))
    return text


@contextmanager
def serving(folder: Path) -> Iterator[TavernaServer]:
    """`taverna serve` over the data folder `folder`, stopped when the block ends."""
    server = TavernaServer(folder).start()
    try:
        yield server
    finally:
        server.stop()


def connect_served(server: TavernaServer, stub: StubServer) -> None:
    """Add the stub's OpenAI API to a running server as its default connection "stub"."""
    server.api(
        "POST",
        "/connections",
        json={
            "name": "stub",
            "api": "openai",
            "url": stub.base_url("openai"),
            "model": "stub-model",
            "key": None,
            "default": True,
        },
    )


def new_page(chromium: Any, viewport: dict[str, int], lang: str) -> tuple[Any, Any, list[str]]:
    """A page in a new browser context of that size, in `lang`; and the page errors it sees."""
    context = chromium.new_context(viewport=viewport)
    context.add_init_script(f"localStorage.setItem('taverna.lang', '{lang}')")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return context, page, errors
