"""SillyTavern chat files on disk: read with their digests, grouped into chats with their links.

A checkpoint or branch file names its main chat in `chat_metadata.main_chat`; the files of
one chat are imported together as one tree, fingerprinted by their bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from taverna.errors import FormatError
from taverna.formats.st_chat import ChatDocument, read_chat
from taverna.services.interchange.chat_import import LinkedFile


def read_chat_file(path: Path, *, lenient: bool = False) -> tuple[ChatDocument, str]:
    """A chat file read as a document, with the digest of its bytes; empty files refused."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(
            f"cannot read ({exc.strerror})",
            file=str(path),
            code="cannot_read",
            params={"strerror": str(exc.strerror)},
        ) from None
    document = read_chat(data, source=str(path), lenient=lenient, flatten_chub=True)
    if document.header is None and not document.messages and not document.skipped:
        # formats-chat.md §2: SillyTavern leaves empty chat files out as well.
        raise FormatError("the chat file is empty", file=str(path), code="chat_file_is_empty")
    return document, file_digest(data)


def file_digest(data: bytes) -> str:
    """The SHA-256 of a file's bytes, hex."""
    return hashlib.sha256(data).hexdigest()


def fingerprint(digests: Mapping[str, str]) -> str:
    """One digest for a chat and its linked files (name -> file digest), in any order."""
    joined = "\n".join(f"{name}\t{digests[name]}" for name in sorted(digests))
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def group_chat_files(
    documents: Mapping[str, ChatDocument],
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[tuple[str, list[LinkedFile]]]:
    """Which files are main chats and which are their checkpoints or branches.

    A file whose `main_chat` names another file of the set joins it (formats-chat.md §11);
    the main file's `bookmark_link`/`branches` links tell checkpoints from branches, else the
    `Branch #` name SillyTavern gives branches. `metadata` gives the `chat_metadata` of
    files that do not hold their own (group chats), by name.
    """
    names = set(documents)
    given = metadata or {}
    links: dict[str, str] = {}
    for name, doc in documents.items():
        own = given.get(name)
        main_value = own.get("main_chat") if own is not None else doc.main_chat
        main = main_value if isinstance(main_value, str) else None
        if main is None and name.startswith("Checkpoint #"):
            # formats-chat.md §7: old checkpoints name their main chat before "Checkpoint #".
            main = name.split("Checkpoint #", 1)[0].strip(" -") or None
        if main and main in names and main != name:
            links[name] = main

    def root(name: str) -> str:
        seen = set()
        while name in links and name not in seen:
            seen.add(name)
            name = links[name]
        return name

    groups: dict[str, list[LinkedFile]] = {}
    for name in documents:
        if name not in links:
            groups.setdefault(name, [])
    for name in sorted(links, key=lambda n: len(documents[n].messages)):
        main = root(name)
        groups.setdefault(main, [])
        bookmarks = {str(m.extra.get("bookmark_link")) for m in documents[main].messages}
        branch_names: set[str] = set()
        for message in documents[main].messages:
            listed = message.extra.get("branches")
            if isinstance(listed, list):
                branch_names.update(str(b) for b in listed)
        if name in bookmarks:
            checkpoint = True
        elif name in branch_names:
            checkpoint = False
        else:
            checkpoint = not name.startswith("Branch #")
        groups[main].append(LinkedFile(name, documents[name], checkpoint, given.get(name)))
    return list(groups.items())


def linked_files_beside(path: Path) -> list[Path]:
    """Chat files in the same folder whose `main_chat` (transitively) is this chat."""
    stem = path.stem
    found: list[Path] = []
    wanted = {stem}
    candidates = sorted(p for p in path.parent.glob("*.jsonl") if p != path)
    mains: dict[Path, str | None] = {}
    for candidate in candidates:
        mains[candidate] = _main_chat_of(candidate)
    changed = True
    while changed:
        changed = False
        for candidate, main in mains.items():
            if candidate not in found and main in wanted:
                found.append(candidate)
                wanted.add(candidate.stem)
                changed = True
    return found


def _main_chat_of(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
    except OSError:
        return None
    try:
        doc = read_chat(first, source=str(path))
    except FormatError:
        return None
    main = doc.main_chat
    if main is None and path.stem.startswith("Checkpoint #") and doc.header is not None:
        return path.stem.split("Checkpoint #", 1)[0].strip(" -") or None
    return main
