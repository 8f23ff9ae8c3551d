"""Library documents: versioned JSON with an optional blob, and what a store does with them.

Characters, lorebooks, presets, personas, settings, connections and groups are all
documents of a `kind`; an edit raises the revision, which caches of parsed documents
compare before they trust themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from taverna.store.repository.unset import UNSET


@dataclass(frozen=True, slots=True)
class Document:
    """A library item: `kind` (character, lorebook, preset, persona, settings, connection,
    group, ...), a `name`, its JSON `data`, an optional `blob`, and a `revision`."""

    id: str
    kind: str
    name: str
    data: Mapping[str, Any]
    blob: bytes | None = None
    revision: int = 1
    created: datetime | None = None
    updated: datetime | None = None
    owner: str = ""


@dataclass(frozen=True, slots=True)
class DocumentVersion:
    """Which version of a document is stored; `(id, revision, updated)` names its content."""

    id: str
    kind: str
    name: str
    revision: int
    updated: datetime | None = None


class DocumentRepository(ABC):
    """Library documents."""

    @abstractmethod
    def put_document(
        self,
        kind: str,
        name: str,
        data: Mapping[str, Any],
        *,
        blob: bytes | None = UNSET,
        id: str | None = None,
        revision: int | None = None,
        owner: str = "",
    ) -> Document:
        """Create (no `id`, or an unknown `id`) or replace a document.

        Replacing needs the `revision` read; a stale one raises StaleRevision. An
        omitted `blob` keeps the stored one.
        """

    @abstractmethod
    def document_versions(
        self,
        kind: str | Sequence[str],
        *,
        owner: str = "",
        names: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[DocumentVersion]:
        """Which documents of a kind (or of several) there are (with these names, these
        ids) and their revisions, oldest first.

        Reads no data: what a cache of parsed documents checks before it trusts itself.
        """

    @abstractmethod
    def versions_of(
        self,
        *,
        owner: str,
        kinds: Sequence[str] = (),
        ids: Sequence[str] = (),
        names: Mapping[str, Sequence[str]] | None = None,
    ) -> list[DocumentVersion]:
        """In one query, the versions of every document of `kinds`, of the documents
        `ids`, and, for each kind in `names`, of its documents with those names; oldest
        first. What a turn checks of the library before it trusts what it parsed."""

    @abstractmethod
    def get_document(self, id: str) -> Document:
        """The document; NotFound if absent."""

    @abstractmethod
    def find_documents(
        self, kind: str, *, name: str | None = None, owner: str = "", with_blobs: bool = False
    ) -> list[Document]:
        """Documents of a kind (and name), oldest first; blobs only when asked for."""

    @abstractmethod
    def delete_document(self, id: str, *, revision: int) -> None:
        """Remove a document that is still at `revision`."""

    @abstractmethod
    def watch_documents(self, listener: Callable[[], None]) -> None:
        """Call `listener` after every committed write of this store object that adds,
        changes or removes documents (an account's removal too)."""
