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
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from taverna.errors import FormatError, FormatWarning
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


def test_a_v1_card_keeps_its_key_order() -> None:
    v1 = {"x_first": 0, "description": "d", "name": "Old", "first_mes": "hi"}
    assert list(card_to_json(card_from_json(v1))) == list(v1)


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


def test_v1_png_stays_v1() -> None:
    v1 = {"name": "Old", "description": "d", "x_old_tool": [1]}
    written = write_png_card(card_from_json(v1), png())
    # one `chara` chunk with the V1 object (a V3 label needs the `data` layout)
    assert list(card_chunks(written)) == ["chara"]
    again = read_png_card(written)
    assert again.character.spec is None
    assert card_to_json(again.character) == v1


@pytest.mark.parametrize("spec", [SPEC_V2, SPEC_V3])
def test_v1_card_is_upgraded_as_sillytavern_converts_it(spec: str) -> None:
    v1 = {
        "name": "Old",
        "description": "d",
        "first_mes": "hi",
        "creatorcomment": "by me",
        "tags": "a, b ,",
        "fav": "true",
        "talkativeness": "0.7",
        "depth_prompt_prompt": "note",
        "depth_prompt_depth": 2,
        "x_old_tool": 3,
    }
    card = with_spec(card_from_json(v1), spec)
    assert card.spec == spec
    doc = card_to_json(card)
    # the V1 object's keys stay where they were, the V1 fields mirrored, `data` last
    assert list(doc)[: len(v1)] == list(v1)
    assert doc["x_old_tool"] == 3 and doc["personality"] == "" and doc["mes_example"] == ""
    assert doc["spec_version"] == ("3.0" if spec == SPEC_V3 else "2.0")
    assert list(doc)[-1] == "data"
    data = doc["data"]
    assert (data["name"], data["first_mes"], data["creator_notes"]) == ("Old", "hi", "by me")
    assert data["tags"] == ["a", "b"]
    assert data["extensions"]["fav"] is True and data["extensions"]["talkativeness"] == "0.7"
    assert data["extensions"]["depth_prompt"] == {"prompt": "note", "depth": 2, "role": "system"}
    for key in ("system_prompt", "post_history_instructions", "alternate_greetings", "creator"):
        assert key in data
    # the upgraded card reads back as itself
    assert card_to_json(card_from_json(doc)) == doc


def test_v1_charx_holds_a_v3_card() -> None:
    card = CardFile(card_from_json({"name": "Old", "description": "d"}), avatar=png())
    again = read_charx(write_charx(card))
    assert again.character.spec == SPEC_V3 and again.character.description == "d"


def test_key_order_is_kept_at_every_level() -> None:
    # `data` first, V1 mirror after it, keys in no usual order
    doc = {
        "spec": SPEC_V2,
        "data": {"x_first": 1, "name": "Mira", "extensions": {"z": 1, "a": 2}, "tags": ["t"]},
        "name": "Mira",
        "x_tool": {"b": 1, "a": 2},
        "spec_version": "2.0",
    }
    card = card_from_json(doc)
    text = json_text.dumps(card_to_json(card), indent=4)
    assert text == json_text.dumps(doc, indent=4)
    # so are the PNG chunk's and the CHARX card's
    chara = read_png_card(write_png_card(card, png())).character
    assert json.dumps(card_to_json(chara)) == json.dumps(doc)


def test_an_untouched_card_keeps_top_level_values_that_disagree_with_data() -> None:
    # community cards: a top-level `tags` of "" beside `data.tags`, a stale description
    doc = {**V2_CARD, "tags": "", "description": "old text"}
    card = card_from_json(doc)
    assert card_to_json(card) == doc
    assert read_card_json(write_card_json(card)) == card
    assert card_to_json(read_png_card(write_png_card(card, png())).character) == doc
    # an edit of `data` refreshes the top-level copy of what changed, and only that
    edited = card.model_copy(update={"description": "new text"})
    out = card_to_json(edited)
    assert out["description"] == "new text" and out["tags"] == ""


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


# A V1 card's old top-level fields, moved into `data` as SillyTavern's card reader moves
# them when it reads a card without `spec` (characters.js, its V2 conversion).
OLD_V1 = {
    "name": "Sal",
    "description": "d",
    "personality": "",
    "scenario": "",
    "first_mes": "hi",
    "mes_example": "",
    "creatorcomment": "notes",
    "creator": "me",
    "tags": "harbour, shop, ,",
    "talkativeness": "0.8",
    "fav": "true",
    "depth_prompt_prompt": "Sal asks about the weather.",
    "depth_prompt_depth": "2",
    "depth_prompt_role": "assistant",
    "x_old_tool": 1,
}


def test_v1_old_fields_move_into_data_with_a_warning_each() -> None:
    found: list[FormatWarning] = []
    character = card_from_json(OLD_V1, file="sal.json", warnings=found)
    assert character.depth_prompt.model_dump() == {
        "prompt": "Sal asks about the weather.",
        "depth": 2,
        "role": "assistant",
    }
    assert character.extensions.talkativeness == "0.8" and character.talkativeness == 0.8
    assert character.extensions.fav is True
    assert character.tags == ["harbour", "shop"]
    assert (character.creator_notes, character.creator) == ("notes", "me")
    assert [w.field for w in found] == [
        "creatorcomment",
        "creator",
        "tags",
        "talkativeness",
        "fav",
        "depth_prompt_prompt",
        "depth_prompt_depth",
        "depth_prompt_role",
    ]
    assert all(w.file == "sal.json" and "moved into" in w.message for w in found)
    assert "data.extensions.depth_prompt.depth as 2" in found[6].message


