"""Character cards: PNG chunks, JSON V1/V2/V3 and CHARX read and write losslessly."""

from __future__ import annotations

import base64
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from PIL import Image

from taverna.errors import FormatError
from taverna.formats import json_text
from taverna.formats.card_json import (
    card_from_json,
    card_to_json,
    read_card_json,
    with_spec,
    write_card_json,
)
from taverna.formats.charx import read_charx, write_charx
from taverna.formats.png_card import (
    PNG_SIGNATURE,
    card_chunks,
    read_chunks,
    read_png_card,
    write_png_card,
)
from taverna.model.character import SPEC_V2, SPEC_V3, CardFile, Character


def png(size: tuple[int, int] = (4, 4), text: dict[str, str] | None = None) -> bytes:
    """A small picture, optionally with tEXt chunks."""
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    for key, value in (text or {}).items():
        info.add_text(key, value)
    out = io.BytesIO()
    Image.new("RGB", size, (10, 20, 30)).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def b64(doc: object) -> str:
    return base64.b64encode(json.dumps(doc).encode()).decode()


V2_CARD = {
    "name": "Mira",
    "description": "{{char}} keeps a lighthouse.",
    "personality": "",
    "scenario": "",
    "first_mes": "Storm's coming.",
    "mes_example": "",
    "creatorcomment": "",
    "avatar": "none",
    "chat": "Mira - 2024-10-02@19h11m05s",
    "talkativeness": "0.5",
    "fav": False,
    "tags": ["coast"],
    "create_date": "2024-10-2 @19h 10m 58s 311ms",
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} keeps a lighthouse.",
        "personality": "",
        "scenario": "",
        "first_mes": "Storm's coming.",
        "mes_example": "",
        "creator_notes": "",
        "system_prompt": "",
        "post_history_instructions": "",
        "tags": ["coast"],
        "creator": "",
        "character_version": "",
        "alternate_greetings": ["The lamp is lit."],
        "extensions": {
            "talkativeness": "0.5",
            "fav": False,
            "world": "",
            "depth_prompt": {"prompt": "", "depth": 4, "role": "system"},
            "x_other_tool": {"kept": [1, 2.5, None]},
        },
        "group_only_greetings": [],
        "x_unknown": True,
    },
}


# --- fixtures from SillyTavern -------------------------------------------------------


def test_seraphina_png_reads_as_stored(st_fixtures: Path) -> None:
    data = (st_fixtures / "content" / "default_Seraphina.png").read_bytes()
    card = read_png_card(data, file="default_Seraphina.png")
    character = card.character
    assert character.name == "Seraphina"
    assert character.spec == SPEC_V2
    assert character.linked_world == "Eldoria"
    assert character.talkativeness == 0.5
    assert character.extensions.talkativeness == "0.5"  # the stored string survives
    assert character.character_book is not None
    assert len(character.character_book.entries) == 4
    assert character.envelope["creatorcomment"] == character.creator_notes
    # the card itself, decoded independently, equals what we write back
    stored = json.loads(base64.b64decode(card_chunks(data)["chara"]))
    assert card_to_json(character) == stored


def test_png_round_trip_keeps_picture_and_card(st_fixtures: Path) -> None:
    data = (st_fixtures / "content" / "default_Seraphina.png").read_bytes()
    card = read_png_card(data)
    written = write_png_card(card.character, card.avatar)
    again = read_png_card(written)
    assert card_to_json(again.character) == card_to_json(card.character)
    assert again.avatar == card.avatar
    # the picture's chunks are kept byte for byte, card chunks last before IEND
    kinds = [c.type for c in read_chunks(written)]
    assert kinds[-3:] == [b"tEXt", b"tEXt", b"IEND"]
    before = [written[c.start : c.end] for c in read_chunks(written) if c.type != b"tEXt"]
    source = [data[c.start : c.end] for c in read_chunks(data) if c.type != b"tEXt"]
    assert before == source
    with Image.open(io.BytesIO(written)) as picture:
        assert picture.size == (400, 600)


def test_both_chunks_written_as_sillytavern_does(st_fixtures: Path) -> None:
    card = read_png_card((st_fixtures / "content" / "default_Seraphina.png").read_bytes())
    chunks = card_chunks(write_png_card(card.character, card.avatar))
    chara = json.loads(base64.b64decode(chunks["chara"]))
    ccv3 = json.loads(base64.b64decode(chunks["ccv3"]))
    assert chara["spec"] == SPEC_V2 and chara["spec_version"] == "2.0"
    assert ccv3["spec"] == SPEC_V3 and ccv3["spec_version"] == "3.0"
    assert {**ccv3, "spec": SPEC_V2, "spec_version": "2.0"} == chara


