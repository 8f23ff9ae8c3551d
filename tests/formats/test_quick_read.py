"""The quick card reader (`taverna inspect`'s) says exactly what the full reader says.

For every file of the corpus, the samples and the shared fixtures, and for cards made
from them with loose, wrong and odd values in every field, either the quick reader
declines (None) or `inspect` prints the same rows, the same `--json` document and the
same warnings as with the file read by its kind's reader; where that reader refuses the
file, the quick reader declines. The description of the card models it reads by must be
the one generated from the models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taverna.cli.inspecting import report
from taverna.errors import FormatError
from taverna.formats import card_shapes, shape_table
from taverna.formats.detect import DetectedFile, FileKind, read_any
from taverna.formats.png_card import read_png_card, write_png_card
from taverna.formats.quick_read import quick_read
from tests.conftest import shared_dir

REPO = Path(__file__).resolve().parents[2]
SKIPPED = {".py", ".md"}


def test_the_card_models_description_is_generated_from_the_models() -> None:
    assert shape_table.card_models() == card_shapes.MODELS, (
        "the card models changed: run `python -m taverna.formats.shape_table` "
        "and `ruff format taverna/formats/card_shapes.py`"
    )


def files() -> list[Path]:
    folders = [
        REPO / "tests" / "corpus",
        REPO / "tests" / "sillytavern_files",
        REPO / "taverna" / "data",
    ]
    folders.append(shared_dir() / "fixtures")
    found = []
    for folder in folders:
        if folder.is_dir():
            found += [
                p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix not in SKIPPED
            ]
    return found


def full_read(data: bytes, name: str) -> DetectedFile | str:
    try:
        return read_any(data, name)
    except FormatError as error:
        return f"error: {error}"


def same_inspection(data: bytes, name: str) -> bool:
    """Assert both readers agree on the file; whether the quick reader read it."""
    quick = quick_read(data, name)
    full = full_read(data, name)
    if quick is None:
        return False
    assert not isinstance(full, str), (
        f"{name}: the quick reader read a file the reader refuses: {full}"
    )
    assert quick.kind == full.kind
    assert quick.warnings == full.warnings, name
    assert quick.layout == full.layout
    for as_json in (False, True):
        assert report(quick, len(data), as_json=as_json) == report(
            full, len(data), as_json=as_json
        ), name
    return True


def test_every_file_reads_the_same_quickly_and_fully() -> None:
    read = {}
    for path in files():
        read[path] = same_inspection(path.read_bytes(), str(path))
    cards = [p for p in read if p.suffix in (".json", ".png")
             and not isinstance(full := full_read(p.read_bytes(), str(p)), str)
             and full.kind in (FileKind.CARD_JSON, FileKind.CARD_PNG)]  # fmt: skip
    assert cards, "no card among the files"
    # every card of these files is simple enough for the quick reader
    assert [p for p in cards if not read[p]] == []
    assert not any(read[p] for p in read if p not in cards)


# Values put in every field of a card: loose ones SillyTavern opens, wrong ones it does
# not, and values a checker could get wrong (huge and infinite numbers, lone surrogates).
ODD = [
    None, "", "4", " 1e3 ", "abc", "true", 4, 4.0, 4.5, -0.0, True, False, [], {},
    ["a", 1, None], [1, "2"], {"a": 1}, [{}], [{"keys": "k", "content": 5}], 2**70,
    "\ud800", "1e999",
]  # fmt: skip
INFINITE = "__infinite__"


def dumps(doc: Any) -> bytes:
    text = json.dumps(doc, ensure_ascii=True)
    return text.replace(f'"{INFINITE}"', "1e999").encode("utf-8")


def base_cards() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted((REPO / "tests" / "corpus" / "cards").glob("*.json")):
        yield path.name, json.loads(path.read_text(encoding="utf-8"))


def field_keys() -> dict[str, list[str]]:
    """The keys of each card model, by model name."""
    return {name: [f.key for f in model.fields] for name, model in card_shapes.MODELS.items()}


def variants(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The card with one value changed: each field of `data`, of its extensions, its note,
    its book and the book's first entry, set to each odd value (and a few unknown keys)."""
    keys = field_keys()
    model = {k.rsplit(".", 1)[-1]: v for k, v in keys.items()}
    data = doc.get("data") if "spec" in doc else doc
    if not isinstance(data, dict):
        return
    places: list[tuple[tuple[str, ...], list[str]]] = [
        ((), [*model["Character"], "envelope", "_other", "unknown"]),
        (("extensions",), [*model["CharacterExtensions"], "other"]),
        (("extensions", "depth_prompt"), model["DepthPrompt"]),
        (("character_book",), model["CharacterBook"]),
        (("extensions", "regex_scripts", 0), [*model["RegexScript"], "script_name"]),
    ]
    book = data.get("character_book")
    if isinstance(book, dict) and book.get("entries"):
        places.append((("character_book", "entries", 0), model["CharacterBookEntry"]))
    for path, names in places:
        for key in names:
            for value in [*ODD, INFINITE]:
                changed = json.loads(json.dumps(doc))
                target = changed.get("data") if "spec" in changed else changed
                node: Any = target
                for step in path:
                    if isinstance(step, int):
                        if not isinstance(node, list) or not node:
                            node = None
                            break
                        node = node[step]
                    else:
                        node = node.setdefault(step, {} if step != "regex_scripts" else [{}])
                        if not isinstance(node, dict | list):
                            node = None
                            break
                if isinstance(node, dict):
                    node[key] = value
                    yield changed


def test_cards_with_odd_values_read_the_same_quickly_and_fully() -> None:
    read = total = 0
    for offset, (name, doc) in enumerate(base_cards()):
        for changed in list(variants(doc))[offset % 4 :: 4]:  # each card a quarter of them
            total += 1
            read += same_inspection(dumps(changed), name)
    # most of them are read quickly; the rest were declined, for the full reader to say
    assert total > 2000 and read > total // 2


def test_png_cards_with_odd_values_read_the_same_quickly_and_fully() -> None:
    picture = read_png_card((REPO / "taverna" / "data" / "Ione Calder.png").read_bytes()).avatar
    read = total = 0
    for name, doc in base_cards():
        for changed in list(variants(doc))[::29]:
            full = full_read(dumps(changed), name)
            if isinstance(full, str):
                continue
            total += 1
            read += same_inspection(write_png_card(full.value.character, picture), f"{name}.png")
    assert total > 20 and read > total // 3


@pytest.mark.parametrize(
    "text",
    [
        b'{"spec": "chara_card_v2", "data": 5}',
        b'{"spec": "chara_card_v2"}',
        b"[1, 2]",
        b'{"spec": "chara_card_v2", "data": {"name": "\\ud800"}}',
        b"\xff\xfe",
        b'{"name": "A", "first_mes": {"x": 1}}',
    ],
)
def test_a_card_refused_or_not_sure_is_left_to_the_reader(text: bytes) -> None:
    assert quick_read(text, "card.json") is None
