"""Temporary folders in the data folder's own `tmp/`, removed after use or, when the process
that made one was killed, by the next process that opens the data folder.

Each folder `tmp/<name>` has a lock file `tmp/<name>.lock` that its process holds locked
(`flock`) while it lives; the lock goes with the process however it ends, so a folder
whose lock can be taken is a leftover. The lock file is made and locked before the folder,
and the folder removed before the lock file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from pathlib import Path

from taverna.model.chat import new_id

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: leftovers go by age alone
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

TMP_FOLDER = "tmp"
LOCK = ".lock"
# Without file locks, a folder is taken for a leftover once it is this old (seconds).
UNLOCKED_AGE = 24 * 3600


class ScratchFolder:
    """A temporary folder under the data folder's `tmp/`; `remove()` when done."""

    def __init__(self, data_dir: Path, prefix: str) -> None:
        area = Path(data_dir) / TMP_FOLDER
        area.mkdir(parents=True, exist_ok=True)
        while True:
            name = f"{prefix}-{new_id()}"
            lock_path = area / f"{name}{LOCK}"
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            if _try_lock(fd) and _same_file(fd, lock_path):
                break
            os.close(fd)  # a cleaner took it between the creation and the lock: another name
        self._lock_fd: int | None = fd
        self._lock_path = lock_path
        self.path = area / name
        self.path.mkdir(mode=0o700)

    def remove(self) -> None:
        """Remove the folder and everything in it, then its lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self._lock_path.unlink()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def clean_leftovers(data_dir: Path) -> list[str]:
    """Remove the temporary folders whose process is gone; returns their names."""
    area = Path(data_dir) / TMP_FOLDER
    if not area.is_dir():
        return []
    removed = []
    for entry in sorted(area.iterdir()):
        if entry.name.endswith(LOCK):
            folder = entry.with_name(entry.name[: -len(LOCK)])
            if _release_if_free(entry, folder):
                removed.append(folder.name)
        elif not (area / f"{entry.name}{LOCK}").exists() and _orphaned(entry):
            _remove(entry)
            removed.append(entry.name)
    if removed:
        log.info("removed %d temporary folder(s) left by a stopped process", len(removed))
    return removed


def _release_if_free(lock_path: Path, folder: Path) -> bool:
    try:
        fd = os.open(lock_path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        if fcntl is None:
            if time.time() - os.fstat(fd).st_mtime < UNLOCKED_AGE:
                return False
        elif not _try_lock(fd):
            return False  # its process is alive
        _remove(folder)
        with contextlib.suppress(FileNotFoundError):
            lock_path.unlink()
        return True
    finally:
        os.close(fd)


def _orphaned(entry: Path) -> bool:
    """A folder without a lock file: made before locks, or left when its lock was removed."""
    if fcntl is not None:
        return True
    try:
        return time.time() - entry.stat().st_mtime >= UNLOCKED_AGE
    except FileNotFoundError:
        return False


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()


def _try_lock(fd: int) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the file `fd` has open (a cleaner may have removed it)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
