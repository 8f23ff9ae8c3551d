"""A character card's JSON layers, as plain JSON: reading the layers apart and laying
them out again (formats-character-card.md §2, §3, §5, §6, §10).

Everything here works on parsed JSON; checking the `data` fields against the character
model is the caller's (`read_card_object` takes the check), so the card reader
(formats/card_json.py) and the quick reader for `taverna inspect` (formats/quick_read.py)
read a card by the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from taverna.errors import FormatError, FormatWarning
from taverna.formats.coercion import Said, as_js_value, js_truthy, show
from taverna.model.card_fields import ENVELOPE_KEY, SPEC_V2, SPEC_V3, V1_FIELDS
from taverna.model.js_number import parse_js_number
from taverna.model.js_text import js_trim

T = TypeVar("T")

Check = Callable[[dict[str, Any], str | None, list[FormatWarning] | None], T]
"""Validates a card's `data` fields (with the envelope under ENVELOPE_KEY): the fields,
the field path they are at, the list the coercions are noted in."""

# Top-level key -> how to read its value from the character (formats-character-card.md §2.1).
MIRROR: dict[str, tuple[str, ...]] = {
    "name": ("name",),
    "description": ("description",),
    "personality": ("personality",),
    "scenario": ("scenario",),
    "first_mes": ("first_mes",),
    "mes_example": ("mes_example",),
    "tags": ("tags",),
    "creatorcomment": ("creator_notes",),
    "talkativeness": ("extensions", "talkativeness"),
    "fav": ("extensions", "fav"),
}

# Pygmalion / Gradio JSON keys -> card fields (§5).
_PYGMALION = {
    "char_name": "name",
    "char_persona": "description",
    "char_greeting": "first_mes",
    "world_scenario": "scenario",
    "example_dialogue": "mes_example",
}


def read_card_object(
    doc: Any,
    check: Check[T],
    *,
    file: str | None = None,
    field: str | None = None,
    warnings: list[FormatWarning] | None = None,
) -> tuple[T, bool]:
    """A parsed card object's `data` fields, checked by `check`, and whether the card has
    a layout to remember (a Pygmalion card has none: it is written as a V1 card).

    The envelope keeps every top-level key in the file's order: a V2/V3 card's `data` as a
    null placeholder that marks its place, a V1 card's own fields verbatim.
    """
    where = f"{field}:" if field else ""
    if not isinstance(doc, dict):
        raise FormatError(
            "a character card must be a JSON object",
            file=file,
            field=field,
            code="character_card_must_be_json",
        )
    if "spec" in doc:
        data = doc.get("data")
        if not isinstance(data, dict):
            raise FormatError(
                "a V2/V3 card needs a `data` object",
                file=file,
                field=f"{where}data",
                code="v2_v3_card_needs_data",
            )
        envelope = {key: (None if key == "data" else value) for key, value in doc.items()}
        return check({**data, ENVELOPE_KEY: envelope}, f"{where}data", warnings), True
    if "char_name" in doc:
        fields = {card: doc[key] for key, card in _PYGMALION.items() if key in doc}
        return check(fields, field, warnings), False
    if "name" in doc:
        return _v1_card(doc, check, file=file, field=field, warnings=warnings), True
    raise FormatError(
        "not a character card (no `spec`, `name` or `char_name`)",
        file=file,
        field=field,
        code="not_character_card_no_spec",
    )


def _v1_card(
    doc: dict[str, Any],
    check: Check[T],
    *,
    file: str | None,
    field: str | None,
    warnings: list[FormatWarning] | None,
) -> T:
    """A card without `spec`: its six fields, its old top-level ones moved into `data`."""
    where = f"{field}:" if field else ""
    fields = {key: doc[key] for key in V1_FIELDS if key in doc}
    fields.update(_migrated_v1(doc, where, file, warnings))
    # every top-level key in its place; the six fields are written from the character
    envelope = dict(doc)
    found: list[FormatWarning] = []

    def source(path: str | None) -> str | None:
        """A moved value's field in `data`, named by the top-level field it came from."""
        rest = (path or "").removeprefix(f"{field}.") if field else path or ""
        for target, key in _MOVED_TO.items():
            if key in doc and (rest == target or rest.startswith((f"{target}.", f"{target}["))):
                return f"{where}{key}"
        return path

    try:
        checked = check({**fields, ENVELOPE_KEY: envelope}, field, found)
    except FormatError as error:
        raise FormatError(
            error.message,
            file=file,
            field=source(error.field),
            code=error.code,
            params=error.params,
        ) from None
    if warnings is not None:
        warnings.extend(FormatWarning(w.message, w.file, source(w.field)) for w in found)
    return checked