def test_ccv3_wins_over_chara(st_fixtures: Path) -> None:
    data = (st_fixtures / "handmade" / "cards" / "precedence-chara-vs-ccv3.png").read_bytes()
    assert read_png_card(data).character.name == "CCv3 Chunk"


@pytest.mark.parametrize("ccv3_first", [True, False])
def test_ccv3_wins_whatever_the_chunk_order(ccv3_first: bool) -> None:
    other = {**V2_CARD, "data": {**V2_CARD["data"], "name": "Other"}}  # type: ignore[dict-item]
    chunks = [("ccv3", b64({**V2_CARD, "spec": SPEC_V3})), ("chara", b64(other))]
    data = png(text=dict(chunks if ccv3_first else chunks[::-1]))
    character = read_png_card(data).character
    assert character.name == "Mira"
    assert character.spec == SPEC_V3


def test_relabelled_pair_keeps_the_original_label() -> None:
    data = png(
        text={
            "chara": b64(V2_CARD),
            "ccv3": b64({**V2_CARD, "spec": SPEC_V3, "spec_version": "3.0"}),
        }
    )
    assert card_to_json(read_png_card(data).character) == V2_CARD


def test_keyword_case_is_ignored() -> None:
    data = png(text={"Chara": b64(V2_CARD)})
    assert read_png_card(data).character.name == "Mira"


def test_kael_v3_json_round_trips_byte_for_byte(st_fixtures: Path) -> None:
    data = (st_fixtures / "handmade" / "cards" / "Kael.v3.json").read_bytes()
    character = read_card_json(data, file="Kael.v3.json")
    assert character.spec == SPEC_V3
    assert character.nickname == "The Ranger"
    assert character.group_only_greetings == ["*Kael nods to the others in the glade.*"]
    assert character.creation_date == 1727481600
    assert character.extensions.extras == {"x_fixture_tool": {"kept": True}}
    assert character.regex_scripts[0].script_name == "Strip OOC notes"
    assert character.depth_prompt.prompt == "[{{char}} distrusts strangers.]"
    assert write_card_json(character) == data


# --- layouts ----------------------------------------------------------------------------


def test_merged_v2_object_round_trips() -> None:
    character = card_from_json(V2_CARD)
    assert character.extras == {"x_unknown": True}
    assert card_to_json(character) == V2_CARD
    assert character.greetings == ["Storm's coming.", "The lamp is lit."]


def test_v1_card_round_trips_and_keeps_unknown_keys() -> None:
    v1 = {"name": "Old", "description": "d", "first_mes": "hi", "x_old_tool": 3}
    character = card_from_json(v1)
    assert character.spec is None
    assert card_to_json(character) == v1


def test_v1_card_with_new_fields_becomes_v2() -> None:
    character = card_from_json({"name": "Old", "description": "d"})
    edited = Character.model_validate({**character.model_dump(), "tags": ["x"]})
    doc = card_to_json(edited)
    assert doc["spec"] == SPEC_V2
    assert doc["data"]["tags"] == ["x"]
    assert doc["name"] == "Old"


def test_mirror_follows_edits_of_data() -> None:
    character = card_from_json(V2_CARD)
    renamed = Character.model_validate({**character.model_dump(), "name": "Mara"})
    doc = card_to_json(renamed)
    assert doc["name"] == "Mara" and doc["data"]["name"] == "Mara"


def test_pygmalion_json_is_read() -> None:
    character = card_from_json({"char_name": "Py", "char_persona": "p", "char_greeting": "g"})
    assert (character.name, character.description, character.first_mes) == ("Py", "p", "g")


def test_single_string_greeting_is_wrapped() -> None:
    character = card_from_json({"spec": SPEC_V2, "data": {"name": "A", "alternate_greetings": "x"}})
    assert character.alternate_greetings == ["x"]


def test_v2_to_v3_and_back() -> None:
    v3 = with_spec(card_from_json(V2_CARD), SPEC_V3)
    assert v3.spec == SPEC_V3 and card_to_json(v3)["spec_version"] == "3.0"
    v2 = with_spec(v3, SPEC_V2)
    assert card_to_json(v2) == V2_CARD


def test_new_character_has_every_v2_field() -> None:
    doc = card_to_json(Character.create("Nia", description="x", tags=["a"]))
    assert doc["spec"] == SPEC_V3
    # the V1 mirror SillyTavern keeps at the top level is filled from `data`
    assert (doc["name"], doc["description"], doc["tags"]) == ("Nia", "x", ["a"])
    assert doc["talkativeness"] == "0.5" and doc["avatar"] == "none"
    for key in ("creator_notes", "system_prompt", "alternate_greetings", "extensions"):
        assert key in doc["data"]


