"""Importing SillyTavern's files into a library: one file of any kind, a folder of files, a
whole user data folder (characters, chats, group chats, worlds, presets, settings.json) or a
zip of one. Each item goes into the library (`LibraryService`); chats go through the chat
import (`InterchangeService`); `settings.json` and the personas it names through
`settings_import`. What was stored and what was left out, and why, is the `ImportReport`.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any, BinaryIO

from taverna.errors import FormatError, FormatWarning, NotFound, TavernaError, raw_words
from taverna.formats import json_text
from taverna.formats.detect import FileKind, detect
from taverna.formats.st_chat import ChatDocument, read_chat
from taverna.formats.world_info import world_info_from_json
from taverna.model.chat import CharacterRef
from taverna.services.connections.service import ConnectionService
from taverna.services.interchange import (
    ImportedChat,
    InterchangeService,
    file_digest,
    fingerprint,
    group_chat_files,
    read_chat_file,
)
from taverna.services.interchange.looks_import import (
    LOOKS_FOLDERS,
    choose_settings_background,
    import_backgrounds,
    import_sprites,
    import_themes,
    looks_files,
    sprite_packs,
)
from taverna.services.interchange.report import ImportReport, Progress, Skipped, StoredItem
from taverna.services.interchange.settings_import import import_personas, import_settings
from taverna.services.library.service import LibraryKind, LibraryService

# The folders of a SillyTavern user data folder and the kind of file each holds.
_PRESET_FOLDERS: tuple[tuple[str, LibraryKind], ...] = (
    ("worlds", LibraryKind.LOREBOOK),
    ("OpenAI Settings", LibraryKind.CHAT_COMPLETION_PRESET),
    ("TextGen Settings", LibraryKind.TEXT_COMPLETION_PRESET),
    ("instruct", LibraryKind.INSTRUCT_TEMPLATE),
    ("context", LibraryKind.CONTEXT_TEMPLATE),
    ("sysprompt", LibraryKind.SYSTEM_PROMPT),
    ("QuickReplies", LibraryKind.QUICK_REPLY_SET),
    ("reasoning", LibraryKind.REASONING_TEMPLATE),
)
_KNOWN_FOLDERS = {
    "characters",
    "chats",
    "groups",
    "group chats",
    "User Avatars",
    *LOOKS_FOLDERS,
    *(name for name, _ in _PRESET_FOLDERS),
}
_CARD_SUFFIXES = {".png", ".json", ".charx"}
# Limits for an uploaded data-folder zip: enough for years of chats, not a zip bomb.
MAX_ZIP_ENTRIES = 200_000
MAX_ZIP_BYTES = 8 * 1024 * 1024 * 1024
ProgressCallback = Callable[[Progress], None]


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FormatError(
            f"cannot read ({exc.strerror})",
            file=str(path),
            code="cannot_read",
            params={"strerror": str(exc.strerror)},
        ) from None


def is_user_data_folder(folder: Path) -> bool:
    """A SillyTavern user data folder (`data/<user>/`): has characters/, chats/ or worlds/."""
    return folder.is_dir() and any(
        (folder / name).is_dir() for name in ("characters", "chats", "worlds", "OpenAI Settings")
    )


def _group_chat_metadata(group: Mapping[str, Any], chat_id: str) -> Mapping[str, Any] | None:
    """formats-chat.md §6.1: the current chat's metadata, else the group's past metadata."""
    if group.get("chat_id") == chat_id and isinstance(group.get("chat_metadata"), dict):
        return dict(group["chat_metadata"])
    past = group.get("past_metadata")
    if isinstance(past, dict) and isinstance(past.get(chat_id), dict):
        return dict(past[chat_id])
    return None


def _data_root(root: Path) -> Path:
    """The user data folder inside an unpacked zip (it may sit a level or two down)."""
    queue = [root]
    for _ in range(3):
        found = [p for p in queue if is_user_data_folder(p)]
        if found:
            return found[0]
        queue = [c for p in queue for c in sorted(p.iterdir()) if c.is_dir()]
    return root


def _member_ref(member: Any, cards: Mapping[str, StoredItem]) -> CharacterRef:
    stem = PurePath(str(member)).stem
    card = cards.get(stem)
    return CharacterRef(card.name, card.id) if card else CharacterRef(stem)


def _card_of(cards: Mapping[str, StoredItem], avatar: str) -> str | None:
    """The stored character of a card file of the folder, by its file name."""
    item = cards.get(Path(avatar).stem)
    return item.id if item is not None else None


def _files(folder: Path, suffixes: Iterable[str]) -> list[Path]:
    if not folder.is_dir():
        return []
    wanted = {s.lower() for s in suffixes}
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in wanted)


class LibraryImport:
    """Imports SillyTavern files and data folders into one account's library and chats."""

    def __init__(
        self, library: LibraryService, connections: ConnectionService | None = None
    ) -> None:
        """`connections`: the account's, for the connections and profiles a `settings.json`
        brings (None: those are left out)."""
        self.library = library
        self.owner = library.owner
        self.chats = InterchangeService(library.store)
        self.connections = connections

    def import_path(
        self, path: Path, *, progress: ProgressCallback | None = None, lenient: bool = False
    ) -> ImportReport:
        """Import a file of any kind taverna reads, or a folder (a SillyTavern data folder or
        a folder of such files)."""
        if path.is_dir():
            if is_user_data_folder(path):
                return self.import_user_data(path, progress=progress)
            report = ImportReport()
            # a card's sprite pack beside it (`Alice.png`, `Alice/joy.png`) is no card
            packs = sprite_packs(path)
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and not set(packs) & set(p.parents)
            )
            for index, file in enumerate(files):
                if progress:
                    progress(Progress(index, len(files), str(file)))
                report.extend(self._import_file_reporting(file, lenient=True))
            cards = {Path(s.file).stem: s for s in report.stored if s.kind == "character"}
            report.extend(import_sprites(self.library, path, cards, packs=packs))
            return report
        if not path.exists():
            raise NotFound("no such file", file=str(path), code="no_such_file")
        return self.import_file(path, lenient=lenient)

    def import_paths(
        self,
        paths: Sequence[Path],
        *,
        progress: ProgressCallback | None = None,
        strict: bool = False,
        again: bool = False,
    ) -> ImportReport:
        """Import several files; chats given together merge with their branch files.

        A file that cannot be read is listed in `skipped` and the others go on; with
        `strict`, the first such file raises its error instead.
        """
        report = ImportReport()
        chat_files: list[Path] = []
        for path in paths:
            if path.is_file() and path.suffix.lower() == ".jsonl":
                try:
                    read_chat_file(path)
                except TavernaError as exc:
                    if strict:
                        raise
                    report.skipped.append(Skipped.because(str(path), exc))
                    continue
                chat_files.append(path)
                continue
            try:
                report.extend(self.import_path(path, progress=progress))
            except TavernaError as exc:
                if strict:
                    raise
                report.skipped.append(Skipped.because(str(path), exc))
        if chat_files:
            report.chats.extend(self.chats.import_files(chat_files, owner=self.owner, again=again))
        return report

    def _import_file_reporting(self, path: Path, *, lenient: bool) -> ImportReport:
        try:
            return self.import_file(path, lenient=lenient)
        except TavernaError as exc:
            return ImportReport(skipped=[Skipped.because(str(path), exc)])

    def import_file(self, path: Path, *, lenient: bool = False) -> ImportReport:
        """Import one file after detecting its kind; a chat brings its branch files along."""
        if path.suffix.lower() == ".zip":
            with path.open("rb") as handle:
                return self.import_zip(handle, file=str(path))
        data = _read_bytes(path)
        kind = detect(data, path.name)
        if kind is FileKind.CHAT:
            chats = self.chats.import_files([path], lenient=lenient, owner=self.owner)
            return ImportReport(chats=chats)
        avatars = path.parent / "User Avatars"
        if kind is FileKind.PERSONAS:
            return import_personas(self.library, data, file=str(path), avatars=avatars)
        if kind is FileKind.SETTINGS:
            return import_settings(
                self.library, data, file=str(path), avatars=avatars, connections=self.connections
            )
        return ImportReport(stored=[self.library.import_bytes(data, path.name, file=str(path))])

    def import_chat(
        self, data: bytes, file_name: str, *, character_id: str | None = None
    ) -> ImportedChat:
        """Store one uploaded SillyTavern chat file as a chat with `character_id`; without
        one, with the character of the name the file gives. A file naming no character of
        the library is refused (code `chat_needs_character`, the name it gives in
        `params`), so the person can choose one or create it; nothing is stored then."""
        if character_id is None:
            document = read_chat(data, source=file_name, flatten_chub=True)
            wanted = (document.header.character_name if document.header else None) or ""
            found = self.library.find(LibraryKind.CHARACTER, wanted) if wanted else None
            if found is None:
                raise TavernaError(
                    f"no character named {wanted!r}: choose the character this chat belongs to"
                    if wanted
                    else "the file names no character: choose the one this chat belongs to",
                    file=file_name,
                    field="character_id",
                    code="chat_needs_character",
                    params={"name": wanted},
                )
            character_id = found.id
        character = self.library.get(LibraryKind.CHARACTER, character_id)
        return self.chats.import_data(
            data,
            file_name,
            characters=(CharacterRef(character.name, character.id),),
            owner=self.owner,
        )

    def import_zip(
        self,
        archive: bytes | BinaryIO,
        *,
        file: str = "upload.zip",
        progress: ProgressCallback | None = None,
    ) -> ImportReport:
        """Import a zip of a SillyTavern user data folder (or of loose files).

        The zip is unpacked into a temporary folder first; entries that would land outside
        it, and archives past the size limits, are refused.
        """
        source = io.BytesIO(archive) if isinstance(archive, bytes) else archive
        try:
            bundle = zipfile.ZipFile(source)
        except (zipfile.BadZipFile, OSError) as exc:
            raise FormatError(
                f"not a zip file ({exc})", file=file, code="not_zip_file", params=raw_words(exc)
            ) from None
        with bundle, tempfile.TemporaryDirectory(prefix="taverna-import-") as temp:
            root = Path(temp).resolve()
            entries = bundle.infolist()
            if len(entries) > MAX_ZIP_ENTRIES:
                raise FormatError(
                    f"more than {MAX_ZIP_ENTRIES} files in the zip",
                    file=file,
                    code="more_than_files_in_zip",
                    params={"max_zip_entries": str(MAX_ZIP_ENTRIES)},
                )
            if sum(e.file_size for e in entries) > MAX_ZIP_BYTES:
                raise FormatError(
                    "the zip unpacks to more than 8 GiB", file=file, code="zip_unpacks_to_more_than"
                )
            for entry in entries:
                target = (root / entry.filename).resolve()
                if not target.is_relative_to(root):
                    raise FormatError(
                        f"entry {entry.filename!r} points outside the zip",
                        file=file,
                        code="entry_points_outside_zip",
                        params={"filename": str(entry.filename)},
                    )
                if entry.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with bundle.open(entry) as member, target.open("wb") as sink:
                    shutil.copyfileobj(member, sink)
            folder = _data_root(root)
            return self.import_path(folder, progress=progress)

    def import_user_data(
        self, folder: Path, *, progress: ProgressCallback | None = None
    ) -> ImportReport:
        """Import a SillyTavern user data folder (`data/<user>/`).

        Characters with their chats (branch and checkpoint files merged), groups with their
        chats, lorebooks, presets, templates, quick replies, and settings.json (its
        personas, templates, regex scripts, lorebook selection, variables and power-user
        settings, `settings_import.py`). Files that cannot be read are skipped and listed with the reason;
        the rest goes on.
        """
        report = ImportReport()
        plan = self._plan(folder)
        total = len(plan)
        done = 0

        def step(current: Path) -> None:
            nonlocal done
            if progress:
                progress(Progress(done, total, str(current.relative_to(folder))))
            done += 1

        for name, kind in _PRESET_FOLDERS:
            for path in _files(folder / name, (".json",)):
                step(path)
                report.extend(self._import_kind_reporting(path, kind))

        card_ids: dict[str, StoredItem] = {}
        for path in _files(folder / "characters", _CARD_SUFFIXES):
            step(path)
            try:
                item = self.library.import_bytes(_read_bytes(path), path.name, file=str(path))
            except TavernaError as exc:
                report.skipped.append(Skipped.because(str(path), exc))
                continue
            card_ids[path.stem] = item
            report.stored.append(item)
        for path in looks_files(folder):
            step(path)
        report.extend(import_sprites(self.library, folder / "characters", card_ids))
        report.extend(import_backgrounds(self.library, folder / "backgrounds"))
        report.extend(import_themes(self.library, folder / "themes"))

        chats_root = folder / "chats"
        if chats_root.is_dir():
            for chat_folder in sorted(p for p in chats_root.iterdir() if p.is_dir()):
                files = _files(chat_folder, (".jsonl",))
                for path in files:
                    step(path)
                card = card_ids.get(chat_folder.name)
                refs = (CharacterRef(card.name, card.id),) if card else ()
                if card is None and files:
                    report.skipped.append(
                        Skipped(
                            str(chat_folder),
                            "no character card of this name; chats imported without one",
                            "chats_without_card",
                        )
                    )
                report.extend(self._import_chat_folder(files, refs))

        report.extend(self._import_groups(folder, card_ids, step))

        settings = folder / "settings.json"
        if settings.is_file():
            step(settings)
            try:
                data = _read_bytes(settings)
                avatars = folder / "User Avatars"
                report.extend(
                    import_settings(
                        self.library,
                        data,
                        file=str(settings),
                        avatars=avatars,
                        connections=self.connections,
                        find_card=lambda avatar: _card_of(card_ids, avatar),
                    )
                )
                choose_settings_background(self.library, settings)
            except TavernaError as exc:
                report.skipped.append(Skipped.because(str(settings), exc))

        for entry in sorted(folder.iterdir()):
            if entry.is_dir() and entry.name not in _KNOWN_FOLDERS:
                report.skipped.append(
                    Skipped(str(entry), "not something taverna imports", "not_imported")
                )
        if progress:
            progress(Progress(total, total, ""))
        return report

    def _plan(self, folder: Path) -> list[Path]:
        files: list[Path] = []
        for name, _ in _PRESET_FOLDERS:
            files += _files(folder / name, (".json",))
        files += _files(folder / "characters", _CARD_SUFFIXES)
        files += looks_files(folder)
        chats_root = folder / "chats"
        if chats_root.is_dir():
            for chat_folder in sorted(p for p in chats_root.iterdir() if p.is_dir()):
                files += _files(chat_folder, (".jsonl",))
        files += _files(folder / "groups", (".json",))
        files += _files(folder / "group chats", (".jsonl",))
        if (folder / "settings.json").is_file():
            files.append(folder / "settings.json")
        return files

    def _import_kind_reporting(self, path: Path, kind: LibraryKind) -> ImportReport:
        try:
            data = _read_bytes(path)
            if kind is LibraryKind.LOREBOOK:
                found: list[FormatWarning] = []
                book = world_info_from_json(
                    json_text.loads(data, file=str(path)),
                    name=path.stem,
                    file=str(path),
                    warnings=found,
                )
                item = self.library.put_lorebook(book, file=str(path))
                return ImportReport(stored=[dataclasses.replace(item, warnings=tuple(found))])
            item = self.library.import_bytes(data, path.name, file=str(path))
            if item.kind != kind.value:
                # The folder says what it is; the content disagrees: trust neither silently.
                return ImportReport(
                    stored=[item],
                    skipped=[
                        Skipped(
                            str(path),
                            f"found in a {kind.value} folder but read as {item.kind}",
                            "read_as_other_kind",
                            {"folder_kind": kind.value, "kind": item.kind},
                        )
                    ],
                )
            return ImportReport(stored=[item])
        except TavernaError as exc:
            return ImportReport(skipped=[Skipped.because(str(path), exc)])

    def _import_chat_folder(
        self, files: Sequence[Path], refs: tuple[CharacterRef, ...]
    ) -> ImportReport:
        report = ImportReport()
        documents: dict[str, ChatDocument] = {}
        digests: dict[str, str] = {}
        for path in files:
            try:
                data = _read_bytes(path)
                if not data.strip():
                    report.skipped.append(Skipped(str(path), "empty chat file", "empty_chat"))
                    continue
                document = read_chat(data, source=str(path), lenient=True, flatten_chub=True)
            except TavernaError as exc:
                report.skipped.append(Skipped.because(str(path), exc))
                continue
            for line in document.skipped:
                report.skipped.append(Skipped.line(str(path), line))
            documents[path.stem] = document
            digests[path.stem] = file_digest(data)
        for main, linked in group_chat_files(documents):
            names = [main, *(item.name for item in linked)]
            try:
                report.chats.append(
                    self.chats.import_documents(
                        documents[main],
                        name=main,
                        linked=linked,
                        characters=refs,
                        owner=self.owner,
                        source=fingerprint({n: digests[n] for n in names}),
                    )
                )
            except TavernaError as exc:
                report.skipped.append(Skipped.because(main, exc))
        return report

    def _import_groups(
        self, folder: Path, card_ids: Mapping[str, StoredItem], step: Callable[[Path], None]
    ) -> ImportReport:
        report = ImportReport()
        chats_folder = folder / "group chats"
        claimed: set[str] = set()
        for path in _files(folder / "groups", (".json",)):
            step(path)
            try:
                group = json_text.loads(_read_bytes(path), file=str(path))
                if not isinstance(group, dict):
                    raise FormatError(
                        "expected a JSON object", file=str(path), code="expected_json_object"
                    )
                name = str(group.get("name") or path.stem)
                item = self.library.put(LibraryKind.GROUP, name, group, file=str(path))
            except TavernaError as exc:
                report.skipped.append(Skipped.because(str(path), exc))
                continue
            report.stored.append(item)
            refs = tuple(_member_ref(m, card_ids) for m in group.get("members") or [])
            paths: list[Path] = []
            for chat_id in [str(c) for c in group.get("chats") or []]:
                chat_path = chats_folder / f"{chat_id}.jsonl"
                if not chat_path.is_file():
                    report.skipped.append(
                        Skipped(
                            str(chat_path), "listed by the group, not found", "group_chat_missing"
                        )
                    )
                    continue
                claimed.add(chat_path.name)
                step(chat_path)
                paths.append(chat_path)
            report.extend(self._import_group_chats(paths, group, refs, item.id))
        for chat_path in _files(chats_folder, (".jsonl",)):
            if chat_path.name in claimed:
                continue
            step(chat_path)
            report.extend(self._import_group_chats([chat_path], None, (), None))
        return report

    def _import_group_chats(
        self,
        paths: Sequence[Path],
        group: Mapping[str, Any] | None,
        refs: tuple[CharacterRef, ...],
        group_doc: str | None,
    ) -> ImportReport:
        """A group's chats; its checkpoints and branches merge into their main chats."""
        report = ImportReport()
        documents: dict[str, ChatDocument] = {}
        digests: dict[str, str] = {}
        metadata: dict[str, Mapping[str, Any]] = {}
        for path in paths:
            chat_id = path.stem
            try:
                data = _read_bytes(path)
                document = read_chat(data, source=str(path), lenient=True, flatten_chub=True)
            except TavernaError as exc:
                report.skipped.append(Skipped.because(str(path), exc))
                continue
            report.skipped += [Skipped.line(str(path), s) for s in document.skipped]
            documents[chat_id] = document
            digests[chat_id] = file_digest(data)
            if group is not None and document.header is None:
                found = _group_chat_metadata(group, chat_id)
                if found is not None:
                    metadata[chat_id] = found
        group_name = str(group.get("name") or "") if group is not None else ""
        for main, linked in group_chat_files(documents, metadata):
            document = documents[main]
            members = refs
            if not members:
                names = dict.fromkeys(m.name for m in document.messages if not m.is_user and m.name)
                members = tuple(CharacterRef(n) for n in names if n != "SillyTavern System")
            names_in = [main, *(item.name for item in linked)]
            try:
                report.chats.append(
                    self.chats.import_documents(
                        document,
                        name=main,
                        title=f"{group_name} - {main}" if group_name else main,
                        linked=linked,
                        characters=members,
                        group_id=group_doc,
                        metadata=metadata.get(main),
                        owner=self.owner,
                        source=fingerprint({n: digests[n] for n in names_in}),
                    )
                )
            except TavernaError as exc:
                report.skipped.append(Skipped.because(main, exc))
        return report


__all__ = [
    "LibraryImport",
    "ProgressCallback",
    "is_user_data_folder",
]
