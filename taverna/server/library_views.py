"""What the page's library views are made of (a character, a lorebook's entries) and
how files are named for download."""

from __future__ import annotations

import unicodedata
from urllib.parse import quote
from xml.sax.saxutils import escape

from fastapi import Response

from taverna.server.cards import CharacterOut, character_out
from taverna.server.schemas import LorebookOut
from taverna.services.library.service import LibraryKind, LibraryService


def character_view(lib: LibraryService, character_id: str) -> CharacterOut:
    doc = lib.get(LibraryKind.CHARACTER, character_id)
    card = lib.character(character_id)
    world = card.character.linked_world
    book = lib.find(LibraryKind.LOREBOOK, world) if world else None
    return character_out(
        doc.id, doc.revision, card.character, lorebook_id=book.id if book else None
    )


def placeholder_svg(name: str) -> bytes:
    """A round picture with the name's first letter, for a character without one."""
    letter = escape(name.strip()[:1].upper() or "?")
    hue = sum(ord(c) for c in name) % 360
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">'
        f'<rect width="100" height="100" fill="hsl({hue},45%,45%)"/>'
        '<text x="50" y="50" dy=".35em" text-anchor="middle" font-family="sans-serif" '
        f'font-size="52" fill="#fff">{letter}</text></svg>'
    ).encode()


def picture_response(picture: bytes | None, name: str) -> Response:
    """A stored picture as PNG, or the lettered placeholder for `name` when there is none."""
    if picture:
        return Response(picture, media_type="image/png", headers={"Cache-Control": "no-cache"})
    return Response(
        placeholder_svg(name),
        media_type="image/svg+xml",
        headers={"Cache-Control": "no-cache"},
    )


# Characters no file name should hold: path separators and what Windows refuses.
_RESERVED = frozenset('\\/:*?"<>|')
# Joiners kept: emoji sequences and some scripts need them.
_JOINERS = frozenset("\u200c\u200d")


def _safe_text(name: str) -> str:
    """`name` with separators, control, bidi and other format characters made `_`."""
    return "".join(
        "_"
        if c in _RESERVED or (unicodedata.category(c) in ("Cc", "Cf", "Cs") and c not in _JOINERS)
        else c
        for c in unicodedata.normalize("NFC", name)
    )


def download_name(name: str) -> str:
    """A file name stem safe on every system (non-ASCII letters kept)."""
    return _safe_text(name).strip(" .")[:120] or "character"


def attachment(file_name: str) -> dict[str, str]:
    """A Content-Disposition header for a download (RFC 6266): the name exactly as
    RFC 5987 `filename*`, and a plain ASCII `filename` for clients that lack it."""
    name = _safe_text(file_name).strip(" ") or "download"
    plain = "".join(
        c if " " <= c <= "~" and c not in '"\\%' else "_"
        for c in unicodedata.normalize("NFKD", name)
        if not unicodedata.combining(c)
    )
    exact = quote(name, safe="!#$&+-.^_`|~")
    return {"Content-Disposition": f"attachment; filename=\"{plain}\"; filename*=UTF-8''{exact}"}


def lorebook_view(lib: LibraryService, lorebook_id: str) -> LorebookOut:
    doc = lib.get(LibraryKind.LOREBOOK, lorebook_id)
    raw = doc.data.get("entries") or {}
    entries = [dict(value) for value in raw.values()] if isinstance(raw, dict) else []
    entries.sort(key=lambda e: (e.get("displayIndex") or 0, e.get("uid") or 0))
    return LorebookOut(id=doc.id, name=doc.name, revision=doc.revision, entries=entries)
