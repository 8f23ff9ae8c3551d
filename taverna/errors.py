"""The project's own exceptions: every error a person sees is one of these."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple


class TavernaError(Exception):
    """Base of every error taverna reports to a person.

    `code` names what happened in a stable word a page translates (with `params`, the
    values its sentence needs); the English `message` is for the API and the command line.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        field: str | None = None,
        code: str | None = None,
        params: Mapping[str, str | int] | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.field = field
        self.code = code
        self.params = dict(params or {})
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return _located(self.message, self.file, self.field)


def _located(message: str, file: str | None, field: str | None) -> str:
    where = []
    if file:
        where.append(file)
    if field:
        where.append(f"field {field!r}")
    prefix = ": ".join(where)
    return f"{prefix}: {message}" if prefix else message


class FormatError(TavernaError):
    """A file could not be read as the kind it claims to be."""


class FormatWarning(NamedTuple):
    """A value read otherwise than it is written: SillyTavern opens the file, and so do we.

    Raised never; collected by the readers and shown wherever an import or an inspection
    reports, so a person sees what was changed (`file`, `field`, what was done).
    """

    message: str
    file: str | None = None
    field: str | None = None

    @property
    def code(self) -> str:
        """What was done, by a code a page says in its language: the code the note carries
        (formats/coercion.py's Said), "" for a note with none."""
        return str(getattr(self.message, "__dict__", {}).get("code") or "")

    @property
    def params(self) -> dict[str, str | int]:
        """The values the code's sentence names."""
        return dict(getattr(self.message, "__dict__", {}).get("params") or {})

    def __str__(self) -> str:
        return _located(self.message, self.file, self.field)


class NotFound(TavernaError):
    """A requested object does not exist."""


class Conflict(TavernaError):
    """A write named a revision that is no longer current."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        field: str | None = None,
        current_revision: int | None = None,
        code: str | None = None,
        params: Mapping[str, str | int] | None = None,
    ) -> None:
        # The revision the object is at now, when known, so a caller can report it.
        self.current_revision = current_revision
        super().__init__(message, file=file, field=field, code=code or "conflict", params=params)


class StaleRevision(Conflict):
    """A write named revision `expected` but the object is at `current`: re-read and retry."""

    def __init__(self, message: str, *, current_revision: int, expected: int | None = None) -> None:
        self.expected = expected
        super().__init__(
            message, field="revision", current_revision=current_revision, code="stale_revision"
        )


class ProviderError(TavernaError):
    """A model API failed or refused a request."""


class NotLoggedIn(TavernaError):
    """The request needs an account's session and has none (or a stale one)."""


class Forbidden(TavernaError):
    """The account may not do this (an admin's task, or a request without its CSRF token)."""


class QuotaExceeded(TavernaError):
    """The account used up its requests to models for the hour (`services/connections/model_gate.py`)."""


class TooManyLogins(TavernaError):
    """Too many failed logins for an account name or from one address: wait `retry_after`
    seconds."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, code="too_many_logins", params={"seconds": retry_after})
        self.retry_after = retry_after


class StorageFull(TavernaError):
    """The account's library would grow past its storage quota."""


# What a library's exception says, by a code of its own: a page says the code's sentence
# (cause.<code> in its catalogs) in place of the library's English words. Each code with the
# params its sentence names.
CAUSES: dict[str, tuple[str, ...]] = {
    "json_syntax": ("json_line", "json_column"),
    "json_constant": (),
    "utf8_invalid_start": ("byte",),
    "utf8_invalid_continuation": ("byte",),
    "utf8_ends_early": ("byte",),
    "utf8_invalid": ("byte",),
    "unknown_encoding": ("encoding",),
    "not_zip": (),
    "truncated": (),
    "not_image": (),
    "not_png": (),
    "bad_checksum": (),
    "bad_compression": (),
    "bad_base64": (),
    "image_too_large": (),
}

_UTF8_REASONS = {
    "invalid start byte": "utf8_invalid_start",
    "invalid continuation byte": "utf8_invalid_continuation",
    "unexpected end of data": "utf8_ends_early",
}


def library_cause(exc: BaseException) -> dict[str, str]:
    """The cause code (and its values) of a JSON, zip, picture or text decoder's exception,
    for an error's params beside the raw text; {} when the exception is none of those."""
    words = str(exc)
    lower = words.lower()
    kind = type(exc).__name__
    if kind == "JSONDecodeError":
        return {
            "cause": "json_syntax",
            "json_line": str(getattr(exc, "lineno", "")),
            "json_column": str(getattr(exc, "colno", "")),
        }
    if isinstance(exc, UnicodeDecodeError):
        code = _UTF8_REASONS.get(exc.reason, "utf8_invalid")
        return {"cause": code, "byte": str(exc.start)}
    if isinstance(exc, LookupError) and lower.startswith("unknown encoding"):
        return {"cause": "unknown_encoding", "encoding": words.partition(":")[2].strip()}
    if kind == "DecompressionBombError" or "decompression bomb" in lower:
        return {"cause": "image_too_large"}
    if kind == "UnidentifiedImageError" or "cannot identify image file" in lower:
        return {"cause": "not_image"}
    if "not a png file" in lower:
        return {"cause": "not_png"}
    if kind == "BadZipFile" and "not a zip file" in lower:
        return {"cause": "not_zip"}
    if "crc" in lower or "checksum" in lower:
        return {"cause": "bad_checksum"}
    if isinstance(exc, EOFError) or "truncated" in lower or "end of data" in lower:
        return {"cause": "truncated"}
    if kind == "error" and type(exc).__module__ == "zlib":
        return {"cause": "bad_compression"}
    if kind == "Error" and type(exc).__module__ == "binascii":
        return {"cause": "bad_base64"}
    if lower.endswith("is not valid json"):
        return {"cause": "json_constant"}
    return {}


# How Python prints an object in a library's words (Pillow's "cannot identify image file
# <_io.BytesIO object at 0x7f...>"): the process's own internals, nothing a person can use.
_OBJECT_REPR = re.compile(r"\s*<[\w.]+ object at 0x[0-9a-fA-F]+>")


def raw_words(exc: BaseException) -> dict[str, str]:
    """An error's params for a library's exception: its own words (`exc`, without the
    process's object addresses) and its cause."""
    return {"exc": _OBJECT_REPR.sub("", str(exc)), **library_cause(exc)}