# A V1 card's old top-level fields, which SillyTavern's card reader moves into `data` when
# it reads a card without `spec` (its V2 conversion of a stored card; they stay at the
# top level too). formats-character-card.md §6 and §10.
_DEPTH_PROMPT_FIELDS = ("depth_prompt_prompt", "depth_prompt_depth", "depth_prompt_role")
_ABSENT = object()
# Where each old field goes in `data`.
_MOVED_TO = {
    "creator_notes": "creatorcomment",
    "creator": "creator",
    "tags": "tags",
    "extensions.talkativeness": "talkativeness",
    "extensions.fav": "fav",
    "extensions.depth_prompt.prompt": "depth_prompt_prompt",
    "extensions.depth_prompt.depth": "depth_prompt_depth",
    "extensions.depth_prompt.role": "depth_prompt_role",
}


def _migrated_v1(
    doc: dict[str, Any], where: str, file: str | None, warnings: list[FormatWarning] | None
) -> dict[str, Any]:
    """The `data` fields SillyTavern makes of a V1 card's old top-level fields, each move
    noted; nothing when the card has none of them."""
    notes: list[FormatWarning] = []

    def moved(key: str, target: str, detail: str = "") -> None:
        text = f"moved into {target}{detail}, as SillyTavern reads a V1 card"
        if detail.startswith(" as "):
            message = Said(text, "moved_v1_as", target=target, value=detail.removeprefix(" as "))
        else:
            message = Said(text, "moved_v1_split" if detail else "moved_v1", target=target)
        notes.append(FormatWarning(message, file=file, field=f"{where}{key}"))

    out: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    if "creatorcomment" in doc:
        out["creator_notes"] = doc["creatorcomment"] if js_truthy(doc["creatorcomment"]) else ""
        moved("creatorcomment", "data.creator_notes")
    if "creator" in doc:
        out["creator"] = doc["creator"] if js_truthy(doc["creator"]) else ""
        moved("creator", "data.creator")
    if "tags" in doc:
        tags = doc["tags"]
        if isinstance(tags, str):
            out["tags"] = [tag for tag in (js_trim(part) for part in tags.split(",")) if tag]
            moved("tags", "data.tags", " (the text split at its commas)")
        else:
            out["tags"] = tags if js_truthy(tags) else []
            moved("tags", "data.tags")
    if "talkativeness" in doc:
        extensions["talkativeness"] = doc["talkativeness"]
        moved("talkativeness", "data.extensions.talkativeness")
    if "fav" in doc:
        fav = doc["fav"] == "true"  # SillyTavern's `fav == 'true'`: only that text is true
        extensions["fav"] = fav
        moved("fav", "data.extensions.fav", f" as {show(fav)}")
    if any(key in doc for key in _DEPTH_PROMPT_FIELDS):
        extensions["depth_prompt"] = _depth_prompt(doc, moved)
    if extensions:
        out["extensions"] = extensions
    if warnings is not None:
        warnings.extend(notes)
    return out


def _depth_prompt(doc: dict[str, Any], moved: Callable[..., None]) -> dict[str, Any]:
    """The character's note of a V1 card's flat `depth_prompt_*` fields (§6)."""
    prompt = doc.get("depth_prompt_prompt")
    role = doc.get("depth_prompt_role")
    raw = doc.get("depth_prompt_depth", _ABSENT)
    number = _js_number_of(raw)
    depth = 4 if number is None else as_js_value(number)  # `Number(x)`, NaN: 4
    for key in _DEPTH_PROMPT_FIELDS:
        if key not in doc:
            continue
        detail = ""
        if key == "depth_prompt_depth" and not (type(raw) is type(depth) and raw == depth):
            detail = f" as {show(depth)}"
        moved(key, "data.extensions.depth_prompt." + key.removeprefix("depth_prompt_"), detail)
    return {
        "prompt": "" if prompt is None else prompt,
        "depth": depth,
        "role": "system" if role is None else role,
    }


