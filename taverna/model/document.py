"""Base class of the models that mirror a SillyTavern JSON document field for field."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ModelWrapValidatorHandler,
    PrivateAttr,
    model_validator,
)


class STDocument(BaseModel):
    """A SillyTavern JSON object, typed, that writes back exactly what it read.

    - Unknown keys are kept as pydantic extras and written back verbatim.
    - Fields carry SillyTavern's own key as their alias; Python code uses snake_case names.
    - Validation is strict: a value of the wrong JSON type is an error, never silently
      coerced (SillyTavern's loose fields are typed as unions instead).
    - `to_json()` writes only the keys the document had (or that code set), so a read
      followed by a write gives the same JSON values back, keys in the source's order.
    """

    # Key order of the object this was read from; cosmetic, but it lets an untouched
    # file come back byte for byte.
    _key_order: tuple[str, ...] = PrivateAttr(default=())

    # `defer_build`: a model's validator is built when it is first used, so a command
    # that reads one kind of file does not pay for the schemas of all the others.
    model_config = ConfigDict(
        defer_build=True,
        extra="allow",
        strict=True,
        frozen=True,
        serialize_by_alias=True,
        validate_by_alias=True,
        validate_by_name=True,
    )

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        model = handler(data)
        if isinstance(data, dict):
            model._key_order = tuple(key for key in data if isinstance(key, str))
        return model

    @classmethod
    def from_json(cls, data: Any) -> Self:
        """Validate a parsed JSON value (raises pydantic's ValidationError).

        Keys are matched by SillyTavern's names only: a foreign key that happens to equal a
        Python field name (`script_name`) stays an unknown key instead of filling the field.
        """
        return cls.model_validate(data, by_alias=True, by_name=False)

    def to_json(self) -> dict[str, Any]:
        """The document as plain JSON values under SillyTavern's keys."""
        dumped = self.model_dump(mode="python", by_alias=True, exclude_unset=True)
        return _in_source_order(self, dumped)

    @property
    def extras(self) -> dict[str, Any]:
        """Keys this model does not know, kept verbatim."""
        return dict(self.__pydantic_extra__ or {})


def _in_source_order(model: STDocument, dumped: dict[str, Any]) -> dict[str, Any]:
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        if key not in dumped:
            continue
        value = getattr(model, name)
        if isinstance(value, STDocument) and isinstance(dumped[key], dict):
            dumped[key] = _in_source_order(value, dumped[key])
        elif isinstance(value, list) and isinstance(dumped[key], list):
            dumped[key] = [
                _in_source_order(item, out)
                if isinstance(item, STDocument) and isinstance(out, dict)
                else out
                for item, out in zip(value, dumped[key], strict=False)
            ]
    order = model._key_order
    if not order:
        return dumped
    ordered = {key: dumped[key] for key in order if key in dumped}
    ordered.update((key, value) for key, value in dumped.items() if key not in ordered)
    return ordered


def _integral_float_to_int(value: Any) -> Any:
    # JavaScript has one number type: `8192.0` in a file is the integer 8192 to SillyTavern.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


JsonInt = Annotated[int, BeforeValidator(_integral_float_to_int)]
"""An integer field that also accepts an integral JSON float (`4096.0`)."""

Number = int | float
"""A JSON number that keeps the type it was read with (1 stays 1, 0.5 stays 0.5)."""
