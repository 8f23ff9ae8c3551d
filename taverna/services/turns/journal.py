"""The reply journal: finished text the database could not take, kept on local disk
until it can.

A reply that finished streaming while the database was away (restarting, its disk full)
is written here, one JSON line, flushed and fsync'd, before its generation says it is
done; a process moves it into the database when the database answers again (at start,
every few seconds, and when a page asks for the chat's drafts). Nothing a page was told
has finished is lost between the two.

Each process appends to a file of its own in the journal folder, `<id>.jsonl`, and holds
an exclusive lock on it for its life. Any process replays its own file and every file
whose lock it can take (a process that died or was stopped releases its lock), so the
replies of a dead process are moved by the next one to look; a file whose entries are
all moved is emptied (its own) or removed (another's).

A line is an entry (`{"id", "op": "reply" | "draft", ...}`) or the mark that one was
moved (`{"id", "moved": true}`): the mark is appended once the database has committed.
Space for the file is reserved when it is made, so a full disk still takes an entry.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Bytes reserved for a process's journal when it is made (beyond its end: the file stays
# empty), so entries still fit once the disk is full.
RESERVED = 4 * 1024 * 1024
_FALLOC_FL_KEEP_SIZE = 1


class Unsettled(Exception):
    """An entry could not be moved now (the database is still away): try again later."""


def _reserve(descriptor: int, size: int) -> None:
    """Reserve `size` bytes of disk for the file without growing it (Linux fallocate)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(name, use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
        if libc.fallocate(descriptor, _FALLOC_FL_KEEP_SIZE, 0, size) != 0:
            logger.info("journal space not reserved: %s", os.strerror(ctypes.get_errno()))


def _entries(path: Path) -> list[dict[str, Any]]:
    """The entries of a journal file not yet moved, oldest first (a torn last line, from a
    process killed while it wrote, is skipped)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    found: dict[str, dict[str, Any]] = {}
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            continue
        if record.get("moved"):
            found.pop(record["id"], None)
        else:
            found[record["id"]] = record
    return list(found.values())


class ReplyJournal:
    """The journal folder of one process (see the module doc)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.name = uuid.uuid4().hex
        self._lock = threading.Lock()
        self._descriptor: int | None = None
        self._pending = 0  # this process's entries not yet moved
        self._looked = 0.0

    @property
    def path(self) -> Path:
        return self.folder / f"{self.name}.jsonl"

    def _own(self) -> int:
        """This process's file, made and locked on first use."""
        if self._descriptor is None:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            # made under another name, locked, then named: another process never takes
            # (nor removes) a file whose owner has not locked it yet
            making = self.folder / f".{self.name}.new"
            descriptor = os.open(making, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            _reserve(descriptor, RESERVED)
            os.replace(making, self.path)
            self._descriptor = descriptor
        return self._descriptor

    def prepare(self) -> None:
        """Make this process's file now, its space reserved, while the disk has room (a
        server does at start)."""
        with self._lock:
            self._own()

    def _append(self, descriptor: int, record: Mapping[str, Any]) -> None:
        # a value JSON lacks (a date in a chat's variables, say) is kept as its text
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
        line += "\n"
        data = line.encode("utf-8")
        while data:
            written = os.write(descriptor, data)
            data = data[written:]
        os.fsync(descriptor)

    def write(self, op: str, fields: Mapping[str, Any]) -> str:
        """Keep an entry (`op`: "reply" or "draft") on disk; its id."""
        entry_id = uuid.uuid4().hex
        with self._lock:
            self._append(self._own(), {**fields, "id": entry_id, "op": op})
            self._pending += 1
        return entry_id

    def pending(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        """The entries of every process not yet moved (of one chat), oldest first."""
        if not self.folder.is_dir():
            return []
        found: list[dict[str, Any]] = []
        for path in sorted(self.folder.glob("*.jsonl")):
            found += [e for e in _entries(path) if chat_id is None or e.get("chat_id") == chat_id]
        return found

    def has_pending(self) -> bool:
        """Whether anything may wait to be moved: this process's entries, or a file of
        another (looked for at most once a second)."""
        if self._pending:
            return True
        now = time.monotonic()
        if now - self._looked < 1.0:
            return False
        self._looked = now
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                if entry.name.endswith(".jsonl") and entry.name != self.path.name:
                    return True
        return False

    def replay(self, move: Callable[[dict[str, Any]], None]) -> tuple[int, int]:
        """Move what waits into the database with `move` (it raises `Unsettled` to leave an
        entry for later); how many were moved and how many wait still."""
        moved = waiting = 0
        if not self.folder.is_dir():
            return 0, 0
        for path in sorted(self.folder.glob("*.jsonl")):
            if path.name == self.path.name and not self._pending:
                continue  # its own, and nothing of it waits
            with self._held(path) as descriptor:
                if descriptor is None:
                    continue  # a live process's own: it moves them itself
                done, left = self._replay_file(path, descriptor, move)
                moved, waiting = moved + done, waiting + left
        return moved, waiting

    @contextlib.contextmanager
    def _held(self, path: Path) -> Iterator[int | None]:
        """The file's descriptor with its lock held (None: another process holds it)."""
        if path.name == self.path.name:
            with self._lock:
                yield self._own()
            return
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            yield None
            return
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                yield None
                return
            yield descriptor
        finally:
            os.close(descriptor)

    def _replay_file(
        self, path: Path, descriptor: int, move: Callable[[dict[str, Any]], None]
    ) -> tuple[int, int]:
        own = path.name == self.path.name
        if not own:
            with path.open("rb") as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell():
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":
                        os.write(descriptor, b"\n")  # a line torn by a kill ends here
        entries = _entries(path)
        moved = 0
        for entry in entries:
            try:
                move(entry)
            except Unsettled as exc:
                logger.info("journal entry %s waits: %s", entry["id"], exc)
                break  # the database is still away: the rest wait too, in order
            self._append(descriptor, {"id": entry["id"], "moved": True})
            moved += 1
        left = len(entries) - moved
        if own:
            self._pending = left
            if not left:
                os.ftruncate(descriptor, 0)  # emptied (which frees what was reserved)
                _reserve(descriptor, RESERVED)
        elif not left:
            path.unlink(missing_ok=True)
        if moved:
            logger.warning("moved %d journalled replies into the database", moved)
        return moved, left

    def close(self) -> None:
        with self._lock:
            if self._descriptor is not None:
                os.close(self._descriptor)  # the lock goes with it
                self._descriptor = None
                if not self._pending:
                    self.path.unlink(missing_ok=True)
