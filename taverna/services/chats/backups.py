"""Chat backups: SillyTavern JSONL copies of a chat's active path in the data folder.

After a write, a chat is backed up at once unless it was backed up less than `interval`
seconds ago; then it is marked pending and `flush()` writes it once the interval has
passed, so the newest state is never left without a backup for long. With `deferred`
(a server, whose `BackupFlusher` flushes every second) only a chat's first write in the
process is backed up at once: later writes are left pending, and a chat's changes within
`interval` seconds of the first of them are written together by the flusher, once (a
turn's message and its reply in one backup, none of it on the thread that wrote them).
With `background` (a server) a write only records that its chat changed, and the flusher
writes every backup, a chat's first too (a chat just made excepted: it costs nothing), so
a turn does no backup work at all. A plain chat's backup extends its last one from the
change log (`backup_increment`) instead of exporting the whole tree again; each backup's
file time is its chat's last change, so a backup the database is ahead of (a crash before
the flusher came) is found and written again when the flusher starts (`catch_up`).
The newest `keep` backups of each chat are kept: a backup prunes from the names of its
chat's backups that this process last saw (the folder, which holds every chat's, is listed
again after `keep` more backups of the chat, so another process's are pruned too), deleting
an old one only once `keep` newer ones are seen to be there. File names are safe for any title:
`chat_<title>_<chat key>_<YYYYMMDD-HHMMSS>.jsonl`, with a hash of the title added where
the title is not ASCII, so titles in any script stay apart.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import sys
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from taverna.errors import NotFound, TavernaError
from taverna.formats.st_chat import read_chat
from taverna.services.chats.backup_increment import WrittenBackup, extended, written_backup
from taverna.services.chats.backup_lag import chats_behind, stamp_change
from taverna.services.interchange import (
    ImportedChat,
    InterchangeService,
    LineMemo,
    bulk,
    main_jsonl,
)
from taverna.store.repository import Store

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 10.0  # formats-chat.md §8: chatBackupThrottleInterval
DEFAULT_KEEP = 50  # formats-chat.md §8: numberOfBackups
# The lines of the chats backed up last, kept to be reused by their next backups: at most
# about this many characters in all (a short chat's lines are a few kilobytes).
MEMO_CHARACTERS = 8_000_000
# A chat at most at this revision was just made (its row, then its greetings) or imported:
# backed up at once, at the cost of a message or two, so it has a backup from the start.
MADE_REVISIONS = 2
# From this many messages on its path a plain chat's backup extends its last one (see
# `backup_increment`); a shorter one's full export costs less than the reads that takes.
EXTEND_FROM = 200
_NAME = re.compile(
    r"^chat_(?P<title>[a-z0-9_]*)_(?P<key>[0-9a-f]{8})_(?P<stamp>\d{8}-\d{6})(?:-(?P<n>\d+))?\.jsonl$"
)


def chat_key(chat_id: str) -> str:
    """Eight hex digits that name a chat in backup file names."""
    return hashlib.sha256(chat_id.encode("utf-8")).hexdigest()[:8]


def title_slug(title: str, *, limit: int = 60) -> str:
    """The title as `[a-z0-9_]`, with a hash of it where it is not ASCII."""
    folded = unicodedata.normalize("NFKD", title)
    ascii_part = folded.encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_part).strip("_")[:limit].strip("_")
    if not title.isascii() or not slug:
        digest = hashlib.sha256(title.encode("utf-8")).hexdigest()[:8]
        slug = f"{slug}_{digest}" if slug else digest
    return slug


@dataclass(frozen=True)
class Backup:
    """One backup file."""

    path: Path
    title: str
    key: str
    created: datetime
    size: int

    @property
    def name(self) -> str:
        return self.path.name


@dataclass
class _SeenBackups:
    """The names of one chat's backups as this process last saw them, and how many it
    wrote since it last listed the folder."""

    names: set[str]
    written: int = 0


def _key_of_name(name: str) -> str | None:
    """The chat key in a backup's file name (None: not a backup's name)."""
    match = _NAME.match(name)
    return match["key"] if match is not None else None


def _age(name: str) -> tuple[str, int]:
    """A backup name's place in time: its stamp, then its number within the second."""
    match = _NAME.match(name)
    if match is None:
        return ("", 0)
    return (match["stamp"], int(match["n"] or 1))


