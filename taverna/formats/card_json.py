"""Character cards as JSON: V1, V2, V3 and SillyTavern's merged three-layer object.

`card_from_json` reads any of them into a `Character`; `card_to_json` writes the same
layout back (formats-character-card.md §2, §3, §5), every key where the file had it. The V1
mirror at the top level is refreshed from `data` only for what changed since the card was
read (an untouched card keeps the values the file had, even where its two layers
disagree); a character made or edited in code gets the whole mirror refreshed, as
SillyTavern's save does (§10). `upgraded` turns a V1 card into a V2 or V3 one. The layers
themselves are read and laid out in formats/card_layout.py.
"""

from __future__ import annotations

from typing import Any

from taverna.errors import FormatWarning
from taverna.formats import json_text
from taverna.formats.card_layout import (
    is_v1_layout,
    laid_out,
    mirrored,
    read_card_object,
    v2_layout,
)
from taverna.formats.card_layout import relabel as relabel
from taverna.formats.validation import validate
from taverna.model.character import SPEC_V2, Character


def card_from_json(
    doc: Any,
    *,
    file: str | None = None,
    field: str | None = None,
    warnings: list[FormatWarning] | None = None,
) -> Character:
    """A parsed card object as a Character; FormatError names the field that is wrong.

    Loose values SillyTavern opens (`"depth": "4"`, `"alternate_greetings": null`) are read
    as it reads them, each noted in `warnings` (formats/coercion.py).

    The envelope keeps every top-level key in the file's order: a V2/V3 card's `data` as a
    null placeholder that marks its place, a V1 card's own fields verbatim (the character
    holds them too, and its values are the ones written).
    """

    def check(
        fields: dict[str, Any], prefix: str | None, found: list[FormatWarning] | None
    ) -> Character:
        return validate(Character, fields, file=file, prefix=prefix, warnings=found)

    character, layout = read_card_object(doc, check, file=file, field=field, warnings=warnings)
    return remember_as_read(character) if layout else character


def remember_as_read(character: Character) -> Character:
    """Note the mirrored values `character` has now, so that writing it refreshes only the
    top-level keys whose value in `data` changes after this."""
    character._mirror_as_read = mirrored(character.data_json())
    return character


def is_v1_only(character: Character) -> bool:
    """Whether the character has nothing beyond the six V1 fields and no `spec`."""
    return is_v1_layout(character.data_json(), character.envelope)


def card_to_json(character: Character) -> dict[str, Any]:
    """The card object to store: the layout it was read in, keys in their places
    (`card_layout.laid_out`); all of the V1 mirror refreshed for a character made in code."""
    return laid_out(character.data_json(), character.envelope, character._mirror_as_read)


def _v2_layout(character: Character, spec: str) -> dict[str, Any]:
    return v2_layout(character.data_json(), character.envelope, spec)


def with_fields(character: Character, **fields: Any) -> Character:
    """The character with some `data` fields set (validated), remembering what it was read
    with, so that its top-level copies follow only these changes."""
    changed = Character.from_json({**character.to_json(), **fields})
    changed._mirror_as_read = character._mirror_as_read
    return changed


def upgraded(character: Character, spec: str = SPEC_V2) -> Character:
    """A V1 character as a V2 or V3 card, built as SillyTavern converts V1 cards (§10);
    its other top-level keys are kept. Any other character is returned as it is."""
    if character.spec is not None or "spec" in character.envelope:
        return character
    return card_from_json(_v2_layout(character, spec))


def with_spec(character: Character, spec: str) -> Character:
    """The character labelled as a V2 or V3 card; a V1 card is upgraded (`upgraded`)."""
    if character.spec is None and "spec" not in character.envelope:
        return upgraded(character, spec)
    return card_from_json(relabel(card_to_json(character), spec))


def read_card_json(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> Character:
    """A JSON card file (V1, V2, V3 or Pygmalion) as a Character."""
    return card_from_json(json_text.loads(data, file=file), file=file, warnings=warnings)


def write_card_json(character: Character) -> bytes:
    """A JSON card file as SillyTavern exports it: 4-space indentation (§5.3)."""
    return json_text.dumps(card_to_json(character), indent=4).encode("utf-8")
