"""Turning a model's validation failure into a FormatError that names the field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from taverna.errors import FormatError

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
    model: type[M], value: Any, *, file: str | None = None, prefix: str | None = None
) -> M:
    """`model.model_validate(value)`, with the first error reported as a FormatError."""
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


def read_model(model: type[M], data: bytes, *, file: str | None = None) -> M:
    """A JSON file holding one object of `model`'s kind."""
    from taverna.formats import json_text

    doc = json_text.loads(data, file=file)
    if not isinstance(doc, dict):
        raise FormatError("expected a JSON object", file=file)
    return validate(model, doc, file=file)


def write_model(document: Any, *, indent: int = 4) -> bytes:
    """A model's JSON as SillyTavern writes its files (`JSON.stringify(x, null, 4)`)."""
    from taverna.formats import json_text

    return json_text.dumps(document.to_json(), indent=indent).encode("utf-8")
