"""Reading a JSON object into a model: SillyTavern's loose values read as SillyTavern reads
them (each change a FormatWarning), then strict validation, whose failure is a FormatError
that names the field."""

from __future__ import annotations

import types
from functools import cache
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ValidationError
from pydantic_core import PydanticUndefined

from taverna.errors import FormatError, FormatWarning
from taverna.formats import shapes

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
            code="value_got",
            params={"message_name": str(message), "got": str(_json_type(got)), "more": str(more)},
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
        raise FormatError("expected a JSON object", file=file, code="expected_json_object")
    return validate(model, doc, file=file, warnings=warnings)


def write_model(document: Any, *, indent: int = 4) -> bytes:
    """A model's JSON as SillyTavern writes its files (`JSON.stringify(x, null, 4)`)."""
    from taverna.formats import json_text

    return json_text.dumps(document.to_json(), indent=indent).encode("utf-8")


# ------------------------------------------------------------------ SillyTavern's coercions


def coerce_model(
    model: type[BaseModel],
    value: Any,
    *,
    file: str | None = None,
    path: str = "",
    warnings: list[FormatWarning] | None = None,
) -> Any:
    """`value` with every field of `model` (and of the models inside) read the way
    SillyTavern reads loose JSON (formats/shapes.py); unknown keys are untouched."""
    return shapes.coerce(
        described, model_name(model), value, file=file, path=path, warnings=warnings
    )


def model_name(model: type[BaseModel]) -> str:
    """The name a model's description goes by: module and class."""
    name = f"{model.__module__}.{model.__qualname__}"
    _MODELS[name] = model
    return name


_MODELS: dict[str, type[BaseModel]] = {}


def described(name: str) -> shapes.Model:
    """The description of a model named by `model_name`."""
    return _description(_MODELS[name])


@cache
def _description(model: type[BaseModel]) -> shapes.Model:
    fields = []
    for name, info in model.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json", by_alias=True, exclude_unset=True)
        elif default is PydanticUndefined:
            default = shapes.REQUIRED
        key = info.alias or name
        annotation = _annotated(info.annotation, info.metadata)
        fields.append(shapes.Field(key, name, _shape(annotation), _type(annotation), default))
    return shapes.Model(tuple(fields), _opaque(model))


def _annotated(annotation: Any, metadata: list[Any]) -> Any:
    """A field's annotation with the validators pydantic moved into its metadata."""
    return Annotated[(annotation, *metadata)] if metadata else annotation


def _opaque(model: type[BaseModel]) -> bool:
    """Whether the model validates or dumps in ways the description does not say."""
    from taverna.model.document import STDocument

    decorators = model.__pydantic_decorators__
    own = set(decorators.model_validators) - {"_remember_key_order"}
    config = model.model_config
    return bool(
        not issubclass(model, STDocument)
        or own
        or decorators.field_validators
        or decorators.validators
        or decorators.root_validators
        or decorators.field_serializers
        or decorators.model_serializers
        or decorators.computed_fields
        or _own_post_init(model)
        or config.get("extra") != "allow"
        or config.get("strict") is not True
    )


def _own_post_init(model: type[BaseModel]) -> bool:
    """Whether the model does more after validation than set its private attributes."""
    post_init = model.model_post_init
    return post_init is not BaseModel.model_post_init and (
        getattr(post_init, "__qualname__", "") != "init_private_attributes"
    )


def _shape(annotation: Any) -> shapes.Shape:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _shape(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        args = get_args(annotation)
        present = [a for a in args if a is not type(None)]
        optional = len(present) < len(args)
        if len(present) == 1:
            inner = _shape(present[0])
            return shapes.Shape(inner.kind, optional or inner.optional, inner.model, inner.members)
        members = tuple(_shape(a) for a in present)
        if {m.kind for m in members} == {"integer", "number"}:
            return shapes.Shape("number", optional)
        return shapes.Shape("union", optional, members=members)
    simple = {str: "text", bool: "bool", int: "integer", float: "number"}
    if annotation in simple:
        return shapes.Shape(simple[annotation])
    if origin is list:
        inner = _shape(get_args(annotation)[0])
        if inner.kind == "text":
            return shapes.Shape("texts")
        if inner.kind in ("integer", "number"):
            return shapes.Shape("numbers", members=(inner,))
        if inner.kind == "model":
            return shapes.Shape("models", model=inner.model)
        return shapes.Shape("any")
    if origin is dict:
        inner = _shape(get_args(annotation)[1])
        if inner.kind == "model":
            return shapes.Shape("model_map", model=inner.model)
        return shapes.Shape("object")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return shapes.Shape("model", model=model_name(annotation))
    return shapes.Shape("any")


def _type(annotation: Any) -> shapes.Type:
    """A field's exact type for `shapes.checked` (see `shapes.Type`)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *metadata = get_args(annotation)
        if len(metadata) == 1 and isinstance(metadata[0], BeforeValidator):
            from taverna.model.character import GreetingList
            from taverna.model.document import JsonInt

            if metadata == list(get_args(GreetingList)[1:]):
                return ("wrap", _type(inner))
            if metadata == list(get_args(JsonInt)[1:]) and inner is int:
                return ("jsonint",)
        return ("opaque",)
    if origin is Union or origin is types.UnionType:
        return ("union", *(_type(arg) for arg in get_args(annotation)))
    simple = {str: "str", bool: "bool", int: "int", float: "float", type(None): "none"}
    if annotation in simple:
        return (simple[annotation],)
    if annotation is Any:
        return ("any",)
    if origin is list:
        return ("list", _type(get_args(annotation)[0]))
    if origin is dict and get_args(annotation)[0] is str:
        return ("dict", _type(get_args(annotation)[1]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return ("model", model_name(annotation))
    return ("opaque",)
