"""Accounts of a server shared by several people: passwords, login sessions, quotas.

Passwords are hashed with Argon2id (argon2-cffi). A session is a random token in an
HttpOnly cookie; the store keeps only its SHA-256, with a second random token the page
sends back in a header on every write (CSRF: another site's page can make the browser
send the cookie, but cannot read the token).
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from taverna.errors import (
    Conflict,
    NotLoggedIn,
    StorageFull,
    TavernaError,
    TooManyLogins,
)
from taverna.services.connections.model_gate import ModelGate
from taverna.store.repository import Account, AccountRemoval, Store

SESSION_DAYS = 30
MAX_NAME = 64
MIN_PASSWORD = 8
_HASHER = PasswordHasher()
# Counting what an account stores reads every one of its messages (a tenth of a second
# at 10,000, most of a second at 100,000): it is counted at most this often (seconds), a
# write admitted between counts adds the size it declared, and a delete or a new quota
# has it counted afresh.
USAGE_TTL = 60.0


@dataclass(frozen=True, slots=True)
class LoginLimits:
    """How many failed logins an account name, and a client address, may have in `window`
    before further tries are refused until the oldest of them is `window` old. An address
    gets more: several people may log in from behind one router."""

    per_name: int = 5
    per_address: int = 20
    window: timedelta = timedelta(minutes=15)


@dataclass(frozen=True, slots=True)
class Session:
    """A logged-in request's account and the CSRF token its writes must carry."""

    account: Account
    csrf: str


@dataclass(frozen=True, slots=True)
class AccountStatus:
    """An account as its admin's page shows it: what it stores, the generations it started
    in the last hour, and how long its name is still locked out of logging in (0: not)."""

    account: Account
    stored_bytes: int
    generations_last_hour: int
    locked_seconds: int


@dataclass(frozen=True, slots=True)
class AddressLockout:
    """A client address with failed logins in the window: how many, and the seconds it is
    still locked out of logging in (0: not, yet)."""

    address: str
    failures: int
    locked_seconds: int


ADDRESS = "address:"


def address_subject(address: str) -> str:
    """The login limit's subject for a client address."""
    return f"{ADDRESS}{address}"


def name_subject(name: str) -> str:
    """The login limit's subject for an account name (as typed at the login form)."""
    return f"name:{name.strip().casefold()}"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_name(name: str) -> str:
    name = name.strip()
    if (
        not name
        or len(name) > MAX_NAME
        or any(c in name for c in "/\\\x00")
        or name != name.strip()
    ):
        raise TavernaError(
            f"an account name is 1 to {MAX_NAME} characters, without slashes",
            field="name",
            code="account_name_invalid",
            params={"max_name": str(MAX_NAME)},
        )
    return name


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise TavernaError(
            f"a password has at least {MIN_PASSWORD} characters",
            field="password",
            code="password_too_short",
            params={"min_password": str(MIN_PASSWORD)},
        )
    return password


