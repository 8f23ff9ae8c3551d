"""Every reader followed by its writer gives back the same document.

On SillyTavern's own files (fixtures) and on generated documents with unknown keys.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taverna.formats import json_text
from taverna.formats.card_json import card_from_json, card_to_json, read_card_json, write_card_json
from taverna.formats.detect import FileKind, read_any, write_document
from taverna.formats.png_card import read_png_card, write_png_card
from taverna.model.character import Character
from taverna.model.document import STDocument
from taverna.model.persona import PersonaSet
from taverna.model.presets import (
    ChatCompletionPreset,
    ContextTemplate,
    InstructTemplate,
    PromptManagerExport,
    SystemPromptPreset,
    TextCompletionPreset,
)
from taverna.model.quick_reply import LegacyQuickReplySet, QuickReplySet
from taverna.model.regex_script import RegexScript


def fixture_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".png")
    )


def parsed(data: bytes) -> Any:
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def test_every_fixture_round_trips(st_fixtures: Path) -> None:
    files = fixture_files(st_fixtures)
    assert len(files) >= 25
    for path in files:
        data = path.read_bytes()
        document = read_any(data, path.name)
        written = write_document(document)
        if document.kind is FileKind.CARD_PNG:
            again = read_png_card(written)
            assert card_to_json(again.character) == card_to_json(document.value.character), path
            assert again.avatar == document.value.avatar, path
        elif document.kind is FileKind.CHAT:
            assert parsed(written) == parsed(data), path
            assert written == data, path
        else:
            assert json.loads(written) == json.loads(data), path
            # files in `JSON.stringify`'s form come back byte for byte, final newline and all
            assert written == data, path


# --- generated documents --------------------------------------------------------------


def as_read(number: float) -> Any:
    """A number as it comes out of a JSON file written in JavaScript's form."""
    return json.loads(json_text.dumps(number))


json_floats = st.floats(allow_nan=False, allow_infinity=False).map(as_read)
json_leaf = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | json_floats | st.text(max_size=12)
)
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
extra_keys = st.text(min_size=1, max_size=10).map(lambda s: "x_" + s)


def strategy_for(annotation: Any) -> st.SearchStrategy[Any]:
    """JSON values that validate as `annotation`."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return strategy_for(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy_for(arg) for arg in typing.get_args(annotation)))
    if origin is list:
        return st.lists(strategy_for(typing.get_args(annotation)[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(
            st.text(max_size=8), strategy_for(typing.get_args(annotation)[1]), max_size=3
        )
    if annotation is type(None):
        return st.none()
    if annotation is str:
        return st.text(max_size=30)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(-(2**60), 2**60)
    if annotation is float:
        return json_floats
    if isinstance(annotation, type) and issubclass(annotation, STDocument):
        return documents(annotation)
    return json_values


def documents(
    model: type[STDocument], skip: tuple[str, ...] = ("envelope",)
) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with a random subset of `model`'s fields plus unknown keys."""
    items = [(name, info) for name, info in model.model_fields.items() if name not in skip]
    required = {(i.alias or n): strategy_for(i.annotation) for n, i in items if i.is_required()}
    optional = {(i.alias or n): strategy_for(i.annotation) for n, i in items if not i.is_required()}
    known = st.fixed_dictionaries(required, optional=optional)  # type: ignore[arg-type]
    unknown = st.dictionaries(extra_keys, json_values, max_size=3)
    return st.tuples(known, unknown).map(lambda pair: {**pair[0], **pair[1]})


MODELS = [
    ChatCompletionPreset,
    InstructTemplate,
    ContextTemplate,
    SystemPromptPreset,
    TextCompletionPreset,
    RegexScript,
    QuickReplySet,
    LegacyQuickReplySet,
    PersonaSet,
    PromptManagerExport,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_generated_documents_round_trip(model: type[STDocument]) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(documents(model))
    def check(doc: dict[str, Any]) -> None:
        value = model.from_json(doc)
        assert value.to_json() == doc
        text = json_text.dumps(value.to_json(), indent=4)
        assert list(json.loads(text)) == list(doc)  # key order kept
        assert model.from_json(json_text.loads(text)).to_json() == doc

    check()


MIRRORED = ("name", "description", "personality", "scenario", "first_mes", "mes_example", "tags")


@st.composite
def cards(draw: st.DrawFn) -> dict[str, Any]:
    data = draw(documents(Character))
    layout = draw(st.sampled_from(["v2", "v3", "st-merged"]))
    if layout == "st-merged":
        top = {key: data[key] for key in MIRRORED if key in data}
        top.update(draw(st.dictionaries(st.sampled_from(["chat", "create_date", "avatar", "x_top"]),
                                        st.text(max_size=10), max_size=3)))  # fmt: skip
        return {**top, "spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    spec = "chara_card_v3" if layout == "v3" else "chara_card_v2"
    return {"spec": spec, "spec_version": "3.0" if layout == "v3" else "2.0", "data": data}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cards())
def test_generated_cards_round_trip_through_json_and_png(doc: dict[str, Any]) -> None:
    character = card_from_json(doc)
    assert card_to_json(character) == doc
    from_json = read_card_json(write_card_json(character))
    assert card_to_json(from_json) == doc
    from_png = read_png_card(write_png_card(character)).character
    assert card_to_json(from_png) == doc
    # the model's own serialization (what a store keeps) restores the same card
    restored = Character.from_json(character.to_json())
    assert card_to_json(restored) == doc


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers())
def test_numbers_survive_javascript_form(number: float) -> None:
    # JavaScript reads the text back as the same double; Python may read an exact int
    again = json_text.loads(json_text.dumps(number))
    assert again == number if isinstance(number, int) else float(again) == number


ORACLE_SKIP = {"case.json", "expected.json", "meta.json", "frontend_request.json"}


def test_every_oracle_input_round_trips(oracle_cases: Path) -> None:
    files = [p for p in fixture_files(oracle_cases) if p.name not in ORACLE_SKIP]
    assert files
    for path in files:
        data = path.read_bytes()
        document = read_any(data, path.name)
        written = write_document(document)
        if document.kind is FileKind.CARD_PNG:
            again = read_png_card(written).character
            assert card_to_json(again) == card_to_json(document.value.character), path
        elif document.kind is FileKind.CHAT:
            assert parsed(written) == parsed(data), path
        elif document.kind is FileKind.PERSONAS:
            power_user = json.loads(data)["power_user"]
            kept = {
                k: power_user[k]
                for k in ("personas", "persona_descriptions", "default_persona")
                if k in power_user
            }
            assert json.loads(written) == kept, path
        else:
            assert json.loads(written) == json.loads(data), path
