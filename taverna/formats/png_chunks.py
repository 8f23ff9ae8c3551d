"""The card chunks of a PNG file: `tEXt` chunks `chara` (V2) and `ccv3` (V3), and a
NovelAI lorebook's `naidata`.

The chunks are walked with framing and CRC checks; the picture itself is never decoded,
so a huge or malformed image costs nothing. A well-formed file is walked here; a file
this walk refuses is walked again with Pillow's PNG chunk reader, which says what is
wrong (so Pillow is loaded only for broken files, and for writing). Nothing here knows
the character model: formats/png_card.py reads and writes cards with it, and
`taverna inspect` reads a card's chunks without it.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import struct
import zlib
from typing import Any, NamedTuple

from taverna.errors import FormatError, raw_words
from taverna.formats import json_text
from taverna.formats.card_layout import relabel
from taverna.model.card_fields import SPEC_V3

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
"""The first eight bytes of every PNG file."""

MAX_CARD_CHUNK = 64 * 1024 * 1024
"""Largest card text chunk read (base64 of the JSON). Pillow's own bound for text chunks
is 1 MiB, too small for cards with large lorebooks, so the chunks are read here."""

CARD_KEYWORDS = ("chara", "ccv3")
LOREBOOK_KEYWORD = "naidata"


class Chunk(NamedTuple):
    """One PNG chunk: its type and where its data lies in the file."""

    type: bytes
    start: int  # offset of the length field
    end: int  # offset just past the CRC
    data_start: int
    data_end: int


def read_chunks(data: bytes, *, file: str | None = None) -> list[Chunk]:
    """Every chunk up to and including `IEND`, with CRCs checked."""
    if not data.startswith(PNG_SIGNATURE):
        raise FormatError(
            "not a PNG file (bad signature)", file=file, code="not_png_file_bad_signature"
        )
    chunks = plain_chunks(data)
    return chunks if chunks is not None else pillow_chunks(data, file=file)


_CHUNK_TYPE = re.compile(rb"\w{4}")  # what Pillow's reader takes as a chunk type
_HEADER = struct.Struct(">I4s")
_CRC = struct.Struct(">I")


def plain_chunks(data: bytes) -> list[Chunk] | None:
    """The chunks of a well-formed PNG file, as `pillow_chunks` finds them; None for any
    file that reader would refuse (or might: then it names the fault)."""
    chunks: list[Chunk] = []
    start = len(PNG_SIGNATURE)
    size = len(data)
    while start + 8 <= size:
        length, kind = _HEADER.unpack_from(data, start)
        data_start = start + 8
        data_end = data_start + length
        if not _CHUNK_TYPE.fullmatch(kind) or data_end + 4 > size:
            return None
        crc = zlib.crc32(data[data_start:data_end], zlib.crc32(kind))
        if crc != _CRC.unpack_from(data, data_end)[0]:
            return None
        chunks.append(Chunk(kind, start, data_end + 4, data_start, data_end))
        if kind == b"IEND":
            return chunks
        start = data_end + 4
    return None


def pillow_chunks(data: bytes, *, file: str | None = None) -> list[Chunk]:
    """Every chunk up to and including `IEND` by Pillow's chunk reader, whose errors name
    what is wrong with a broken file."""
    from PIL import PngImagePlugin

    if not data.startswith(PNG_SIGNATURE):
        raise FormatError(
            "not a PNG file (bad signature)", file=file, code="not_png_file_bad_signature"
        )
    stream = PngImagePlugin.ChunkStream(io.BytesIO(data))
    assert stream.fp is not None
    stream.fp.seek(len(PNG_SIGNATURE))
    chunks: list[Chunk] = []
    try:
        while True:
            start = stream.fp.tell()
            if start + 8 > len(data):
                raise FormatError(
                    "PNG is truncated (no IEND chunk)", file=file, code="png_is_truncated_no_iend"
                )
            cid, pos, length = stream.read()
            if length < 0 or pos + length + 4 > len(data):
                raise FormatError(
                    f"PNG is truncated inside chunk {cid.decode('latin-1')!r}",
                    file=file,
                    code="png_is_truncated_inside_chunk",
                    params={"decode": str(cid.decode("latin-1"))},
                )
            payload = stream.fp.read(length)
            stream.crc(cid, payload)
            chunks.append(Chunk(cid, start, pos + length + 4, pos, pos + length))
            if cid == b"IEND":
                return chunks
    except (SyntaxError, struct.error, ValueError, EOFError, OSError) as exc:
        raise FormatError(
            f"broken PNG file: {exc}", file=file, code="broken_png_file", params=raw_words(exc)
        ) from None


def _text_chunk(data: bytes, chunk: Chunk) -> tuple[str, bytes]:
    body = data[chunk.data_start : chunk.data_end]
    keyword, _, text = body.partition(b"\0")
    return keyword.decode("latin-1"), text


def card_chunks(data: bytes, *, file: str | None = None) -> dict[str, bytes]:
    """The first `chara` and first `ccv3` text payloads (keywords matched ignoring case)."""
    return _text_chunks(data, CARD_KEYWORDS, file=file)


def _text_chunks(data: bytes, keywords: tuple[str, ...], *, file: str | None) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for chunk in read_chunks(data, file=file):
        if chunk.type != b"tEXt":
            continue
        keyword, text = _text_chunk(data, chunk)
        key = keyword.lower()
        if key in keywords and key not in found:
            if len(text) > MAX_CARD_CHUNK:
                raise FormatError(
                    f"text chunk is {len(text):,} bytes, more than the {MAX_CARD_CHUNK:,} accepted",
                    file=file,
                    field=key,
                    code="text_chunk_is_bytes_more",
                    params={
                        "n": format(len(text), ","),
                        "max_card_chunk": format(MAX_CARD_CHUNK, ","),
                    },
                )
            found[key] = text
    return found


def lorebook_chunk(data: bytes, *, file: str | None = None) -> bytes | None:
    """The `naidata` payload of a PNG that holds a NovelAI lorebook and no card, if any.

    SillyTavern's world-info import reads a PNG's `naidata` chunk (base64 JSON) the way
    it reads a lorebook file.
    """
    if LOREBOOK_KEYWORD.encode("ascii") not in data:  # most PNGs: no chunk walk needed
        return None
    found = _text_chunks(data, (*CARD_KEYWORDS, LOREBOOK_KEYWORD), file=file)
    if any(keyword in found for keyword in CARD_KEYWORDS):
        return None
    return found.get(LOREBOOK_KEYWORD)


def decode_chunk(text: bytes, *, file: str | None = None, field: str) -> object:
    """A card (or `naidata`) chunk's payload: base64 of UTF-8 JSON."""
    try:
        # Node's decoder, which SillyTavern uses, skips characters outside the alphabet.
        raw = base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(
            f"invalid base64: {exc}",
            file=file,
            field=field,
            code="invalid_base64",
            params=raw_words(exc),
        ) from None
    return json_text.loads(raw, file=file, field=field)


