"""The plain PNG chunk walk and header read agree with Pillow's wherever they answer.

`plain_chunks` answers for a file only when Pillow's chunk reader finds the same chunks;
`picture_size` only when Pillow opens the picture with that size (and without a warning).
Checked on pictures of every PNG colour type, with extra chunks, and on damaged copies:
each byte of the header region flipped, the file cut short, chunk types and lengths
changed.
"""

from __future__ import annotations

import io
import struct
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, PngImagePlugin

from taverna.errors import FormatError
from taverna.formats.png_chunks import picture_size, pillow_chunks, plain_chunks
from tests.conftest import shared_dir

REPO = Path(__file__).resolve().parents[2]


def chunk(kind: bytes, body: bytes) -> bytes:
    return (
        struct.pack(">I", len(body))
        + kind
        + body
        + struct.pack(">I", zlib.crc32(body, zlib.crc32(kind)))
    )


def pictures() -> Iterator[bytes]:
    for mode in ("1", "L", "P", "RGB", "RGBA", "LA", "I;16"):
        out = io.BytesIO()
        info = PngImagePlugin.PngInfo()
        info.add_text("Comment", "made here")
        Image.new(mode, (5, 3)).save(out, format="PNG", pnginfo=info)
        yield out.getvalue()
    out = io.BytesIO()
    Image.new("P", (4, 4)).save(out, format="PNG", transparency=0)  # a tRNS chunk
    yield out.getvalue()
    out = io.BytesIO()
    Image.new("RGB", (4, 4)).save(out, format="PNG", dpi=(72, 72), icc_profile=b"\0" * 200)
    yield out.getvalue()
    base = next(iter(pictures_plain()))
    header, rest = base[:33], base[33:]
    for kind, body in [
        (b"gAMA", b"\0\0\xb1\x8f"), (b"gAMA", b"\0"), (b"sRGB", b""), (b"sRGB", b"\0"),
        (b"cHRM", b"\0" * 32), (b"cHRM", b"\0" * 8), (b"pHYs", b"\0" * 9), (b"pHYs", b"\0" * 3),
        (b"tIME", b"\0" * 7), (b"zTXt", b"k\0\0garbage"), (b"iTXt", b"k\0\0\0\0\0v"),
        (b"eXIf", b"II*\0"), (b"acTL", b"\0" * 8), (b"prVt", b"private"), (b"tEXt", b"a" * 2_000_000),
    ]:  # fmt: skip
        yield header + chunk(kind, body) + rest
    for width, height in [(0, 5), (5, 0), (100_000, 100_000), (9_000, 9_000), (2**31, 1)]:
        yield base[:16] + struct.pack(">II", width, height) + base[24:]
    yield base[:8] + chunk(b"IHDR", base[16:29] + b"\0") + base[33:]  # a longer header
    for depth, colour, filt in [(3, 2, 0), (8, 5, 0), (8, 2, 1)]:
        head = bytearray(base[16:29])
        head[8], head[9], head[11] = depth, colour, filt
        yield base[:8] + chunk(b"IHDR", bytes(head)) + base[33:]


def pictures_plain() -> Iterator[bytes]:
    out = io.BytesIO()
    Image.new("RGB", (7, 2)).save(out, format="PNG")
    yield out.getvalue()


def samples() -> list[bytes]:
    found = [(REPO / "taverna" / "data" / "Ione Calder.png").read_bytes()]
    for folder in (REPO / "tests" / "corpus", shared_dir() / "fixtures"):
        if folder.is_dir():
            found += [p.read_bytes() for p in sorted(folder.rglob("*.png"))]
    return found


def damaged(data: bytes) -> Iterator[bytes]:
    for at in range(8, min(len(data), 120)):
        yield data[:at] + bytes([data[at] ^ 0x41]) + data[at + 1 :]
    for cut in (9, 20, 33, len(data) // 2, len(data) - 1):
        yield data[:cut]
    yield data + b"trailing bytes"


def pillow_size(image: bytes) -> tuple[int, int] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning is an answer the plain read must not give
        try:
            with Image.open(io.BytesIO(image)) as picture:
                return (picture.size[0], picture.size[1]) if picture.format == "PNG" else None
        except Exception:  # any failure: the plain read must decline
            return None


def test_the_plain_walk_finds_what_pillow_finds_or_declines() -> None:
    answered = 0
    for image in [*samples(), *pictures()]:
        for data in [image, *damaged(image)]:
            plain = plain_chunks(data)
            if plain is None:
                continue
            answered += 1
            assert plain == pillow_chunks(data)
    assert answered > 40


def test_a_damaged_file_is_named_by_pillows_walk() -> None:
    data = next(iter(pictures_plain()))
    broken = data[:40] + b"\xff" + data[41:]
    assert plain_chunks(broken) is None
    with pytest.raises(FormatError, match="broken PNG"):
        pillow_chunks(broken)


def test_the_plain_size_is_pillows_or_declines() -> None:
    answered = declined = 0
    for image in [*samples(), *pictures()]:
        for data in [image, *damaged(image)]:
            size = picture_size(data)
            if size is None:
                declined += 1
                continue
            answered += 1
            assert size == pillow_size(data)
    assert answered > 20 and declined > 20
