"""Character cards stored in PNG pictures: `tEXt` chunks `chara` (V2) and `ccv3` (V3).

The chunks are found by formats/png_chunks.py (Pillow's chunk reader, framing and CRC
checks); the picture itself is never decoded, so a huge or malformed image costs nothing.
Writing keeps every chunk of the picture and puts both card chunks right before `IEND`,
as SillyTavern does (formats-character-card.md §4).
"""

from __future__ import annotations

import base64
import io
import zlib

from PIL import Image

from taverna.errors import FormatError, FormatWarning, raw_words
from taverna.formats import json_text
from taverna.formats.card_json import card_from_json, card_to_json, relabel
from taverna.formats.png_chunks import CARD_KEYWORDS as CARD_KEYWORDS
from taverna.formats.png_chunks import LOREBOOK_KEYWORD as LOREBOOK_KEYWORD
from taverna.formats.png_chunks import MAX_CARD_CHUNK as MAX_CARD_CHUNK
from taverna.formats.png_chunks import PNG_SIGNATURE as PNG_SIGNATURE
from taverna.formats.png_chunks import Chunk as Chunk
from taverna.formats.png_chunks import card_chunks as card_chunks
from taverna.formats.png_chunks import card_payload, rebuild
from taverna.formats.png_chunks import decode_chunk as decode_chunk
from taverna.formats.png_chunks import lorebook_chunk as lorebook_chunk
from taverna.formats.png_chunks import read_chunks as read_chunks
from taverna.formats.png_chunks import strip_card as strip_card
from taverna.model.character import SPEC_V3, CardFile, Character

MAX_IMAGE_PIXELS = 40_000_000
"""Largest picture (width times height) a card or a persona may carry, as for a chat's
pictures: a larger one is refused, on upload and on import, and never decoded."""


def _too_large(width: int, height: int, file: str | None) -> FormatError:
    return FormatError(
        f"picture is too large ({width}x{height})",
        file=file,
        code="picture_is_too_large_x",
        params={"width": str(width), "height": str(height)},
    )


def check_picture_size(image: bytes, *, file: str | None = None) -> None:
    """FormatError if a picture is larger than MAX_IMAGE_PIXELS: a PNG's size is read from
    its header, another kind's by Pillow (which reads no more than its header either).
    A picture that cannot be read is left to whoever reads it."""
    if image.startswith(PNG_SIGNATURE):
        if len(image) >= 24 and image[12:16] == b"IHDR":
            width, height = int.from_bytes(image[16:20]), int.from_bytes(image[20:24])
            if width * height > MAX_IMAGE_PIXELS:
                raise _too_large(width, height, file)
        return
    try:
        with Image.open(io.BytesIO(image)) as picture:
            width, height = picture.size
    except Image.DecompressionBombError as exc:
        raise FormatError(
            f"not a picture that can hold a card: {exc}",
            file=file,
            code="card_picture_unreadable",
            params=raw_words(exc),
        ) from None
    except (OSError, ValueError, SyntaxError, zlib.error):
        return
    if width * height > MAX_IMAGE_PIXELS:
        raise _too_large(width, height, file)


def read_png_card(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> CardFile:
    """A PNG card: the character from `ccv3` if present, else `chara` (§4.2); a picture
    over MAX_IMAGE_PIXELS is refused."""
    check_picture_size(data, file=file)
    doc, keyword = card_payload(data, file=file)
    character = card_from_json(doc, file=file, field=keyword, warnings=warnings)
    return CardFile(character=character, avatar=strip_card(data, file=file))


def as_png(image: bytes, *, file: str | None = None) -> bytes:
    """A picture as PNG bytes: PNG unchanged, anything Pillow can read converted; one
    over MAX_IMAGE_PIXELS is refused either way."""
    if image.startswith(PNG_SIGNATURE):
        check_picture_size(image, file=file)
        return image
    try:
        with Image.open(io.BytesIO(image)) as picture:
            width, height = picture.size
            if width * height > MAX_IMAGE_PIXELS:
                raise _too_large(width, height, file)
            out = io.BytesIO()
            picture.save(out, format="PNG")
            return out.getvalue()
    except FormatError:
        raise
    except (OSError, ValueError, SyntaxError, zlib.error, Image.DecompressionBombError) as exc:
        raise FormatError(
            f"not a picture that can hold a card: {exc}",
            file=file,
            code="card_picture_unreadable",
            params=raw_words(exc),
        ) from None


def default_avatar() -> bytes:
    """A plain 400x600 picture for a card that comes without one."""
    out = io.BytesIO()
    Image.new("RGB", (400, 600), (74, 85, 104)).save(out, format="PNG")
    return out.getvalue()


def encode_chunk(doc: object) -> bytes:
    """Base64 of the compact UTF-8 JSON, as SillyTavern writes card chunks (§4.1)."""
    return base64.b64encode(json_text.dumps(doc).encode("utf-8"))


def write_png_card(
    character: Character, image: bytes | None = None, *, file: str | None = None
) -> bytes:
    """The card written into `image` (or a plain default picture) as SillyTavern does.

    Both chunks carry the same card: `chara` as stored, `ccv3` relabelled as V3 (§4.3).
    A V1 card stays V1, in `chara` alone: the V3 label needs the `data` layout, and
    SillyTavern reads a V1 `chara` chunk as it reads a V1 JSON card (§5).
    """
    doc = card_to_json(character)
    picture = as_png(image, file=file) if image is not None else default_avatar()
    chunks = [("chara", encode_chunk(doc))]
    if "spec" in doc:
        chunks.append(("ccv3", encode_chunk(relabel(doc, SPEC_V3))))
    return rebuild(picture, chunks, file=file)
