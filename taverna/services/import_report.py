"""What an import stored, what it left out and why, and which values it read otherwise
than its files wrote them."""

from __future__ import annotations

from dataclasses import dataclass, field

from taverna.errors import FormatWarning
from taverna.services.interchange import ImportedChat


@dataclass(frozen=True)
class StoredItem:
    """One thing an import put in the library, and the values of its file that were read
    otherwise than written (SillyTavern's loose values, formats/coercion.py)."""

    kind: str
    id: str
    name: str
    replaced: bool = False
    file: str = ""
    warnings: tuple[FormatWarning, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A file or folder an import left out, and why."""

    path: str
    reason: str


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