class BackupService:
    """Writes, lists, prunes and restores chat backups in one folder."""

    def __init__(
        self,
        store: Store,
        folder: Path,
        *,
        interval: float = DEFAULT_INTERVAL,
        keep: int = DEFAULT_KEEP,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        separate_above: int | None = None,
        deferred: bool = False,
        background: bool = False,
        extend_from: int = EXTEND_FROM,
    ) -> None:
        """`separate_above`: chats with at least this many messages on their path are
        backed up by a process of their own (`backup_process`), so a server neither holds
        a long chat's whole tree in memory nor waits for its export. `deferred`: writes
        after a chat's first are backed up by `flush()` only; `background`: all changes
        are (see the module's doc)."""
        self.separate_above = separate_above
        self.background = background
        self.extend_from = extend_from
        self.deferred = deferred or background
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self.store = store
        self.folder = folder
        self.interval = interval
        self.keep = keep
        self.clock = clock
        self.now = now
        self.interchange = InterchangeService(store)
        self._last: dict[str, float] = {}
        self._pending: set[str] = set()
        self._since: dict[str, float] = {}  # deferred: a pending chat -> its first change
        self._lock = threading.Lock()
        self._memos: OrderedDict[str, tuple[LineMemo, int]] = OrderedDict()  # with sizes
        self._written: dict[str, WrittenBackup] = {}  # a plain chat -> its last backup
        self._seen: dict[str, _SeenBackups] = {}  # a chat -> its backups' names, as last seen
        self._seen_lock = threading.Lock()

    # ------------------------------------------------------------- writing

    def after_write(self, chat_id: str, revision: int | None = None) -> Path | None:
        """Call after a chat changed (to `revision`, when known): backs it up now, or marks
        it pending if it was just done (`deferred`: if it was ever done in this process;
        `background`: unless the chat was just made, at its first revisions)."""
        with self._lock:
            now = self.clock()
            last = self._last.get(chat_id)
            recorded = self.background and (revision is None or revision > MADE_REVISIONS)
            if recorded or (last is not None and (self.deferred or now - last < self.interval)):
                if self.deferred and last is not None:
                    self._since.setdefault(chat_id, now)
                self._pending.add(chat_id)
                return None
            self._last[chat_id] = now
            self._pending.discard(chat_id)
            self._since.pop(chat_id, None)
        return self._write(chat_id)

    def flush(self, *, force: bool = False) -> list[Path]:
        """Write the pending backups whose interval has passed (all of them with `force`):
        since the chat's last backup, or (`deferred`) since the first change pending."""
        due: list[str] = []
        with self._lock:
            now = self.clock()
            for chat_id in sorted(self._pending):
                if self.deferred:
                    start = self._since.get(chat_id, self._last.get(chat_id, float("-inf")))
                else:
                    start = self._last.get(chat_id, float("-inf"))
                if force or now - start >= self.interval:
                    due.append(chat_id)
                    self._pending.discard(chat_id)
                    self._since.pop(chat_id, None)
                    self._last[chat_id] = now
        written = []
        for chat_id in due:
            try:
                path = self._write(chat_id)
            except NotFound:
                continue  # the chat was deleted meanwhile
            except (OSError, TavernaError) as exc:
                # A full disk, the database away: the change stays pending, tried again
                # after the interval (on shutdown, reported, not retried for ever).
                log.warning("could not back up chat %s: %s", chat_id, exc)
                if not force:
                    with self._lock:
                        self._pending.add(chat_id)
                        if self.deferred:
                            self._since.setdefault(chat_id, self.clock())
                continue
            if path is not None:
                written.append(path)
        if force:
            self.wait_for_children()
        else:
            self._reap()
        return written

    def wait_for_children(self, timeout: float = 120.0) -> None:
        """Wait for the backups being written by processes of their own."""
        with self._lock:
            children = list(self._children.values())
            self._children.clear()
        for child in children:
            try:
                child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.warning("a chat backup took over %s s; it goes on without us", timeout)

    def _reap(self) -> None:
        with self._lock:
            for chat_id, child in list(self._children.items()):
                if child.poll() is not None:
                    del self._children[chat_id]
                    if child.returncode:
                        log.warning(
                            "the backup of chat %s failed (exit %s)", chat_id, child.returncode
                        )

    def _write(self, chat_id: str) -> Path | None:
        """Back a chat up here, or (a long chat) in a process of its own: then None."""
        url = getattr(self.store, "url", None)
        if self.separate_above is None or not isinstance(url, str):
            return self.backup(chat_id)
        chat = self.store.get_chat(chat_id)
        leaf = chat.active_leaf_id
        if leaf is None or self.store.get_node(chat_id, leaf).depth + 1 < self.separate_above:
            return self.backup(chat_id)
        self._reap()
        with self._lock:
            if chat_id in self._children:
                # One backup of a chat at a time: this change is written after it.
                self._pending.add(chat_id)
                if self.deferred:
                    self._since.setdefault(chat_id, self.clock())
                return None
            command = [
                sys.executable,
                "-m",
                "taverna.services.chats.backup_process",
                url,
                str(self.folder),
                chat_id,
                "--keep",
                str(self.keep),
            ]
            schema = getattr(self.store, "schema", None)
            if isinstance(schema, str):
                command += ["--schema", schema]
            self._children[chat_id] = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            )
        return None

    @property
    def pending(self) -> frozenset[str]:
        return frozenset(self._pending)

    def backup(self, chat_id: str) -> Path:
        """Write a backup of a chat now (no throttling) and prune its oldest ones."""
        with self._lock:  # a chat written on two threads at once: the second starts afresh
            memo, _ = self._memos.pop(chat_id, (LineMemo(), 0))
            last = self._written.pop(chat_id, None)
        made = None
        if last is not None:
            with self.store.reading():  # its dozen small reads in one transaction
                made = extended(self.store, last)
        record: WrittenBackup | None
        if made is not None:
            text, record = made
            chat = record.chat
        else:
            with bulk():
                tree = self.store.tree(chat_id)
                text = main_jsonl(tree, memo)
            chat, record = tree.chat, written_backup(tree, text, shortest=self.extend_from)
        self._keep_memo(chat_id, memo, record)
        if not self.folder.is_dir():
            # A chat's words, like the database's: the owner's alone.
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.folder, 0o700)
        stamp = self.now().astimezone(UTC).strftime("%Y%m%d-%H%M%S")
        base = f"chat_{title_slug(chat.title)}_{chat_key(chat_id)}_{stamp}"
        target = self.folder / f"{base}.jsonl"
        n = 2
        while target.exists():
            target = self.folder / f"{base}-{n}.jsonl"
            n += 1
        tmp = self.folder / f".{target.name}.tmp"
        descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            stamp_change(tmp, chat)  # the file's time is the change it holds (see `catch_up`)
            tmp.replace(target)
        except BaseException:
            # a full disk: no half-written (or empty) backup is left behind
            tmp.unlink(missing_ok=True)
            raise
        self._prune_after(chat_id, target.name)
        return target

    def _keep_memo(self, chat_id: str, memo: LineMemo, written: WrittenBackup | None) -> None:
        """Keep a chat's lines for its next backup, forgetting the chats backed up longest
        ago beyond MEMO_CHARACTERS."""
        size = memo.size + (written.size if written is not None else 0)
        with self._lock:
            self._memos[chat_id] = (memo, size)
            if written is not None:
                self._written[chat_id] = written
            total = sum(kept for _, kept in self._memos.values())
            while total > MEMO_CHARACTERS and self._memos:
                dropped_id, (_, dropped) = self._memos.popitem(last=False)
                self._written.pop(dropped_id, None)
                total -= dropped

    def catch_up(self) -> list[str]:
        """Mark pending, due now, each chat whose newest backup is older than its last
        change (the process that wrote the change ended before its backup was written)."""
        behind = chats_behind(
            self.store, self.folder, key_of_name=_key_of_name, key_of_chat=chat_key
        )
        with self._lock:
            self._pending.update(behind)
            for chat_id in behind:
                self._since.pop(chat_id, None)
                self._last.pop(chat_id, None)
        return behind

    def prune(self, chat_id: str) -> list[Path]:
        """Delete all but the newest `keep` backups of a chat."""
        removed = []
        for old in self.backups(chat_id)[self.keep :]:
            old.path.unlink(missing_ok=True)
            removed.append(old.path)
        return removed

    def _prune_after(self, chat_id: str, written: str) -> list[Path]:
        """`prune` after writing `written`, without listing the folder each time.

        The names seen are those of the last listing plus the backups written here since;
        the folder is listed again after `keep` backups (another process's are then seen).
        An old backup is deleted only once `keep` newer ones of the names seen are found
        to be there, so however stale the names, no backup among the newest `keep` in the
        folder is deleted; a name gone meanwhile (pruned elsewhere) is forgotten.
        """
        with self._seen_lock:
            seen = self._seen.get(chat_id)
            if seen is None or seen.written >= self.keep:
                seen = _SeenBackups({b.name for b in self.backups(chat_id)})
                self._seen[chat_id] = seen
            seen.names.add(written)
            seen.written += 1
            if len(seen.names) <= self.keep:
                return []
            kept: set[str] = set()
            removed = []
            for name in sorted(seen.names, key=_age, reverse=True):
                path = self.folder / name
                if len(kept) < self.keep:
                    if path.exists():
                        kept.add(name)
                    continue
                path.unlink(missing_ok=True)
                removed.append(path)
            seen.names = kept
            return removed

    # ------------------------------------------------------------- reading

    def backups(self, chat_id: str | None = None) -> list[Backup]:
        """Backups, newest first; only those of one chat when `chat_id` is given."""
        if not self.folder.is_dir():
            return []
        key = chat_key(chat_id) if chat_id else None
        # A chat's own are picked by a substring test before any pattern runs: every
        # backup written lists the folder, which holds every chat's.
        marker = f"_{key}_" if key is not None else ""
        found = []
        with os.scandir(self.folder) as entries:
            names = [entry.name for entry in entries if marker in entry.name]
        for name in names:
            match = _NAME.match(name)
            if match is None or (key is not None and match["key"] != key):
                continue
            path = self.folder / name
            created = datetime.strptime(match["stamp"], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue  # pruned meanwhile by another server process sharing the folder
            found.append(
                (
                    created,
                    int(match["n"] or 1),
                    Backup(path, match["title"], match["key"], created, size),
                )
            )
        found.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [item[2] for item in found]

    def find(self, name: str) -> Backup:
        """A backup by its file name (or a unique prefix of it)."""
        backups = self.backups()
        exact = [b for b in backups if b.name == name or b.path.stem == name]
        matches = exact or [b for b in backups if b.name.startswith(name)]
        if len(matches) != 1:
            what = "no backup" if not matches else f"{len(matches)} backups"
            raise NotFound(
                f"{what} named {name!r}",
                file=str(self.folder),
                code="what_named",
                params={"what": str(what), "name": str(name)},
            )
        return matches[0]

    def restore(self, name: str, *, title: str | None = None, owner: str = "") -> ImportedChat:
        """Bring a backup back as a new chat (the chat it came from is left as it is)."""
        backup = self.find(name)
        document = read_chat(backup.path.read_bytes(), source=str(backup.path))
        stamp = backup.created.strftime("%Y-%m-%d %H:%M:%S")
        if title is None:
            original = self._title_for(backup.key)
            title = f"{original or backup.title} (backup {stamp})"
        return self.interchange.import_documents(document, name=title, owner=owner)

    def _title_for(self, key: str) -> str | None:
        for listing in self.store.list_chats():
            if chat_key(listing.chat.id) == key:
                return listing.chat.title
        return None


class BackupFlusher:
    """Writes pending backups in the background, so the last change of a burst is saved too.

    A server starts one next to its BackupService and stops it on shutdown (which writes
    whatever is still pending).
    """

    def __init__(self, backups: BackupService, *, every: float = 1.0) -> None:
        self.backups = backups
        self.every = every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="taverna-backups", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.backups.catch_up()
        except Exception:  # the chats changed from now on are backed up all the same
            log.exception("finding the chat backups behind the database failed")
        while not self._stop.wait(self.every):
            try:
                self.backups.flush()
            except Exception:  # the thread goes on: what is pending is written later
                log.exception("writing the pending chat backups failed")

    def stop(self) -> list[Path]:
        """Stop the thread and write what is still pending."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        return self.backups.flush(force=True)
