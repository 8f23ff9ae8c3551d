"""Accounts, their sessions, quotas and failed logins, on a server that runs with accounts."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Account:
    """A person who logs in to a server that runs with accounts; `id` is the `owner` of
    their rows. Quotas of None are no limit."""

    id: str
    name: str
    password_hash: str
    admin: bool = False
    quota_bytes: int | None = None
    quota_generations: int | None = None
    created: datetime | None = None
    # A disabled account keeps its data but may not log in (its sessions end).
    disabled: bool = False


@dataclass(frozen=True, slots=True)
class AccountRemoval:
    """What went with a removed account: its chats and its library documents (pictures,
    connections and drafts among them)."""

    chats: int
    documents: int


class AccountRepository(ABC):
    """Accounts and what goes with them: sessions, generation counts, failed logins."""

    @abstractmethod
    def add_account(self, name: str, password_hash: str, *, admin: bool = False) -> Account:
        """A new account; Conflict if the name is taken."""

    @abstractmethod
    def accounts(self) -> list[Account]:
        """Every account, by name."""

    @abstractmethod
    def account(self, *, id: str | None = None, name: str | None = None) -> Account:
        """The account with that id or name; NotFound if none."""

    @abstractmethod
    def update_account(self, id: str, **values: Any) -> Account:
        """Change an account's password hash, admin flag, quotas or disabled flag (a new
        password, or disabling it, ends its sessions)."""

    @abstractmethod
    def delete_account(self, id: str) -> AccountRemoval:
        """Remove an account and everything it owns: its chats go from every read at once
        (their rows are removed in the background), its library documents, pictures and
        connections at once, its sessions and counts too."""

    @abstractmethod
    def add_session(self, token_hash: str, user_id: str, csrf: str, expires: datetime) -> None:
        """Keep a login session under the hash of its token."""

    @abstractmethod
    def session(self, token_hash: str) -> tuple[Account, str, datetime] | None:
        """The account, CSRF token and end of the session with that token hash; None if none."""

    @abstractmethod
    def end_session(self, token_hash: str) -> None:
        """Forget a session (log out)."""

    @abstractmethod
    def count_generation(self, user_id: str, since: datetime, limit: int | None) -> int:
        """How many generations `user_id` started since `since`; records one more unless
        that count reached `limit`."""

    @abstractmethod
    def generations_since(self, user_id: str, since: datetime) -> int:
        """How many generations `user_id` started since `since` (nothing recorded)."""

    @abstractmethod
    def stored_bytes(self, owner: str) -> int:
        """The size of what an account holds: library documents, pictures, drafts, chats
        and their messages."""

    @abstractmethod
    def login_failures(self, subjects: Sequence[str], since: datetime) -> dict[str, list[datetime]]:
        """The times of the failed logins of each subject since `since`, oldest first (rows
        older than `since` go)."""

    @abstractmethod
    def login_failures_from(self, prefix: str, since: datetime) -> dict[str, list[datetime]]:
        """The times of the failed logins since `since` of every subject that starts with
        `prefix` (`address:`), oldest first."""

    @abstractmethod
    def add_login_failure(self, subjects: Sequence[str]) -> None:
        """Record a failed login under each subject, now."""

    @abstractmethod
    def clear_login_failures(self, subject: str) -> None:
        """Forget a subject's failed logins (after it logged in, or an admin unlocked it)."""