def test_v1_old_fields_are_written_as_sillytavern_writes_the_converted_card() -> None:
    doc = card_to_json(card_from_json(OLD_V1))
    assert doc["spec"] == SPEC_V2
    assert doc["data"]["extensions"]["depth_prompt"]["prompt"] == "Sal asks about the weather."
    # the top level keeps its keys, refreshed where SillyTavern mirrors them
    assert doc["fav"] is True and doc["tags"] == ["harbour", "shop"]
    assert doc["depth_prompt_depth"] == "2" and doc["x_old_tool"] == 1
    again: list[FormatWarning] = []
    assert card_from_json(doc, warnings=again).depth_prompt == card_from_json(OLD_V1).depth_prompt
    assert again == []


@pytest.mark.parametrize(
    ("depth", "read"),
    [("", 0), (None, 0), ("abc", 4), ("1e1", 10), (3, 3), (True, 1), ("Infinity", 4)],
)
def test_v1_depth_is_read_with_javascripts_number(depth: object, read: int) -> None:
    """`Number(x)`, and 4 where that is NaN (characters.js)."""
    character = card_from_json(
        {"name": "A", "depth_prompt_prompt": "p", "depth_prompt_depth": depth}
    )
    assert character.depth_prompt.depth == read


def test_v1_depth_prompt_defaults_when_only_some_flat_fields_are_there() -> None:
    character = card_from_json({"name": "A", "depth_prompt_prompt": "p"})
    assert character.depth_prompt.model_dump() == {"prompt": "p", "depth": 4, "role": "system"}
    character = card_from_json({"name": "A", "depth_prompt_depth": 1, "depth_prompt_role": None})
    assert character.depth_prompt.model_dump() == {"prompt": "", "depth": 1, "role": "system"}


@pytest.mark.parametrize(("fav", "read"), [("true", True), (True, False), ("false", False)])
def test_v1_fav_is_true_only_for_the_text_true(fav: object, read: bool) -> None:
    """SillyTavern's `fav == 'true'`: a JSON true is not equal to the text."""
    assert card_from_json({"name": "A", "fav": fav}).extensions.fav is read


def test_a_plain_v1_card_is_left_as_it_is() -> None:
    found: list[FormatWarning] = []
    v1 = {"name": "Old", "description": "d", "first_mes": "hi", "avatar": "none"}
    character = card_from_json(v1, warnings=found)
    assert found == [] and card_to_json(character) == v1


def test_a_v1_png_card_names_the_chunk_in_its_warnings() -> None:
    data = png(text={"chara": b64({"name": "Old", "talkativeness": "0.2"})})
    found: list[FormatWarning] = []
    card = read_png_card(data, file="old.png", warnings=found)
    assert card.character.talkativeness == 0.2
    assert [w.field for w in found] == ["chara:talkativeness"]


def test_v2_cards_keep_their_top_level_fields_where_they_are() -> None:
    found: list[FormatWarning] = []
    character = card_from_json({**V2_CARD, "depth_prompt_prompt": "stale"}, warnings=found)
    assert found == [] and character.depth_prompt.prompt == ""


_old_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["", "4", "true", "a, b", "system", "1e400"]),
    st.lists(st.text(max_size=3), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            ["creatorcomment", "creator", "tags", "talkativeness", "fav", "depth_prompt_prompt",
             "depth_prompt_depth", "depth_prompt_role"]
        ),
        _old_values,
    )
)  # fmt: skip
def test_any_old_v1_fields_read_or_name_the_field(old: dict[str, object]) -> None:
    found: list[FormatWarning] = []
    try:
        character = card_from_json({"name": "A", **old}, file="a.json", warnings=found)
    except FormatError as error:
        assert error.file == "a.json" and error.field in old  # named by the card's own field
        return
    assert {w.field for w in found} == set(old)  # each old field present is named, only they
    again: list[FormatWarning] = []
    back = card_from_json(card_to_json(character), warnings=again)
    assert again == [] and back.depth_prompt == character.depth_prompt


def test_an_old_cards_flat_character_note_is_read() -> None:
    # formats-character-card.md §6: old cards keep the character's note in flat top-level keys
    old = {"name": "Tom", "description": "d", "depth_prompt_prompt": "Speak softly.",
           "depth_prompt_depth": "2", "depth_prompt_role": "user"}  # fmt: skip
    note = card_from_json(old).depth_prompt
    assert (note.prompt, note.depth, note.role) == ("Speak softly.", 2, "user")
    # and upgraded, the card keeps it where later releases keep it
    upgraded = with_spec(card_from_json(old), SPEC_V2)
    assert upgraded.extensions.depth_prompt == note
    assert card_from_json({"name": "Tom", "depth_prompt_depth": ""}).depth_prompt.depth == 0
    none = card_from_json({"name": "Tom"}).depth_prompt
    assert (none.prompt, none.depth, none.role) == ("", 4, "system")
