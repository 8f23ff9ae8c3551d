"""Bad input of every kind ends in one FormatError naming the file and field, quickly."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import struct
import zipfile
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, PngImagePlugin

from taverna.errors import FormatError
from taverna.formats import json_text
from taverna.formats.card_json import read_card_json
from taverna.formats.charx import MAX_TOTAL_BYTES, read_charx
from taverna.formats.detect import read_any
from taverna.formats.png_card import PNG_SIGNATURE, read_png_card


def png(text: dict[str, str] | None = None) -> bytes:
    info = PngImagePlugin.PngInfo()
    for key, value in (text or {}).items():
        info.add_text(key, value)
    out = io.BytesIO()
    Image.new("RGB", (4, 4)).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def text_chunk(keyword: bytes, payload: bytes) -> bytes:
    body = keyword + b"\0" + payload
    return (
        struct.pack(">I", len(body))
        + b"tEXt"
        + body
        + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    )


def with_chunk(picture: bytes, chunk: bytes) -> bytes:
    end = picture.rindex(b"IEND") - 4
    return picture[:end] + chunk + picture[end:]


CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "A", "description": "d"}}
GOOD = png({"chara": base64.b64encode(json.dumps(CARD).encode()).decode()})


def test_truncated_png() -> None:
    for cut in (10, 40, len(GOOD) // 2, len(GOOD) - 5):
        with pytest.raises(FormatError, match=r"truncated|broken") as info:
            read_png_card(GOOD[:cut], file="cut.png")
        assert info.value.file == "cut.png"


def test_png_without_a_card() -> None:
    with pytest.raises(FormatError, match="no character card") as info:
        read_png_card(png({"Comment": "hello"}), file="plain.png")
    assert info.value.file == "plain.png"


def test_not_a_png() -> None:
    with pytest.raises(FormatError, match="not a PNG"):
        read_png_card(b"GIF89a....", file="x.png")


def test_bad_crc() -> None:
    broken = bytearray(GOOD)
    broken[len(PNG_SIGNATURE) + 8 + 2] ^= 0xFF  # inside IHDR data
    with pytest.raises(FormatError, match="broken PNG"):
        read_png_card(bytes(broken), file="crc.png")


def test_invalid_base64() -> None:
    with pytest.raises(FormatError) as info:
        read_png_card(with_chunk(png(), text_chunk(b"chara", b"abc")), file="b64.png")
    assert info.value.field == "chara"


def test_invalid_json_in_chunk() -> None:
    payload = base64.b64encode(b"{not json")
    with pytest.raises(FormatError, match="invalid JSON") as info:
        read_png_card(with_chunk(png(), text_chunk(b"ccv3", payload)), file="j.png")
    assert (info.value.file, info.value.field) == ("j.png", "ccv3")


def test_invalid_utf8_in_chunk() -> None:
    payload = base64.b64encode(b'{"name": "\xff\xfe"}')
    with pytest.raises(FormatError, match="UTF-8") as info:
        read_png_card(with_chunk(png(), text_chunk(b"chara", payload)), file="u.png")
    assert info.value.field == "chara"


def test_invalid_json_file() -> None:
    with pytest.raises(FormatError, match="line 1 column 2") as info:
        read_card_json(b"{oops", file="card.json")
    assert info.value.file == "card.json"


def test_invalid_utf8_json_file() -> None:
    with pytest.raises(FormatError, match="UTF-8"):
        read_card_json(b'{"name": "\xc3"}', file="card.json")


def test_nan_is_not_json() -> None:
    with pytest.raises(FormatError):
        json_text.loads(b'{"a": NaN}', file="n.json")


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({**CARD, "data": {"name": {"first": "A"}}}, "data.name"),
        ({**CARD, "data": {"name": "A", "tags": ["a", {"b": 1}]}}, "data.tags[1]"),
        ({**CARD, "data": {"name": "A", "extensions": [1]}}, "data.extensions"),
        ({**CARD, "data": {"name": "A", "extensions": {"depth_prompt": {"depth": [4]}}}},
         "data.extensions.depth_prompt.depth"),
        ({**CARD, "data": {"name": "A", "character_book": {"entries": [{"keys": {"x": 1}}]}}},
         "data.character_book.entries[0].keys"),
        ({**CARD, "data": "nope"}, "data"),
        ({"name": ["x"]}, "name"),
    ],
)  # fmt: skip
def test_wrong_types_name_the_field(doc: object, field: str) -> None:
    with pytest.raises(FormatError) as info:
        read_card_json(json.dumps(doc).encode(), file="w.json")
    assert info.value.field == field
    assert info.value.file == "w.json"


def test_not_a_card() -> None:
    with pytest.raises(FormatError, match="not a character card"):
        read_card_json(b'{"foo": 1}', file="x.json")
    with pytest.raises(FormatError, match="object"):
        read_card_json(b"[1, 2]", file="x.json")


def test_100_mb_text_field_in_json() -> None:
    doc = {"spec": "chara_card_v2", "data": {"name": "A", "description": "x" * (100 * 2**20)}}
    with pytest.raises(FormatError) as info:
        read_card_json(json.dumps(doc).encode(), file="big.json")
    assert info.value.field == "description"


def test_long_text_field_names_its_path() -> None:
    doc = {"spec": "chara_card_v2", "data": {"name": "A", "description": "x" * (17 * 2**20)}}
    with pytest.raises(FormatError) as info:
        read_card_json(json.dumps(doc).encode(), file="big.json")
    assert info.value.field == "data.description"


def test_100_mb_card_chunk_in_png() -> None:
    payload = b"A" * (100 * 2**20)
    with pytest.raises(FormatError, match="more than") as info:
        read_png_card(with_chunk(png(), text_chunk(b"chara", payload)), file="big.png")
    assert info.value.field == "chara"


def test_deep_nesting() -> None:
    deep = b'{"name": "A", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(FormatError, match="nested"):
        read_card_json(deep, file="deep.json")


def test_nesting_within_the_parser_but_beyond_the_limit() -> None:
    deep = (
        b'{"spec": "chara_card_v2", "data": {"name": "A", "x": ' + b"[" * 300 + b"]" * 300 + b"}}"
    )
    with pytest.raises(FormatError, match="nested") as info:
        read_card_json(deep, file="deep.json")
    assert info.value.field is not None and info.value.field.startswith("data.x[0]")


def test_zip_bomb() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("card.json", json.dumps(CARD))
        # highly compressible: ~70 MiB unpacked from well under 1 MiB
        archive.writestr("assets/bomb.bin", b"\0" * (70 * 2**20))
    data = out.getvalue()
    assert len(data) < 2**20
    with pytest.raises(FormatError, match="more than") as info:
        read_charx(data, file="bomb.charx")
    assert info.value.field == "assets/bomb.bin"


def test_zip_bomb_with_lying_sizes() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("card.json", json.dumps(CARD))
        archive.writestr("big.bin", b"\0" * (65 * 2**20))
    data = bytearray(out.getvalue())
    # rewrite the declared sizes of big.bin in the central directory to 1 byte
    index = data.index(b"PK\x01\x02", data.index(b"big.bin") - 100)
    while True:
        name_len = struct.unpack_from("<H", data, index + 28)[0]
        if data[index + 46 : index + 46 + name_len] == b"big.bin":
            struct.pack_into("<I", data, index + 24, 1)
            break
        index = data.index(b"PK\x01\x02", index + 4)
    with pytest.raises(FormatError):
        read_charx(bytes(data), file="liar.charx")
    assert MAX_TOTAL_BYTES < 2**30


def test_not_a_zip() -> None:
    with pytest.raises(FormatError, match="zip"):
        read_charx(b"PK\x03\x04garbage", file="x.charx")


def test_unknown_json_kind() -> None:
    with pytest.raises(FormatError, match="knows") as info:
        read_any(b'{"hello": 1}', "hello.json")
    assert info.value.file == "hello.json"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_only_raise_format_error(data: bytes) -> None:
    for reader in (read_png_card, read_charx, read_card_json):
        with contextlib.suppress(FormatError):
            reader(data, file="fuzz")
    with contextlib.suppress(FormatError):
        read_any(data, "fuzz.bin")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_png_cards_only_raise_format_error(data: st.DataObject) -> None:
    position = data.draw(st.integers(0, len(GOOD) - 1))
    value = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(position + 1, len(GOOD)))
    mutated = GOOD[:position] + bytes([value]) + GOOD[position + 1 : cut]
    with contextlib.suppress(FormatError):
        read_png_card(mutated, file="m.png")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["spec", "name", "data", "char_name", "entries", "prompts",
                                        "scriptName", "findRegex", "qrList", "story_string",
                                        "input_sequence", "power_user", "first_mes", "x"]),
                       json_values, max_size=6))  # fmt: skip
def test_arbitrary_json_objects_only_raise_format_error(doc: dict[str, object]) -> None:
    with contextlib.suppress(FormatError):
        read_any(json.dumps(doc).encode(), "fuzz.json")
