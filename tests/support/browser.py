"""Pages in Chromium and the page's words, as the browser tests set them up (the running
`taverna serve` they open is `tests.support.served`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

I18N = Path(__file__).resolve().parents[2] / "taverna" / "web" / "i18n"

# The two screens every page is tried on.
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 812}
SIZES = {"desktop": DESKTOP, "phone": PHONE}


def catalog(lang: str) -> dict[str, str]:
    """The page's words in `lang`, by key."""
    return dict(json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8")))


# A count's forms as the catalogue writes them: "{n, plural, one {# entry} other {# entries}}".
PLURAL = re.compile(r"\{(\w+), plural, ((?:[a-z]+ \{[^{}]*\}\s*)+)\}")


def say(words: dict[str, str], key: str, **params: object) -> str:
    """The words of `key` with their {placeholders} filled in (a count's form: "one" for 1,
    as both languages' plural rules say, else "other")."""

    def form(match: re.Match[str]) -> str:
        if match.group(1) not in params:
            return match.group(0)
        value = params[match.group(1)]
        forms = dict(re.findall(r"([a-z]+) \{([^{}]*)\}", match.group(2)))
        chosen = forms.get("one") if value == 1 and "one" in forms else forms.get("other", "")
        return str(chosen).replace("#", str(value))

    text = PLURAL.sub(form, words[key])
    for name, value in params.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def new_page(chromium: Any, viewport: dict[str, int], lang: str) -> tuple[Any, Any, list[str]]:
    """A page in a new browser context of that size, in `lang`; and the page errors it sees."""
    context = chromium.new_context(viewport=viewport)
    context.add_init_script(f"localStorage.setItem('taverna.lang', '{lang}')")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return context, page, errors