def card_payload(data: bytes, *, file: str | None = None) -> tuple[Any, str]:
    """The parsed card of a PNG and the chunk it came from: `ccv3` if present, else
    `chara` (§4.2)."""
    chunks = card_chunks(data, file=file)
    if not chunks:
        raise FormatError(
            "PNG holds no character card (no `chara` or `ccv3` text chunk)",
            file=file,
            code="png_holds_no_character_card",
        )
    if "ccv3" in chunks:
        doc = decode_chunk(chunks["ccv3"], file=file, field="ccv3")
        if "chara" in chunks and isinstance(doc, dict) and _same_card(chunks, file):
            # §4.3: a writer puts the same card in both chunks, only relabelled in `ccv3`;
            # then `chara` is that same card with its original label, which we keep.
            return decode_chunk(chunks["chara"], file=file, field="chara"), "chara"
        return doc, "ccv3"
    return decode_chunk(chunks["chara"], file=file, field="chara"), "chara"


def _same_card(chunks: dict[str, bytes], file: str | None) -> bool:
    """Whether `chara` holds the card of `ccv3` under another label (checked cheaply first)."""
    chara, ccv3 = chunks["chara"], chunks["ccv3"]
    if abs(len(chara) - len(ccv3)) > 8:  # relabelling changes a few characters at most
        return False
    try:
        chara_text = base64.b64decode(chara)
        ccv3_text = base64.b64decode(ccv3)
    except (binascii.Error, ValueError):
        return False
    for old, new in ((b'"chara_card_v2"', b'"chara_card_v3"'), (b'"2.0"', b'"3.0"')):
        chara_text = chara_text.replace(old, new, 1)
    if chara_text == ccv3_text:
        return True
    try:
        other = decode_chunk(chara, file=file, field="chara")
        this = decode_chunk(ccv3, file=file, field="ccv3")
    except FormatError:
        return False
    return (
        isinstance(other, dict)
        and isinstance(this, dict)
        and relabel(other, SPEC_V3) == relabel(this, SPEC_V3)
    )


