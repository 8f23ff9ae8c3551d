"""The interchange service: SillyTavern chat files imported into the store and exported back."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

from taverna.errors import FormatError, FormatWarning, NotFound
from taverna.formats.st_chat import ChatDocument, chat_as_text, read_chat
from taverna.model.chat import CharacterRef, Chat
from taverna.services.interchange.chat_export import (
    ExportedFile,
    LineMemo,
    export_stream,
    export_tree,
    main_jsonl,
)
from taverna.services.interchange.chat_files import (
    file_digest,
    fingerprint,
    group_chat_files,
    linked_files_beside,
    read_chat_file,
)
from taverna.services.interchange.chat_import import LinkedFile, build_tree
from taverna.services.interchange.st_record import chat_record
from taverna.store.repository import Store


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cycle collector while a large chat is built or written.

    A 100,000-message chat is hundreds of thousands of small objects, none of them in
    cycles; full collections over them would cost more than the work itself.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class ImportedChat:
    """What an import stored: the chat, and the files merged into it."""

    chat: Chat
    messages: int
    nodes: int
    branches: tuple[str, ...] = ()
    checkpoints: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    skipped: tuple[str, ...] = field(default_factory=tuple)
    already_imported: bool = False
    # values the files held that were read otherwise than written (formats/coercion.py)
    warnings: tuple[FormatWarning, ...] = field(default_factory=tuple)


class InterchangeService:
    """Imports SillyTavern chat files into the store and exports chats back out."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.clock = clock or (lambda: datetime.now(UTC))
        # owner -> source fingerprint -> chat id, read from the store once per service
        self._sources: dict[str, dict[str, str]] = {}

    def import_documents(
        self,
        main: ChatDocument,
        *,
        name: str,
        linked: Sequence[LinkedFile] = (),
        characters: Sequence[CharacterRef] = (),
        group_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        owner: str = "",
        title: str | None = None,
        source: str | None = None,
        again: bool = False,
    ) -> ImportedChat:
        """Store a chat document (and its checkpoint and branch files) as one tree.

        `name` is the file name the chat came from (and goes back to on export); `title`
        what a person sees (default: the name). `source` fingerprints the files: importing
        the same files again returns the chat made the first time (`already_imported`)
        unless `again` is set.
        """
        if source is not None and not again:
            existing = self.find_source(source, owner=owner)
            if existing is not None:
                return ImportedChat(
                    chat=existing,
                    messages=len(main.messages),
                    nodes=0,
                    files=(name, *(item.name for item in linked)),
                    already_imported=True,
                )
        with bulk():
            return self._import_documents(
                main,
                name=name,
                title=title,
                linked=linked,
                characters=characters,
                group_id=group_id,
                metadata=metadata,
                owner=owner,
                source=source,
            )

    def _import_documents(
        self,
        main: ChatDocument,
        *,
        name: str,
        linked: Sequence[LinkedFile],
        characters: Sequence[CharacterRef],
        group_id: str | None,
        metadata: Mapping[str, Any] | None,
        owner: str,
        title: str | None,
        source: str | None = None,
    ) -> ImportedChat:
        built = build_tree(
            main,
            name=name,
            title=title,
            keep_key_order=not self.store.url.startswith("sqlite"),
            source=source,
            linked=linked,
            characters=characters,
            group_id=group_id,
            metadata=metadata,
            owner=owner,
            now=self.clock(),
        )
        chat = self.store.import_tree(
            built.new,
            built.nodes,
            active_leaf_id=built.active_leaf_id,
            branches=built.branches,
            checkpoints=built.checkpoints,
        )
        if source is not None and owner in self._sources:
            self._sources[owner][source] = chat.id
        return ImportedChat(
            chat=chat,
            messages=built.message_count,
            nodes=len(built.nodes),
            branches=tuple(b.name for b in built.branches if b.name != "main"),
            checkpoints=tuple(c.name for c in built.checkpoints),
            files=(name, *(item.name for item in linked)),
            skipped=tuple(
                f"{name}: line {s.line}: {s.reason}"
                for doc_name, doc in ((name, main), *((i.name, i.document) for i in linked))
                for s in doc.skipped
                if doc_name
            ),
            warnings=(*main.warnings, *(w for item in linked for w in item.document.warnings)),
        )

    def import_files(
        self,
        paths: Sequence[Path],
        *,
        find_linked: bool = True,
        characters: Sequence[CharacterRef] = (),
        lenient: bool = False,
        owner: str = "",
        again: bool = False,
    ) -> list[ImportedChat]:
        """Import chat files; checkpoint and branch files merge into their main chat.

        With `find_linked`, the checkpoints and branches of a main chat lying in the same
        folder come along even when not named. Files imported before give back the chat
        they made then, unless `again` is set.
        """
        documents: dict[str, ChatDocument] = {}
        digests: dict[str, str] = {}
        seen: set[Path] = set()
        queue = list(paths)
        if find_linked:
            for path in paths:
                queue.extend(linked_files_beside(path))
        for path in queue:
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            with bulk():
                documents[path.stem], digests[path.stem] = read_chat_file(path, lenient=lenient)
        results = []
        for main_name, linked in group_chat_files(documents):
            names = [main_name, *(item.name for item in linked)]
            results.append(
                self.import_documents(
                    documents[main_name],
                    name=main_name,
                    linked=linked,
                    characters=characters,
                    owner=owner,
                    source=fingerprint({n: digests[n] for n in names}),
                    again=again,
                )
            )
        return results

    def import_data(
        self,
        data: bytes,
        file_name: str,
        *,
        characters: Sequence[CharacterRef] = (),
        owner: str = "",
        again: bool = False,
    ) -> ImportedChat:
        """Import one uploaded chat file (its branch files cannot come along this way)."""
        name = PurePath(file_name).stem or "Imported chat"
        with bulk():
            document = read_chat(data, source=file_name, flatten_chub=True)
        if document.header is None and not document.messages:
            raise FormatError("the chat file is empty", file=file_name, code="chat_file_is_empty")
        return self.import_documents(
            document,
            name=name,
            characters=characters,
            owner=owner,
            source=fingerprint({name: file_digest(data)}),
            again=again,
        )

    def find_source(self, source: str, *, owner: str = "") -> Chat | None:
        """The chat imported earlier from exactly these files, if any."""
        known = self._sources.get(owner)
        if known is None:
            known = {}
            for listing in self.store.list_chats(owner=owner):
                fingerprint = chat_record(listing.chat).get("source")
                if isinstance(fingerprint, str):
                    known[fingerprint] = listing.chat.id
            self._sources[owner] = known
        chat_id = known.get(source)
        if chat_id is None:
            return None
        try:
            return self.store.get_chat(chat_id)
        except NotFound:
            del known[source]  # deleted since
            return None

    def export_files(self, chat_id: str) -> list[ExportedFile]:
        """The SillyTavern files of a chat (main file first)."""
        with bulk():
            return export_tree(self.store.tree(chat_id))

    def export_jsonl(self, chat_id: str, memo: LineMemo | None = None) -> str:
        """The active path as one SillyTavern JSONL text (the other files are not made);
        `memo`: the lines of this chat's last export, reused where unchanged."""
        with bulk():
            return main_jsonl(self.store.tree(chat_id), memo)

    def export_text_to(self, chat_id: str, folder: Path) -> Path:
        """Write the active path as SillyTavern's plain-text export; returns its path."""
        with bulk():
            item = next(export_stream(self.store.tree(chat_id)))
            main = ExportedFile(
                item.name, ChatDocument(item.header, tuple(item.messages), layout=item.layout), True
            )
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{main.name}.txt"
        target.write_text(chat_as_text(main.document), encoding="utf-8")
        return target

    def export_to(self, chat_id: str, folder: Path) -> list[Path]:
        """Write a chat's SillyTavern files into `folder`; returns their paths."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise NotFound(
                f"cannot create the folder ({exc.strerror})",
                file=str(folder),
                code="cannot_create_folder",
                params={"strerror": str(exc.strerror)},
            ) from None
        written = []
        with bulk():
            tree = self.store.tree(chat_id)
            for item in export_stream(tree):
                target = folder / f"{item.name}.jsonl"
                tmp = target.with_suffix(".jsonl.tmp")
                # Line by line: a file never sits whole in memory.
                with tmp.open("w", encoding="utf-8", newline="") as out:
                    for piece in item.text():
                        out.write(piece)
                tmp.replace(target)
                written.append(target)
        return written
