"""Typed access to the values of a SillyTavern settings document (`settings.json`, a
preset or template file), with errors that name the field a value came from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.errors import FormatError


def settings_document(data: Any, what: str, file: str | None) -> Mapping[str, Any]:
    """`data` if it is a JSON object; else a FormatError saying that `what` must be one."""
    if not isinstance(data, Mapping):
        raise FormatError(
            f"{what} must be a JSON object",
            file=file,
            code="must_be_json_object",
            params={"what": str(what)},
        )
    return data


class SettingsReader:
    """Typed access to settings values, with errors that name the field."""

    def __init__(self, file: str | None) -> None:
        self.file = file

    def fail(self, path: str, expected: str, value: Any) -> FormatError:
        """The error for a value at `path` that is not what was `expected`."""
        return FormatError(
            f"expected {expected}, found {type(value).__name__}",
            file=self.file,
            field=path,
            code="expected_found",
            params={"expected": str(expected), "name": str(type(value).__name__)},
        )

    def obj(self, doc: Mapping[str, Any], key: str, path: str = "") -> dict[str, Any]:
        value = doc.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path + key, "an object", value)
        return value

    def str_(self, doc: Mapping[str, Any], key: str, default: str, path: str = "") -> str:
        value = doc.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(path + key, "a string", value)
        return value

    def int_(self, doc: Mapping[str, Any], key: str, default: int, path: str = "") -> int:
        value = doc.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool):
            raise self.fail(path + key, "a number", value)
        if isinstance(value, int | float):
            return int(value)
        if isinstance(value, str):
            try:
                return int(float(value))
            except ValueError:
                pass
        raise self.fail(path + key, "a number", value)

    def bool_(self, doc: Mapping[str, Any], key: str, default: bool, path: str = "") -> bool:
        value = doc.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(path + key, "true or false", value)
        return value
