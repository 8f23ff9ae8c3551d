"""What JSON each field of a model holds, and reading a document by that description alone.

A model's fields are described here as plain data (`Field`), so that the same description
drives two readers: SillyTavern's coercions (`coerce`), run before a model validates a
document, and `checked`, a strict check that gives the document exactly as the model
would hold and dump it. The description of the card models is generated from them
(formats/shape_table.py writes formats/card_shapes.py); `checked` lets a command that only
looks at a card read it without loading the modelling library. It answers only where it
is sure: anything else raises `Undecided`, and the caller validates with the model.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from taverna.errors import FormatWarning
from taverna.formats.coercion import (
    Unfit,
    as_bool,
    as_number,
    as_numbers,
    as_object,
    as_text,
    as_texts,
    show,
)
from taverna.model.js_number import parse_js_number


class _Required:
    """The default of a field that has none (the type's empty value is used)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class Shape(NamedTuple):
    """What JSON a field holds, as far as the coercions care.

    `kind`: text number integer bool texts numbers object model models model_map union any.
    `model` names the model a `model`, `models` or `model_map` field holds.
    """

    kind: str
    optional: bool = False
    model: str | None = None
    members: tuple[Shape, ...] = ()


Type = tuple[Any, ...]
"""A field's exact type for `checked`: `("str",)`, `("bool",)`, `("int",)`, `("jsonint",)`
(an integer that also takes an integral float), `("float",)`, `("none",)`, `("any",)`,
`("list", T)`, `("dict", T)`, `("union", T, ...)`, `("model", name)`, `("wrap", T)` (a
single string wrapped into a list first) and `("opaque",)`: a type `checked` cannot tell."""


class Field(NamedTuple):
    """One field of a model: its JSON key, its Python name, its shape and exact type, and
    the JSON value a null becomes (REQUIRED: the type's empty value)."""

    key: str
    name: str
    shape: Shape
    type: Type
    default: Any


class Model(NamedTuple):
    """A model's fields in declaration order; `opaque` when it validates in ways `checked`
    cannot follow (its own validators, serializers, other handling of unknown keys)."""

    fields: tuple[Field, ...]
    opaque: bool = False


Models = Callable[[str], Model]


# ------------------------------------------------------------------ SillyTavern's coercions


def coerce(
    models: Models,
    model: str,
    value: Any,
    *,
    file: str | None = None,
    path: str = "",
    warnings: list[FormatWarning] | None = None,
) -> Any:
    """`value` with every field of `model` (and of the models inside) read the way
    SillyTavern reads loose JSON (taverna.formats.coercion); unknown keys are untouched.

    A value no rule fits is left as it is, for validation to refuse.
    """
    if not isinstance(value, dict):
        return value
    out = value
    for spec in models(model).fields:
        if spec.key not in value:
            continue
        item = value[spec.key]
        where = f"{path}.{spec.key}" if path else spec.key
        new = _coerce(models, spec.shape, spec.default, item, file, where, warnings)
        if new is not item:
            if out is value:
                out = dict(value)
            out[spec.key] = new
    return out


def _note(warnings: list[FormatWarning] | None, file: str | None, where: str, note: str) -> None:
    if warnings is not None:
        warnings.append(FormatWarning(note, file=file, field=where))


_EMPTY = {"text": "", "number": 0, "integer": 0, "bool": False, "texts": [], "numbers": []}


def _coerce(
    models: Models,
    shape: Shape,
    default: Any,
    value: Any,
    file: str | None,
    where: str,
    warnings: list[FormatWarning] | None,
) -> Any:
    if value is None and shape.optional:
        return value
    if default is REQUIRED:
        default = _EMPTY.get(shape.kind, {} if shape.kind in ("object", "model") else None)
    kind = shape.kind
    try:
        if kind in _SCALARS:
            read, note = _SCALARS[kind](value, copy.deepcopy(default))
        elif kind == "texts":
            read, note = as_texts(value)
        elif kind == "numbers":
            read, note = as_numbers(value, integer=shape.members[0].kind == "integer")
        elif kind in ("object", "model", "model_map"):
            read, note = as_object(value, copy.deepcopy(default))
        elif kind == "models":
            if value is None:
                read, note = [], "null is read as an empty list"
            elif isinstance(value, list):
                read, note = value, None
            else:
                return value
        elif kind == "union":
            read, note = _union(shape, default, value)
        else:
            return value
    except Unfit:
        return value  # validation names the field
    if note is not None:
        _note(warnings, file, where, note)
    if kind == "model" and isinstance(read, dict):
        assert shape.model is not None
        read = coerce(models, shape.model, read, file=file, path=where, warnings=warnings)
    elif kind == "models" and isinstance(read, list):
        assert shape.model is not None
        model = shape.model
        items = [
            coerce(models, model, item, file=file, path=f"{where}[{i}]", warnings=warnings)
            for i, item in enumerate(read)
        ]
        if any(new is not old for new, old in zip(items, read, strict=True)):
            read = items
    elif kind == "model_map" and isinstance(read, dict):
        assert shape.model is not None
        model = shape.model
        entries = {
            key: coerce(models, model, item, file=file, path=f"{where}.{key}", warnings=warnings)
            for key, item in read.items()
        }
        if any(entries[key] is not read[key] for key in read):
            read = entries
    return read


def _as_integer(value: Any, default: Any) -> tuple[Any, str | None]:
    return as_number(value, default, integer=True)


_SCALARS: dict[str, Callable[[Any, Any], tuple[Any, str | None]]] = {
    "text": as_text,
    "number": as_number,
    "integer": _as_integer,
    "bool": as_bool,
}


def _fits(shape: Shape, value: Any) -> bool:
    kind = shape.kind
    if kind == "text":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return kind == "number" or isinstance(value, int) or float(value).is_integer()
    return False


def _union(shape: Shape, default: Any, value: Any) -> tuple[Any, str | None]:
    """A value of a field typed as several scalars (`bool | int`, `str | number`, ...)."""
    members = shape.members
    if any(_fits(member, value) for member in members) or any(
        m.kind not in _SCALARS for m in members
    ):
        return value, None
    if value is None:
        return default, f"null is read as {show(default)}, the default"
    kinds = {m.kind for m in members}
    order: list[str] = []
    if isinstance(value, str):
        number = parse_js_number(value)
        if value.strip() and number is not None and abs(number) != float("inf"):
            order += [k for k in ("integer", "number") if k in kinds]
        order.append("bool")
    else:
        order += ["bool", "integer", "number", "text"]
    for kind in order:
        if kind in kinds:
            return _SCALARS[kind](value, default)
    raise Unfit(
        f"no member of the field's type takes {show(value)}", "unfit_union", value=show(value)
    )


# ------------------------------------------------------------------ the strict check


class Undecided(Exception):
    """`checked` cannot be sure what the model makes of a value: validate with the model."""


class Checked(NamedTuple):
    """A document as its model holds it: `value` with every key where the document had it
    (the model's `to_json()`), `dump` with each object's known fields first, in
    declaration order, then its unknown keys (the model's `model_dump()`)."""

    value: Any
    dump: Any


_WIDEST_INT = 2**63
_SURROGATE = re.compile("[\ud800-\udfff]")


def checked(models: Models, model: str, value: Any) -> Checked:
    """`value` as `model` validates it (after `coerce`), or Undecided: a value of another
    type than the field's, and anything the check does not follow exactly."""
    return _model(models, model, value)


def _model(models: Models, name: str, value: Any) -> Checked:
    spec = models(name)
    if spec.opaque or not isinstance(value, dict):
        raise Undecided(name)
    known = {field.key: field for field in spec.fields}
    for field in spec.fields:
        if field.name != field.key and field.name in value:
            raise Undecided(field.name)  # a key that is a field's Python name
    items = {key: _value(known[key].type, item, models) if key in known else _plain(item)
             for key, item in value.items()}  # fmt: skip
    dump = {field.key: items[field.key].dump for field in spec.fields if field.key in items}
    dump.update((key, item.dump) for key, item in items.items() if key not in known)
    return Checked({key: item.value for key, item in items.items()}, dump)


def _same(value: Any) -> Checked:
    return Checked(value, value)


def _value(kind: Type, value: Any, models: Models) -> Checked:
    tag = kind[0]
    if tag == "any":
        return _plain(value)
    if tag == "model":
        return _model(models, kind[1], value)
    if tag == "list" and isinstance(value, list):
        items = [_value(kind[1], item, models) for item in value]
        return Checked([i.value for i in items], [i.dump for i in items])
    if tag == "dict" and isinstance(value, dict):
        if kind[1][0] == "model":
            raise Undecided("a map of models")  # its items' key order is the model's
        entries = {key: _value(kind[1], item, models) for key, item in value.items()}
        return Checked(
            {k: e.value for k, e in entries.items()}, {k: e.dump for k, e in entries.items()}
        )
    if tag == "wrap":
        return _value(kind[1], [value] if isinstance(value, str) else value, models)
    if tag == "union":
        fits = [member for member in kind[1:] if _accepts(member, value)]
        if len(fits) != 1:
            raise Undecided("no single member of a union takes the value")
        return _value(fits[0], value, models)
    if _accepts(kind, value):
        return _same(_scalar(tag, value))
    raise Undecided(tag)


def _accepts(kind: Type, value: Any) -> bool:
    """Whether a member of a union takes `value` in strict mode, exactly."""
    tag: str = kind[0]
    if tag == "str":
        return isinstance(value, str) and not _SURROGATE.search(value)
    if tag == "bool":
        return value is True or value is False
    if tag in ("int", "jsonint"):
        if tag == "jsonint" and type(value) is float and value.is_integer():
            return abs(value) < _WIDEST_INT
        return type(value) is int and abs(value) < _WIDEST_INT
    if tag == "float":
        return type(value) is float and math.isfinite(value)
    if tag == "none":
        return value is None
    if tag in ("list", "wrap"):
        return isinstance(value, list) or (tag == "wrap" and isinstance(value, str))
    if tag in ("dict", "model"):
        return isinstance(value, dict)
    return tag == "any"


def _scalar(tag: str, value: Any) -> Any:
    return int(value) if tag == "jsonint" else value


def _plain(value: Any) -> Checked:
    """A value kept verbatim (an unknown key, a field of any JSON): only plain JSON that
    the model keeps and dumps unchanged."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise Undecided("a lone surrogate")
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) >= _WIDEST_INT:
                raise Undecided("a very large integer")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise Undecided("an infinite number")
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        else:
            raise Undecided(type(item).__name__)
    return _same(value)
