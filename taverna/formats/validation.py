"""Reading a JSON object into a model: SillyTavern's loose values read as SillyTavern reads
them (each change a FormatWarning), then strict validation, whose failure is a FormatError
that names the field."""

from __future__ import annotations

import copy
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined

from taverna.errors import FormatError, FormatWarning
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

M = TypeVar("M", bound=BaseModel)


def field_path(loc: tuple[int | str, ...], prefix: str | None = None) -> str:
    """`("data", "tags", 2)` as `data.tags[2]`."""
    text = prefix or ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text = f"{text}.{part}" if text else str(part)
    return text


def validate(
    model: type[M],
    value: Any,
    *,
    file: str | None = None,
    prefix: str | None = None,
    warnings: list[FormatWarning] | None = None,
    loose: bool = True,
) -> M:
    """`model.model_validate(value)` after SillyTavern's coercions (see `coerce_model`),
    with the first error reported as a FormatError. Each coercion is appended to
    `warnings` (pass None only for documents stored after they were read this way).

    `loose=False` reads no value loosely: for edits, which send each field in its type.
    """
    if loose:
        value = coerce_model(model, value, file=file, path=prefix or "", warnings=warnings)
    try:
        return model.model_validate(value, by_alias=True, by_name=False)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        # union errors repeat the location per member type ("data.x.str"): keep the field part
        loc = tuple(part for part in first["loc"] if not _is_type_tag(part))
        same = [e for e in errors if tuple(p for p in e["loc"] if not _is_type_tag(p)) == loc]
        expected = [_EXPECTED.get(e["type"]) for e in same]
        if len(same) > 1 and all(expected):
            message = "should be " + " or ".join(dict.fromkeys(str(x) for x in expected))
        else:
            message = first["msg"]
        got = type(first.get("input")).__name__ if "input" in first else "nothing"
        count = len(errors) - len(same) + 1
        more = f" (and {count - 1} more problems)" if count > 1 else ""
        raise FormatError(
            f"{message}, got {_json_type(got)}{more}",
            file=file,
            field=field_path(loc, prefix) or prefix,
        ) from None


_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "none_required": "null",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
}

_TYPE_TAGS = {"str", "int", "float", "bool", "list[str]", "dict[str,any]", "none"}


def _is_type_tag(part: int | str) -> bool:
    if not isinstance(part, str):
        return False
    lowered = part.replace(" ", "").lower()
    return (
        lowered in _TYPE_TAGS
        or lowered.startswith(("function-before[", "function-after[", "list[", "dict["))
        or (lowered.endswith("]") and "[" in lowered)
    )


def _json_type(python_name: str) -> str:
    return {
        "str": "a string",
        "int": "a number",
        "float": "a number",
        "bool": "a boolean",
        "list": "an array",
        "dict": "an object",
        "NoneType": "null",
    }.get(python_name, python_name)


def read_model(
    model: type[M],
    data: bytes,
    *,
    file: str | None = None,
    warnings: list[FormatWarning] | None = None,
) -> M:
    """A JSON file holding one object of `model`'s kind."""
    from taverna.formats import json_text

    doc = json_text.loads(data, file=file)
    if not isinstance(doc, dict):
        raise FormatError("expected a JSON object", file=file)
    return validate(model, doc, file=file, warnings=warnings)


def write_model(document: Any, *, indent: int = 4) -> bytes:
    """A model's JSON as SillyTavern writes its files (`JSON.stringify(x, null, 4)`)."""
    from taverna.formats import json_text

    return json_text.dumps(document.to_json(), indent=indent).encode("utf-8")


# ------------------------------------------------------------------ SillyTavern's coercions


@dataclass(frozen=True)
class _Shape:
    """What JSON a model field holds, as far as the coercions care."""

    kind: str  # text number integer bool texts numbers object model models model_map union any
    optional: bool = False
    model: type[BaseModel] | None = None
    members: tuple[_Shape, ...] = ()


def _shape(annotation: Any) -> _Shape:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _shape(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        args = get_args(annotation)
        present = [a for a in args if a is not type(None)]
        optional = len(present) < len(args)
        if len(present) == 1:
            inner = _shape(present[0])
            return _Shape(inner.kind, optional or inner.optional, inner.model, inner.members)
        members = tuple(_shape(a) for a in present)
        if {m.kind for m in members} == {"integer", "number"}:
            return _Shape("number", optional)
        return _Shape("union", optional, members=members)
    simple = {str: "text", bool: "bool", int: "integer", float: "number"}
    if annotation in simple:
        return _Shape(simple[annotation])
    if origin is list:
        inner = _shape(get_args(annotation)[0])
        if inner.kind == "text":
            return _Shape("texts")
        if inner.kind in ("integer", "number"):
            return _Shape("numbers", members=(inner,))
        if inner.kind == "model":
            return _Shape("models", model=inner.model)
        return _Shape("any")
    if origin is dict:
        inner = _shape(get_args(annotation)[1])
        if inner.kind == "model":
            return _Shape("model_map", model=inner.model)
        return _Shape("object")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _Shape("model", model=annotation)
    return _Shape("any")


@dataclass(frozen=True)
class _Field:
    key: str
    shape: _Shape
    default: Any  # JSON value a null becomes; PydanticUndefined: the type's empty value


@cache
def _fields(model: type[BaseModel]) -> tuple[_Field, ...]:
    out = []
    for name, info in model.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json", by_alias=True, exclude_unset=True)
        out.append(_Field(info.alias or name, _shape(info.annotation), default))
    return tuple(out)


_EMPTY = {"text": "", "number": 0, "integer": 0, "bool": False, "texts": [], "numbers": []}


def coerce_model(
    model: type[BaseModel],
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
    for spec in _fields(model):
        if spec.key not in value:
            continue
        item = value[spec.key]
        where = f"{path}.{spec.key}" if path else spec.key
        new = _coerce(spec.shape, spec.default, item, file, where, warnings)
        if new is not item:
            if out is value:
                out = dict(value)
            out[spec.key] = new
    return out


def _note(warnings: list[FormatWarning] | None, file: str | None, where: str, note: str) -> None:
    if warnings is not None:
        warnings.append(FormatWarning(note, file=file, field=where))


def _coerce(
    shape: _Shape,
    default: Any,
    value: Any,
    file: str | None,
    where: str,
    warnings: list[FormatWarning] | None,
) -> Any:
    if value is None and shape.optional:
        return value
    if default is PydanticUndefined:
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
        read = coerce_model(shape.model, read, file=file, path=where, warnings=warnings)
    elif kind == "models" and isinstance(read, list):
        assert shape.model is not None
        model = shape.model
        items = [
            coerce_model(model, item, file=file, path=f"{where}[{i}]", warnings=warnings)
            for i, item in enumerate(read)
        ]
        if any(new is not old for new, old in zip(items, read, strict=True)):
            read = items
    elif kind == "model_map" and isinstance(read, dict):
        assert shape.model is not None
        model = shape.model
        entries = {
            key: coerce_model(model, item, file=file, path=f"{where}.{key}", warnings=warnings)
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


def _fits(shape: _Shape, value: Any) -> bool:
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


def _union(shape: _Shape, default: Any, value: Any) -> tuple[Any, str | None]:
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
    raise Unfit(f"no member of the field's type takes {show(value)}")
