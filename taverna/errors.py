"""The project's own exceptions: every error a person sees is one of these."""

from __future__ import annotations


class TavernaError(Exception):
    """Base of every error taverna reports to a person."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None) -> None:
        self.message = message
        self.file = file
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.field:
            where.append(f"field {self.field!r}")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class FormatError(TavernaError):
    """A file could not be read as the kind it claims to be."""


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
    ) -> None:
        # The revision the object is at now, when known, so a caller can report it.
        self.current_revision = current_revision
        super().__init__(message, file=file, field=field)


class StaleRevision(Conflict):
    """A write named revision `expected` but the object is at `current`: re-read and retry."""

    def __init__(self, message: str, *, current_revision: int, expected: int | None = None) -> None:
        self.expected = expected
        super().__init__(message, field="revision", current_revision=current_revision)


class ProviderError(TavernaError):
    """A model API failed or refused a request."""