def _js_number_of(value: Any) -> float | None:
    """JavaScript's `Number(value)` for a JSON value; None where it is NaN (or infinite)."""
    if value is None:
        return 0.0
    if isinstance(value, bool | int | float):
        number = float(value)
    elif isinstance(value, str):
        read = parse_js_number(value)
        if read is None:
            return None
        number = read
    else:
        return None
    return None if math.isinf(number) or math.isnan(number) else number


def mirrored(data: dict[str, Any]) -> dict[str, Any]:
    """The values of `data` that the top-level keys mirror, by top-level key."""
    out = {}
    for key, path in MIRROR.items():
        found, value = _mirror_value(data, path)
        if found:
            out[key] = value
    return out


def _mirror_value(data: dict[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    node: Any = data
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def is_v1_layout(data: dict[str, Any], envelope: dict[str, Any]) -> bool:
    """Whether a card has nothing beyond the six V1 fields and no `spec`."""
    return "spec" not in envelope and set(data) <= set(V1_FIELDS)


def laid_out(
    data: dict[str, Any], envelope: dict[str, Any], as_read: dict[str, Any] | None
) -> dict[str, Any]:
    """The card object to store: the layout it was read in, keys in their places.

    `data` is the character's `data` object, `envelope` the keys around it, `as_read` the
    mirrored values when it was read (None: a character made in code). The V1 mirror
    follows the changes made to `data` since the card was read. A V1 character given
    fields beyond V1 becomes a V2 card (SillyTavern converts V1 cards to V2 on import,
    §5.2).
    """
    if is_v1_layout(data, envelope):
        # its own top-level keys as they were; the six fields as the character has them
        out = {key: data.get(key, value) if key in V1_FIELDS else value
               for key, value in envelope.items()}  # fmt: skip
        out.update((key, data[key]) for key in V1_FIELDS if key in data and key not in out)
        return out
    if "spec" not in envelope:
        return v2_layout(data, envelope, SPEC_V2)
    out = dict(envelope)
    for key, path in MIRROR.items():
        if key not in out:
            continue
        present, value = _mirror_value(data, path)
        if present and (as_read is None or key not in as_read or as_read[key] != value):
            out[key] = value
    out["data"] = data  # in its place, or last as SillyTavern writes it
    return out


# The fields a V2 card's `data` must have (formats-character-card.md §12), with the values
# SillyTavern's V1 conversion gives those a V1 card lacks (§10).
_V2_DEFAULTS: dict[str, Any] = {
    "creator_notes": "",
    "system_prompt": "",
    "post_history_instructions": "",
    "tags": [],
    "creator": "",
    "character_version": "",
    "alternate_greetings": [],
    "extensions": {},
    "group_only_greetings": [],
}


def v2_layout(data: dict[str, Any], top: dict[str, Any], spec: str) -> dict[str, Any]:
    """A V1 character as a V2/V3 card (§10): its top-level keys kept in their places, the
    V1 fields mirrored there; `data` holds every field the V2 spec requires, with what the
    reader moved there from the old top-level keys (`_migrated_v1`)."""
    converted = {**{key: data.get(key, "") for key in V1_FIELDS}, **_V2_DEFAULTS}
    converted.update((key, value) for key, value in data.items() if key not in V1_FIELDS)
    out = {key: data.get(key, value) if key in V1_FIELDS else value for key, value in top.items()}
    out.update((key, data.get(key, "")) for key in V1_FIELDS if key not in out)
    for key, path in MIRROR.items():  # the top-level copies the conversion refreshes
        present, value = _mirror_value(converted, path)
        if key in out and present:
            out[key] = value
    out["spec"] = spec
    out["spec_version"] = "3.0" if spec == SPEC_V3 else "2.0"
    out["data"] = converted
    return out


def relabel(doc: dict[str, Any], spec: str) -> dict[str, Any]:
    """A card object with only its `spec`/`spec_version` labels changed (§4.3 step 3)."""
    out = dict(doc)
    out["spec"] = spec
    out["spec_version"] = "3.0" if spec == SPEC_V3 else "2.0"
    return out
