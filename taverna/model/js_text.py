"""Text the way JavaScript sees it: its white space and `trim`.

SillyTavern trims keys, tags and numbers given as text with `String.prototype.trim`, whose
white space is wider than ASCII's and differs from Python's `str.strip()` (which also
takes the separators U+001C to U+001F and U+0085, and leaves U+FEFF).
"""

from __future__ import annotations

# What JavaScript's `String.prototype.trim` (and `\s` in its regexes) takes as white space.
JS_WHITESPACE = "\t\n\v\f\r \xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)


def js_trim(text: str) -> str:
    """JavaScript's `text.trim()`: its white space taken off both ends."""
    return text.strip(JS_WHITESPACE)