class AccountService:
    """Users, their sessions and their quotas, over the store."""

    def __init__(
        self, store: Store, *, limits: LoginLimits | None = None, usage_ttl: float = USAGE_TTL
    ) -> None:
        self.store = store
        self.limits = limits or LoginLimits()
        self.usage_ttl = usage_ttl
        # account id -> (when counted, bytes then plus the writes admitted since)
        self._usage: dict[str, tuple[float, int]] = {}
        self._usage_lock = threading.Lock()

    # ------------------------------------------------------------------ users

    def add(self, name: str, password: str, *, admin: bool = False) -> Account:
        return self.store.add_account(
            check_name(name), _HASHER.hash(check_password(password)), admin=admin
        )

    def users(self) -> list[Account]:
        return self.store.accounts()

    def get(self, name: str) -> Account:
        return self.store.account(name=name)

    def any(self) -> bool:
        return bool(self.store.accounts())

    def set_password(self, name: str, password: str) -> Account:
        """A new password for an account; its sessions end."""
        account = self.get(name)
        return self.store.update_account(
            account.id, password_hash=_HASHER.hash(check_password(password))
        )

    def set_quota(
        self, name: str, *, storage_bytes: int | None, generations_per_hour: int | None
    ) -> Account:
        """The account's limits (None: no limit)."""
        for field, value in (
            ("storage_bytes", storage_bytes),
            ("generations_per_hour", generations_per_hour),
        ):
            if value is not None and value < 0:
                raise TavernaError(
                    "a quota is a number of 0 or more", field=field, code="quota_negative"
                )
        account = self.get(name)
        self.forget_usage(account.id)
        return self.store.update_account(
            account.id, quota_bytes=storage_bytes, quota_generations=generations_per_hour
        )

    def set_admin(self, name: str, admin: bool) -> Account:
        account = self.get(name)
        if not admin and account.admin and sum(a.admin for a in self.users()) == 1:
            raise Conflict(
                "the last admin stays an admin", field="admin", code="last_admin_stays_admin"
            )
        return self.store.update_account(account.id, admin=admin)

    def set_disabled(self, name: str, disabled: bool, *, acting: str = "") -> Account:
        """Disable an account (its data kept, its sessions ended, no login) or enable it
        again; `acting` is the admin's own account id, which may not disable itself."""
        account = self.get(name)
        if disabled:
            self._may_remove(account, acting)
        return self.store.update_account(account.id, disabled=disabled)

    def remove(self, name: str, *, acting: str = "") -> AccountRemoval:
        """Delete an account and everything it owns, for good."""
        account = self.get(name)
        self._may_remove(account, acting)
        removed = self.store.delete_account(account.id)
        self.forget_usage(account.id)
        self.unlock(account.name)
        return removed

    def _may_remove(self, account: Account, acting: str) -> None:
        if account.id == acting:
            raise Conflict(
                "an admin may not disable or delete their own account",
                field="name",
                code="not_your_own_account",
            )
        admins = [a for a in self.users() if a.admin and not a.disabled]
        if account.admin and admins == [account]:
            raise Conflict(
                "the last admin stays an admin", field="admin", code="last_admin_stays_admin"
            )

    def change_password(self, user_id: str, old: str, new: str) -> Account:
        """The account's own new password, given its current one (tries of a wrong one
        count against the name's login limit); its sessions end."""
        account = self.store.account(id=user_id)
        subject = name_subject(account.name)
        self._check_login_limits([subject])
        try:
            _HASHER.verify(account.password_hash, old)
        except (VerificationError, InvalidHashError):
            self.store.add_login_failure([subject])
            raise TavernaError(
                "the current password is not right",
                field="old_password",
                code="current_password_wrong",
            ) from None
        return self.store.update_account(
            account.id, password_hash=_HASHER.hash(check_password(new))
        )

    # ---------------------------------------------------------------- status

    def statuses(self) -> list[AccountStatus]:
        """Every account with what it uses and whether its name is locked out."""
        return self._statuses(self.users())

    def status(self, account: Account) -> AccountStatus:
        return self._statuses([account])[0]

    def status_of(self, account_id: str) -> AccountStatus:
        """The status of the account with this id (the logged-in person's own)."""
        return self.status(self.store.account(id=account_id))

    def _statuses(self, accounts: list[Account]) -> list[AccountStatus]:
        locked = self.locked_seconds([name_subject(a.name) for a in accounts])
        since = datetime.now(UTC) - timedelta(hours=1)
        return [
            AccountStatus(
                account=a,
                stored_bytes=self.stored_bytes(a.id),
                generations_last_hour=self.store.generations_since(a.id, since),
                locked_seconds=locked.get(name_subject(a.name), 0),
            )
            for a in accounts
        ]

    def unlock(self, name: str) -> None:
        """Forget the failed logins of an account name: it may log in again at once."""
        self.store.clear_login_failures(name_subject(name))

    # --------------------------------------------------------------- sessions

    def login(self, name: str, password: str, *, address: str = "") -> tuple[str, Session]:
        """A new session's cookie token and the session; NotLoggedIn if the name or the
        password is wrong (one message for both); TooManyLogins, before any password is
        checked, while the name or the client `address` has too many recent failures."""
        by_name = name_subject(name)
        subjects = [by_name, address_subject(address)] if address else [by_name]
        self._check_login_limits(subjects)
        refused = NotLoggedIn(
            "wrong account name or password", code="wrong_account_name_or_password"
        )
        try:
            account = self.store.account(name=name.strip())
        except TavernaError:
            _HASHER.hash(password)  # as slow as a wrong password: names are not probed
            self.store.add_login_failure(subjects)
            raise refused from None
        try:
            _HASHER.verify(account.password_hash, password)
        except (VerificationError, InvalidHashError):
            self.store.add_login_failure(subjects)
            raise refused from None
        self.store.clear_login_failures(by_name)
        if account.disabled:
            raise NotLoggedIn(
                f"the account {account.name} is disabled; ask an admin",
                code="account_disabled",
                params={"name": account.name},
            )
        if _HASHER.check_needs_rehash(account.password_hash):
            account = self.store.update_account(account.id, password_hash=_HASHER.hash(password))
        return self.new_session(account)

    def _check_login_limits(self, subjects: list[str]) -> None:
        wait = max(self.locked_seconds(subjects).values(), default=0)
        if wait > 0:
            raise TooManyLogins(
                f"too many failed logins; try again in {wait} seconds", retry_after=wait
            )

    def locked_seconds(self, subjects: list[str]) -> dict[str, int]:
        """For each subject (`name:…`, `address:…`), the seconds until it may try to log in
        again: 0 unless its failures in the window reached its limit."""
        now = datetime.now(UTC)
        return self._waits(self.store.login_failures(subjects, now - self.limits.window), now)

    def address_lockouts(self) -> list[AddressLockout]:
        """Every client address with failed logins in the window, the locked ones first."""
        now = datetime.now(UTC)
        failures = self.store.login_failures_from(ADDRESS, now - self.limits.window)
        waits = self._waits(failures, now)
        found = [
            AddressLockout(subject.removeprefix(ADDRESS), len(times), waits[subject])
            for subject, times in failures.items()
        ]
        return sorted(found, key=lambda item: (-item.locked_seconds, -item.failures, item.address))

    def unlock_address(self, address: str) -> None:
        """Forget the failed logins from a client address: it may log in again at once."""
        self.store.clear_login_failures(address_subject(address))

    def _waits(self, failures: dict[str, list[datetime]], now: datetime) -> dict[str, int]:
        limits = self.limits
        locked = {}
        for subject, times in failures.items():
            allowed = limits.per_name if subject.startswith("name:") else limits.per_address
            wait = 0.0
            if len(times) >= allowed:
                # free again once enough of them are older than the window
                freed = times[len(times) - allowed] + limits.window
                wait = (freed - now).total_seconds()
            locked[subject] = max(1, math.ceil(wait)) if wait > 0 else 0
        return locked

    def session(self, token: str) -> Session | None:
        """The live session of a cookie token, or None."""
        if not token:
            return None
        found = self.store.session(token_hash(token))
        if found is None:
            return None
        account, csrf, expires = found
        if account.disabled:
            return None
        now = datetime.now(UTC)
        if expires <= now:
            self.store.end_session(token_hash(token))
            return None
        return Session(account, csrf)

    def logout(self, token: str) -> None:
        self.store.end_session(token_hash(token))

    def new_session(self, account: Account) -> tuple[str, Session]:
        """A fresh session for an account that has just proven who it is."""
        token = secrets.token_urlsafe(32)
        csrf = secrets.token_urlsafe(32)
        expires = datetime.now(UTC) + timedelta(days=SESSION_DAYS)
        self.store.add_session(token_hash(token), account.id, csrf, expires)
        return token, Session(account, csrf)

    # ----------------------------------------------------------------- quotas

    def count_generation(self, user_id: str) -> None:
        """Count a request to a model the account sends; QuotaExceeded past its hourly
        limit (the rule every model request passes: `model_gate`)."""
        ModelGate(self.store).admit(user_id)

    def check_storage(self, user_id: str, adding: int) -> None:
        """StorageFull if the account's library cannot take `adding` more bytes."""
        if not user_id:
            return
        account = self.store.account(id=user_id)
        limit = account.quota_bytes
        if limit is None:
            return
        used = self.stored_bytes(user_id)
        if used + adding > limit:
            raise StorageFull(
                f"{account.name} holds {used} of {limit} bytes; "
                f"{adding} more do not fit (delete something or ask an admin for more)",
                code="storage_quota_full",
                params={
                    "name": str(account.name),
                    "used": str(used),
                    "limit": str(limit),
                    "adding": str(adding),
                },
            )
        with self._usage_lock:
            counted = self._usage.get(user_id)
            if counted is not None:
                self._usage[user_id] = (counted[0], counted[1] + adding)

    def stored_bytes(self, user_id: str) -> int:
        """What the account stores, as last counted (at most `usage_ttl` seconds ago) plus
        the writes admitted since."""
        now = time.monotonic()
        with self._usage_lock:
            counted = self._usage.get(user_id)
        if counted is not None and now - counted[0] < self.usage_ttl:
            return counted[1]
        used = self.store.stored_bytes(user_id)
        with self._usage_lock:
            self._usage[user_id] = (now, used)
        return used

    def forget_usage(self, user_id: str) -> None:
        """Count the account's stored bytes afresh at its next write (after a delete)."""
        with self._usage_lock:
            self._usage.pop(user_id, None)
