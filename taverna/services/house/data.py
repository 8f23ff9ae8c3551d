"""The data folder: where it is, and opening its store (one place for the CLI and the server).

The folder holds the SQLite database (unless `TAVERNA_DATABASE_URL` names a PostgreSQL
database) and the chat backups.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from taverna.services.accounts.service import AccountService
from taverna.store.repository import Store

DATA_ENV = "TAVERNA_DATA"
DATABASE_URL_ENV = "TAVERNA_DATABASE_URL"
BACKUPS_FOLDER = "backups"


def default_data_dir() -> Path:
    """`$TAVERNA_DATA`, else the user's data directory for taverna."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("taverna", appauthor=False))


def resolve_data_dir(data: Path | str | None = None) -> Path:
    """The data folder a command was given, else the default one."""
    return Path(data).expanduser() if data else default_data_dir()


@dataclass
class DataFolder:
    """An opened data folder: its path and its store (close it when done)."""

    path: Path
    store: Store

    @property
    def backups_dir(self) -> Path:
        return self.path / BACKUPS_FOLDER

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> DataFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_data(data: Path | str | None = None, *, database_url: str | None = None) -> DataFolder:
    """Open the data folder's store (created and migrated on first use).

    The store is SQLite inside the folder unless `database_url` (or `$TAVERNA_DATABASE_URL`)
    names another database, such as PostgreSQL for a server deployment.
    """
    from taverna.store.sql import open_store

    path = resolve_data_dir(data)
    if not path.is_dir():
        # It will hold every chat (and, on SQLite, the database): the owner's alone.
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path, 0o700)
    url = database_url or os.environ.get(DATABASE_URL_ENV)
    return DataFolder(path=path, store=open_store(url or path))


@contextmanager
def opened_accounts(data: Path | None) -> Iterator[AccountService]:
    """The accounts of a data folder (for the command line), closed after."""
    folder = open_data(resolve_data_dir(data))
    try:
        yield AccountService(folder.store)
    finally:
        folder.close()
