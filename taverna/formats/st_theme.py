"""SillyTavern's UI themes (`themes/<name>.json`): a name, colours, custom CSS and layout
switches. The file is kept whole; what taverna applies is its custom CSS and the colours
that have a place in this page (`THEME_COLOURS`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taverna.errors import FormatError
from taverna.formats import json_text

# A SillyTavern theme colour -> the page's CSS variable it sets.
THEME_COLOURS: Mapping[str, str] = {
    "main_text_color": "--text",
    "chat_tint_color": "--bg",
    "blur_tint_color": "--panel",
    "user_mes_blur_tint_color": "--user",
    "bot_mes_blur_tint_color": "--assistant",
    "quote_text_color": "--speech",
    "border_color": "--line",
}
# The colour values a theme may give: rgb()/rgba()/hsl()/hsla() of numbers, or #hex.
_COLOUR = re.compile(r"^(?:#[0-9a-fA-F]{3,8}|(?:rgb|rgba|hsl|hsla)\(\s*[0-9.%,\s/deg-]{1,80}\))$")


@dataclass(frozen=True, slots=True)
class Theme:
    """A SillyTavern theme: its name, its file's fields (all of them) and what is applied."""

    name: str
    fields: Mapping[str, Any]

    @property
    def custom_css(self) -> str:
        value = self.fields.get("custom_css")
        return value if isinstance(value, str) else ""

    @property
    def colours(self) -> dict[str, str]:
        """The page's CSS variables this theme sets (colours that are not plain colour
        values are passed over)."""
        out = {}
        for key, variable in THEME_COLOURS.items():
            value = self.fields.get(key)
            if isinstance(value, str) and _COLOUR.match(value.strip()):
                out[variable] = value.strip()
        return out


def read_theme(data: bytes | str, *, file: str, name: str = "") -> Theme:
    """A theme file; its `name` field names it, else `name` (the file's stem)."""
    doc = json_text.loads(data, file=file)
    if not isinstance(doc, dict):
        raise FormatError("a theme is a JSON object", file=file, code="theme_not_object")
    if not any(key in doc for key in ("custom_css", *THEME_COLOURS, "blur_strength")):
        raise FormatError(
            "not a SillyTavern theme (no colours and no custom CSS)",
            file=file,
            code="not_a_theme",
        )
    found = doc.get("name")
    title = found.strip() if isinstance(found, str) and found.strip() else name
    if not title:
        raise FormatError("the theme has no name", file=file, code="theme_without_name")
    return Theme(title, doc)