def strip_card(data: bytes, *, file: str | None = None) -> bytes:
    """The picture without its card chunks."""
    return rebuild(data, [], file=file)


def rebuild(data: bytes, extra: list[tuple[str, bytes]], *, file: str | None) -> bytes:
    """The picture without its card chunks, with `extra` text chunks before `IEND`."""
    out = io.BytesIO()
    out.write(PNG_SIGNATURE)
    for chunk in read_chunks(data, file=file):
        if chunk.type == b"tEXt" and _text_chunk(data, chunk)[0].lower() in CARD_KEYWORDS:
            continue
        if chunk.type == b"IEND" and extra:
            from PIL import PngImagePlugin

            for keyword, text in extra:
                PngImagePlugin.putchunk(out, b"tEXt", keyword.encode("latin-1"), b"\0", text)
        out.write(data[chunk.start : chunk.end])
    return out.getvalue()


# The bit depth and colour type pairs of a valid PNG header (all of them have a mode in
# Pillow's reader).
_PNG_MODES = frozenset(
    [(1, 0), (2, 0), (4, 0), (8, 0), (16, 0), (8, 2), (16, 2), (1, 3), (2, 3), (4, 3),
     (8, 3), (8, 4), (16, 4), (8, 6), (16, 6)]
)  # fmt: skip
# Chunks before the image data that Pillow's reader opens without fail, with the least
# length it needs of each; any other chunk there is left to Pillow.
_PLAIN_HEADERS = {
    b"tEXt": 0, b"PLTE": 0, b"pHYs": 9, b"gAMA": 4, b"cHRM": 32, b"sRGB": 1,
    b"bKGD": 0, b"tIME": 0, b"sBIT": 0,
}  # fmt: skip
_MOST_PIXELS = 1024 * 1024 * 1024 // 4 // 3  # Pillow's default warning bound for a picture
_MOST_TEXT = 1024 * 1024


def picture_size(image: bytes) -> tuple[int, int] | None:
    """Width and height of a plain PNG picture, read from its header as Pillow reads it;
    None where Pillow might say otherwise (or warn), for Pillow to open it."""
    if not image.startswith(PNG_SIGNATURE):
        return None
    chunks = plain_chunks(image)
    if not chunks or chunks[0].type != b"IHDR" or chunks[0].data_end - chunks[0].data_start != 13:
        return None
    header = image[chunks[0].data_start : chunks[0].data_end]
    width, height = struct.unpack_from(">II", header)
    if (header[8], header[9]) not in _PNG_MODES or header[11] != 0:
        return None
    if not (width >= 1 and height >= 1 and width * height <= _MOST_PIXELS):
        return None
    text = 0
    for chunk in chunks[1:]:
        if chunk.type in (b"IDAT", b"IEND"):
            return width, height
        length = chunk.data_end - chunk.data_start
        least = _PLAIN_HEADERS.get(chunk.type)
        if least is None or length < least:
            return None
        if chunk.type == b"tEXt":
            text += length
            if text > _MOST_TEXT:
                return None
    return None
