"""Accounts: users, their login sessions, and the generations each started (for quotas)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from taverna.errors import Conflict, NotFound
from taverna.model.chat import new_id
from taverna.store import schema as t
from taverna.store.repository import Account
from taverna.store.sql.base import SqlBase
from taverna.store.sql.rows import _aware, _utc


def _account(row: Any) -> Account:
    return Account(
        id=row["id"],
        name=row["name"],
        password_hash=row["password_hash"],
        admin=bool(row["admin"]),
        quota_bytes=row["quota_bytes"],
        quota_generations=row["quota_generations"],
        created=_aware(row["created"]),
        disabled=bool(row["disabled"]),
    )


class SqlAccounts(SqlBase):
    """The accounts of a server that runs with them."""

    def add_account(self, name: str, password_hash: str, *, admin: bool = False) -> Account:
        row = {
            "id": new_id(),
            "name": name,
            "password_hash": password_hash,
            "admin": admin,
            "quota_bytes": None,
            "quota_generations": None,
            "created": _utc(self.clock()),
            "disabled": False,
        }
        with self.engine.begin() as conn:
            taken = conn.execute(sa.select(t.users.c.id).where(t.users.c.name == name)).first()
            if taken is not None:
                raise Conflict(
                    f"an account named {name!r} already exists",
                    field="name",
                    code="account_named_already_exists",
                    params={"name": str(name)},
                )
            conn.execute(t.users.insert(), row)
        return _account(row)

    def accounts(self) -> list[Account]:
        with self._read() as conn:
            rows = conn.execute(sa.select(t.users).order_by(t.users.c.name)).mappings()
            return [_account(row) for row in rows]

    def account(self, *, id: str | None = None, name: str | None = None) -> Account:
        query = sa.select(t.users)
        query = query.where(t.users.c.id == id) if id is not None else query
        query = query.where(t.users.c.name == name) if name is not None else query
        with self._read() as conn:
            row = conn.execute(query).mappings().first()
        if row is None or (id is None and name is None):
            raise NotFound(
                f"no account {name or id!r}",
                field="name",
                code="no_account",
                params={"value": str(name or id)},
            )
        return _account(row)

    def update_account(self, id: str, **values: Any) -> Account:
        allowed = {"password_hash", "admin", "quota_bytes", "quota_generations", "disabled"}
        unknown = set(values) - allowed
        if unknown:
            raise ValueError(f"not an account field: {sorted(unknown)}")
        with self.engine.begin() as conn:
            changed = conn.execute(t.users.update().where(t.users.c.id == id).values(**values))
            if changed.rowcount == 0:
                raise NotFound(
                    f"no account {id!r}", field="id", code="no_account_id", params={"id": str(id)}
                )
            # a new password, or disabling the account, ends every session
            if "password_hash" in values or values.get("disabled"):
                conn.execute(t.sessions.delete().where(t.sessions.c.user_id == id))
        return self.account(id=id)

    def add_session(self, token_hash: str, user_id: str, csrf: str, expires: datetime) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                t.sessions.insert(),
                {
                    "token_hash": token_hash,
                    "user_id": user_id,
                    "csrf": csrf,
                    "expires": _utc(expires),
                },
            )

    def session(self, token_hash: str) -> tuple[Account, str, datetime] | None:
        """The account, CSRF token and end of a session, or None."""
        query = (
            sa.select(t.users, t.sessions.c.csrf, t.sessions.c.expires)
            .join(t.sessions, t.sessions.c.user_id == t.users.c.id)
            .where(t.sessions.c.token_hash == token_hash)
        )
        with self._read() as conn:
            row = conn.execute(query).mappings().first()
        if row is None:
            return None
        expires = _aware(row["expires"])
        assert expires is not None
        return _account(row), row["csrf"], expires

    def end_session(self, token_hash: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(t.sessions.delete().where(t.sessions.c.token_hash == token_hash))

    def count_generation(self, user_id: str, since: datetime, limit: int | None) -> int:
        """Record a generation started by `user_id` unless `limit` were passed since
        `since`; the count before this one (rows older than `since` go)."""
        now = _utc(self.clock())
        log = t.generation_log
        with self.engine.begin() as conn:
            # one count at a time per account, across processes: two requests at once
            # must not both take the last place (SQLite's write lock does this already)
            conn.execute(sa.select(t.users.c.id).where(t.users.c.id == user_id).with_for_update())
            conn.execute(log.delete().where(log.c.user_id == user_id, log.c.started < _utc(since)))
            count = conn.execute(
                sa.select(sa.func.count()).select_from(log).where(log.c.user_id == user_id)
            ).scalar_one()
            if limit is None or count < limit:
                conn.execute(log.insert(), {"user_id": user_id, "started": now})
        return int(count)

    def generations_since(self, user_id: str, since: datetime) -> int:
        log = t.generation_log
        query = (
            sa.select(sa.func.count())
            .select_from(log)
            .where(log.c.user_id == user_id, log.c.started >= _utc(since))
        )
        with self._read() as conn:
            return int(conn.execute(query).scalar_one())

    def login_failures(self, subjects: Sequence[str], since: datetime) -> dict[str, list[datetime]]:
        failures = t.login_failures
        found: dict[str, list[datetime]] = {subject: [] for subject in subjects}
        with self.engine.begin() as conn:
            conn.execute(failures.delete().where(failures.c.at < _utc(since)))
            rows = conn.execute(
                sa.select(failures.c.subject, failures.c.at)
                .where(failures.c.subject.in_(list(subjects)))
                .order_by(failures.c.at)
            )
            for subject, at in rows:
                stamp = _aware(at)
                assert stamp is not None
                found[subject].append(stamp)
        return found

    def login_failures_from(self, prefix: str, since: datetime) -> dict[str, list[datetime]]:
        failures = t.login_failures
        found: dict[str, list[datetime]] = {}
        with self._read() as conn:
            rows = conn.execute(
                sa.select(failures.c.subject, failures.c.at)
                .where(
                    failures.c.subject.startswith(prefix, autoescape=True),
                    failures.c.at >= _utc(since),
                )
                .order_by(failures.c.at)
            )
            for subject, at in rows:
                stamp = _aware(at)
                assert stamp is not None
                found.setdefault(subject, []).append(stamp)
        return found

    def add_login_failure(self, subjects: Sequence[str]) -> None:
        now = _utc(self.clock())
        with self.engine.begin() as conn:
            conn.execute(t.login_failures.insert(), [{"subject": s, "at": now} for s in subjects])

    def clear_login_failures(self, subject: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(t.login_failures.delete().where(t.login_failures.c.subject == subject))

    def stored_bytes(self, owner: str) -> int:
        """What an account holds: its documents' data and blobs (library, pictures,
        drafts), its chats (title, settings) and their messages (text, metadata, every
        version kept) with the prompts their replies were sent."""
        docs, chats, nodes = t.documents, t.chats, t.nodes

        def size(*columns: Any) -> Any:
            return sum((sa.func.coalesce(sa.func.length(c), 0) for c in columns), sa.literal(0))

        # a deleted chat's rows go in the background: they no longer count
        live = sa.and_(chats.c.owner == owner, chats.c.deleted == sa.false())
        mine = sa.select(chats.c.id).where(live).scalar_subquery()
        queries = [
            sa.select(sa.func.sum(size(sa.cast(docs.c.data, sa.Text), docs.c.blob))).where(
                docs.c.owner == owner
            ),
            sa.select(
                sa.func.sum(
                    size(chats.c.title, sa.cast(chats.c.metadata, sa.Text))
                    + size(sa.cast(chats.c.base_state, sa.Text))
                )
            ).where(live),
            sa.select(
                sa.func.sum(
                    size(t.contents.c.text, nodes.c.speaker, sa.cast(nodes.c.extras, sa.Text))
                )
            )
            .select_from(nodes.join(t.contents, t.contents.c.hash == nodes.c.content_hash))
            .where(nodes.c.chat_id.in_(mine)),
            sa.select(sa.func.sum(size(t.contents.c.text)))
            .select_from(
                t.history_texts.join(t.contents, t.contents.c.hash == t.history_texts.c.hash)
            )
            .where(t.history_texts.c.chat_id.in_(mine)),
            sa.select(sa.func.sum(size(t.sent_prompts.c.record))).where(
                t.sent_prompts.c.chat_id.in_(mine)
            ),
        ]
        with self._read() as conn:
            return sum(int(conn.execute(q).scalar_one() or 0) for q in queries)
