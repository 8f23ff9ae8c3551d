"""Which chats' backups the database is ahead of.

A backup file's time is the time of the chat's change it holds (`stamp_change`). A chat changed
later than its newest backup's time has a change no backup holds: its process ended before
writing one (a crash, a kill). `chats_behind` finds them so they are backed up again; the
database has all it takes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from taverna.model.chat import Chat
from taverna.store.repository import Store


def stamp_change(path: Path, chat: Chat) -> None:
    """Give a backup file of `chat` the time of the chat's change it holds."""
    if chat.updated is not None:
        changed = _nanoseconds(chat.updated)
        os.utime(path, ns=(changed, changed))


def chats_behind(
    store: Store,
    folder: Path,
    *,
    key_of_name: Callable[[str], str | None],
    key_of_chat: Callable[[str], str],
) -> list[str]:
    """The chats, of every account, changed later than their newest backup in `folder`
    (a chat with no backup there is left alone: it was never backed up)."""
    newest: dict[str, int] = {}
    if folder.is_dir():
        with os.scandir(folder) as entries:
            for entry in entries:
                key = key_of_name(entry.name)
                if key is None:
                    continue
                with contextlib.suppress(FileNotFoundError):  # pruned meanwhile
                    newest[key] = max(entry.stat().st_mtime_ns, newest.get(key, 0))
    behind = []
    for owner in ["", *(account.id for account in store.accounts())]:
        for listing in store.list_chats(owner=owner):
            chat = listing.chat
            kept = newest.get(key_of_chat(chat.id))
            if kept is not None and chat.updated and kept < _nanoseconds(chat.updated):
                behind.append(chat.id)
    return behind


def _nanoseconds(moment: datetime) -> int:
    """A time as whole nanoseconds since the epoch (exact for microseconds)."""
    delta = moment - datetime(1970, 1, 1, tzinfo=moment.tzinfo or UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