def test_v1_png_is_written_as_v2() -> None:
    character = card_from_json({"name": "Old", "description": "d"})
    again = read_png_card(write_png_card(character, png()))
    assert again.character.name == "Old"
    assert again.character.spec == SPEC_V2


def test_card_on_a_jpeg_picture_is_written_as_png() -> None:
    out = io.BytesIO()
    Image.new("RGB", (8, 8)).save(out, format="JPEG")
    written = write_png_card(card_from_json(V2_CARD), out.getvalue())
    assert written.startswith(PNG_SIGNATURE)
    assert read_png_card(written).character.name == "Mira"


# --- CHARX --------------------------------------------------------------------------------


def charx(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return out.getvalue()


def test_charx_reads_card_icon_and_assets() -> None:
    doc = {
        "spec": SPEC_V3,
        "spec_version": "3.0",
        "data": {
            "name": "Zip",
            "assets": [
                {"type": "icon", "uri": "embeded://assets/icon/images/main.png", "name": "main", "ext": "png"},
                {"type": "emotion", "uri": "embeded://assets/emotion/joy.png", "name": "joy", "ext": "png"},
            ],
        },
    }  # fmt: skip
    picture = png()
    data = charx(
        {
            "card.json": json.dumps(doc).encode(),
            "assets/icon/images/main.png": picture,
            "assets/emotion/joy.png": b"joy",
            "__MACOSX/._card.json": b"junk",
        }
    )
    card = read_charx(data, file="zip.charx")
    assert card.character.name == "Zip"
    assert card.avatar == picture
    assert set(card.assets) == {"assets/icon/images/main.png", "assets/emotion/joy.png"}
    again = read_charx(write_charx(card))
    assert card_to_json(again.character) == doc
    assert again.assets == card.assets and again.avatar == picture


def test_charx_to_png_keeps_the_icon() -> None:
    doc = {"spec": SPEC_V3, "spec_version": "3.0", "data": {"name": "Zip", "assets": [
        {"type": "icon", "uri": "embeded://i.png", "name": "main", "ext": "png"}]}}  # fmt: skip
    picture = png((6, 6))
    card = read_charx(charx({"card.json": json.dumps(doc).encode(), "i.png": picture}))
    written = write_png_card(card.character, card.avatar)
    with Image.open(io.BytesIO(written)) as image:
        assert image.size == (6, 6)


def test_charx_without_card_json() -> None:
    with pytest.raises(FormatError, match=r"no card\.json"):
        read_charx(charx({"readme.txt": b"x"}), file="x.charx")


def test_card_file_keeps_assets_separate() -> None:
    card = CardFile(card_from_json(V2_CARD), avatar=b"a", assets={})
    assert read_charx(write_charx(card)).character.name == "Mira"


def test_json_text_matches_javascript() -> None:
    assert json_text.dumps({"a": 1.0, "b": 1e-7, "c": 0.00001, "d": [], "e": "é\u2028"}) == (
        '{"a":1,"b":1e-7,"c":0.00001,"d":[],"e":"é\u2028"}'
    )
    assert json_text.dumps(json_text.loads('"\\ud800"')) == '"\\ud800"'
    assert json_text.dumps(2**64 + 1) == str(2**64 + 1)


def test_a_data_key_named_like_the_envelope_is_kept() -> None:
    doc = {"spec": SPEC_V2, "spec_version": "2.0", "data": {"name": "A", "envelope": {"x": 1}}}
    character = card_from_json(doc)
    assert character.extras == {"envelope": {"x": 1}}
    assert card_to_json(character) == doc


def test_writing_keeps_other_chunks_and_drops_stale_cards() -> None:
    stale = {**V2_CARD, "data": {**V2_CARD["data"], "name": "Stale"}}  # type: ignore[dict-item]
    picture = png(text={"Comment": "drawn by hand", "Chara": b64(stale), "CCV3": b64(stale)})
    # an ancillary private chunk another tool left behind
    body = b"custom payload"
    private = (
        struct.pack(">I", len(body))
        + b"prVt"
        + body
        + struct.pack(">I", zlib.crc32(b"prVt" + body))
    )
    end = picture.rindex(b"IEND") - 4
    picture = picture[:end] + private + picture[end:]
    written = write_png_card(card_from_json(V2_CARD), picture)
    chunks = read_chunks(written)
    texts = [
        written[c.data_start : c.data_end].split(b"\0")[0] for c in chunks if c.type == b"tEXt"
    ]
    assert texts == [b"Comment", b"chara", b"ccv3"]
    assert b"prVt" in [c.type for c in chunks]
    assert read_png_card(written).character.name == "Mira"
