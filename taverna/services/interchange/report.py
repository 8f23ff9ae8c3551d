"""What an import stored, what it left out and why, and which values it read otherwise
than its files wrote them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from taverna.errors import FormatWarning, TavernaError
from taverna.formats.st_chat import SkippedLine
from taverna.services.interchange import ImportedChat
from taverna.services.library.service import StoredItem as StoredItem


@dataclass(frozen=True)
class Skipped:
    """A file or folder an import left out, and why: in English (`reason`) and by a code
    with its params, for a page to say it in its language."""

    path: str
    reason: str
    code: str = ""
    params: Mapping[str, str | int] = field(default_factory=dict)

    @classmethod
    def because(cls, path: str, error: TavernaError) -> Skipped:
        """Left out because reading it failed with `error` (its code, the place it names)."""
        params = {**error.params, "file": error.file or "", "field": error.field or ""}
        return cls(path, str(error), error.code or "", params)

    @classmethod
    def line(cls, path: str, line: SkippedLine) -> Skipped:
        """A line of a chat file a lenient read left out (`why_code`: the code of why)."""
        params: dict[str, str | int] = {**line.params, "line": line.line, "why_code": line.code}
        return cls(f"{path}:{line.line}", f"line left out: {line.reason}", "line_left_out", params)


@dataclass(frozen=True)
class Progress:
    """How far an import is: `done` of `total` files, working on `current`."""

    done: int
    total: int
    current: str


@dataclass
class ImportReport:
    """What an import stored and what it skipped."""

    stored: list[StoredItem] = field(default_factory=list)
    chats: list[ImportedChat] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def extend(self, other: ImportReport) -> None:
        self.stored.extend(other.stored)
        self.chats.extend(other.chats)
        self.skipped.extend(other.skipped)

    @property
    def warnings(self) -> list[FormatWarning]:
        """Every value read otherwise than written, in the order the files were imported."""
        return [w for item in self.stored for w in item.warnings] + [
            w for chat in self.chats for w in chat.warnings
        ]
