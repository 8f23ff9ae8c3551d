"""A person's custom CSS (a theme's `custom_css`, or typed in the page), made safe to apply.

SillyTavern applies a theme's custom CSS to the whole page, and people expect the same here,
so the rules themselves are kept as written. What is taken out is every way a style sheet
can load something: `@import` rules, and `url(...)` / `image-set(...)` pointing anywhere
but a picture of the library (`/api/images/<sha256>.<ext>`) or a `data:image/` URL. The
page's Content-Security-Policy forbids loads from elsewhere anyway; this keeps a theme
from even asking, and keeps same-site requests (`url(/api/...)`) out too.

CSS escapes (`\\75 rl(`) are read before the check, so an escaped `url(` is seen as one;
comments are dropped, since they can hide neither a rule nor a load once removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The longest custom CSS kept (SillyTavern sets none; a theme's is a few KB).
MAX_CSS = 200_000

_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.S)
_HEX_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})[ \t\n\r\f]?")
_CHAR_ESCAPE = re.compile(r"\\([^0-9a-fA-F\n\r\f])")
# What an escape may stand for and be read as plain text: letters, digits and the marks
# that make a function or an at-rule. Anything else stays escaped, as written.
_PLAIN = re.compile(r"[A-Za-z0-9_\-(:@]")
_IMPORT = re.compile(r"@import\b[^;{}]*(?:;|(?=[{}])|\Z)", re.I)
_URL = re.compile(r"\burl\(\s*(?:\"([^\"]*)\"|'([^']*)'|([^)'\"]*?))\s*\)", re.I)
_IMAGE_SET = re.compile(r"(?:-webkit-)?image-set\([^()]*(?:\([^()]*\)[^()]*)*\)", re.I)
_LEGACY = re.compile(r"expression\s*\(|javascript:|-moz-binding|behavior\s*:", re.I)
_LIBRARY_PICTURE = re.compile(r"^/api/images/[0-9a-f]{64}\.(?:png|jpg|gif|webp)$")
_DATA_PICTURE = re.compile(r"^data:image/[a-z0-9.+-]+[;,]", re.I)


@dataclass(frozen=True, slots=True)
class CleanCss:
    """Custom CSS as it is applied, and what was taken out of it (each piece as written)."""

    css: str
    removed: tuple[str, ...] = ()


def allowed_picture(url: str) -> bool:
    """Whether a style sheet may show this picture: the library's own, or a `data:` one."""
    target = url.strip()
    return bool(_LIBRARY_PICTURE.match(target) or _DATA_PICTURE.match(target))


def _unescape(text: str) -> str:
    def hex_char(match: re.Match[str]) -> str:
        code = int(match.group(1), 16)
        char = chr(code) if 0 < code < 0x110000 else "\ufffd"
        return char if _PLAIN.fullmatch(char) else match.group(0)

    def plain_char(match: re.Match[str]) -> str:
        char = match.group(1)
        return char if _PLAIN.fullmatch(char) else match.group(0)

    return _CHAR_ESCAPE.sub(plain_char, _HEX_ESCAPE.sub(hex_char, text))


def clean_css(text: str) -> CleanCss:
    """`text` without imports, outside pictures and legacy script hooks (see the module)."""
    removed: list[str] = []
    css = _unescape(_COMMENT.sub(" ", text[:MAX_CSS]))

    def drop(match: re.Match[str]) -> str:
        removed.append(match.group(0).strip())
        return ""

    def url(match: re.Match[str]) -> str:
        target = next(g for g in match.groups() if g is not None)
        if allowed_picture(target):
            return f'url("{target.strip()}")'
        removed.append(match.group(0))
        return "none"

    def image_set(match: re.Match[str]) -> str:
        removed.append(match.group(0))
        return "none"

    css = _IMPORT.sub(drop, css)
    css = _URL.sub(url, css)
    css = _IMAGE_SET.sub(image_set, css)
    css = _LEGACY.sub(drop, css)
    # The page puts the text in a <style> element as text, never as markup; this keeps it
    # so if it is ever written into a page's source.
    css = css.replace("</", "<\\/")
    if len(text) > MAX_CSS:
        removed.append(f"(the text past {MAX_CSS} characters)")
    return CleanCss(css.strip(), tuple(removed))
