"""`UNSET`: the value of an argument that was not given."""

from __future__ import annotations

from typing import Any


class _Unset:
    """Marks an argument that was not given (None is a meaningful value for some fields)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
