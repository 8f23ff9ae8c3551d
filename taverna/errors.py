"""The project's own exceptions: every error a person sees is one of these."""

from __future__ import annotations

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
    """The account used up its generations for the hour."""


class TooManyLogins(TavernaError):
    """Too many failed logins for an account name or from one address: wait `retry_after`
    seconds."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message, code="too_many_logins", params={"seconds": retry_after})
        self.retry_after = retry_after


class StorageFull(TavernaError):
    """The account's library would grow past its storage quota."""
