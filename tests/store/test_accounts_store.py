"""Accounts in the store (SQLite and PostgreSQL): names unique, sessions by token hash,
a new password ends sessions, the hourly generation count, an account's stored bytes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taverna.errors import Conflict, NotFound, QuotaExceeded, StorageFull
from taverna.services.accounts.service import AccountService
from taverna.store.sql import SqlStore


def test_accounts_sessions_and_quotas(store: SqlStore) -> None:
    accounts = AccountService(store)
    alice = accounts.add("alice", "a long password", admin=True)
    with pytest.raises(Conflict):
        accounts.add("alice", "another password")
    assert [a.name for a in accounts.users()] == ["alice"]
    token, session = accounts.login("alice", "a long password")
    found = accounts.session(token)
    assert found is not None and found.account.id == alice.id and found.csrf == session.csrf
    assert accounts.session("not a token") is None
    accounts.set_password("alice", "a new password")
    assert accounts.session(token) is None
    with pytest.raises(NotFound):
        store.account(name="bob")

    accounts.set_quota("alice", storage_bytes=10_000, generations_per_hour=1)
    accounts.count_generation(alice.id)
    with pytest.raises(QuotaExceeded):
        accounts.count_generation(alice.id)
    # An hour later the count starts again (old rows are pruned as it is read).
    hour_ago = datetime.now(UTC) + timedelta(hours=1, seconds=1)
    assert store.count_generation(alice.id, hour_ago, 1) == 0

    store.put_document(
        "lorebook", "book", {"entries": {"0": {"content": "x" * 3000}}}, owner=alice.id
    )
    store.put_document("lorebook", "other's", {"entries": "y" * 50_000}, owner="someone")
    used = store.stored_bytes(alice.id)
    assert 3000 < used < 4000
    accounts.check_storage(alice.id, 5000)
    with pytest.raises(StorageFull):
        accounts.check_storage(alice.id, 8000)


def test_stored_bytes_count_chats_messages_and_their_versions(store: SqlStore) -> None:
    from taverna.model.chat import NodeRole
    from taverna.services.chats.service import ChatService

    chats = ChatService(store)
    chat = chats.create_chat("Harbour", owner="alice").chat
    theirs = chats.create_chat("Theirs", owner="bob").chat
    chats.append(theirs.id, NodeRole.USER, "b" * 40_000, revision=theirs.revision)
    start = store.stored_bytes("alice")
    out = chats.append(chat.id, NodeRole.USER, "a" * 6000, revision=chat.revision)
    assert out.node is not None
    after_message = store.stored_bytes("alice")
    assert 6000 <= after_message - start < 7000
    # An edit keeps the old text in the history: both count.
    chats.edit(chat.id, out.node.id, "c" * 3000, revision=out.chat.revision)
    assert store.stored_bytes("alice") - after_message >= 3000
    assert store.stored_bytes("bob") >= 40_000


def test_login_failures_by_subject(store: SqlStore) -> None:
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    store.add_login_failure(["name:alice", "address:192.0.2.1"])
    store.add_login_failure(["name:bob", "address:192.0.2.1"])
    found = store.login_failures(["name:alice", "address:192.0.2.1", "name:carol"], long_ago)
    assert [len(found[s]) for s in ("name:alice", "address:192.0.2.1", "name:carol")] == [1, 2, 0]
    assert all(t.tzinfo is not None and t > long_ago for t in found["address:192.0.2.1"])
    store.clear_login_failures("name:alice")
    assert store.login_failures(["name:alice"], long_ago) == {"name:alice": []}
    # Rows older than the window asked for go.
    later = datetime.now(UTC) + timedelta(seconds=1)
    assert store.login_failures(["name:bob"], later) == {"name:bob": []}
    assert store.login_failures(["name:bob"], long_ago) == {"name:bob": []}


def test_login_failures_of_every_address(store: SqlStore) -> None:
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    store.add_login_failure(["name:alice", "address:192.0.2.1"])
    store.add_login_failure(["name:bob", "address:192.0.2.1"])
    store.add_login_failure(["name:carol", "address:2001:db8::7"])
    store.add_login_failure(["name:address_like"])  # `_` is no wildcard here
    found = store.login_failures_from("address:", long_ago)
    assert {subject: len(times) for subject, times in found.items()} == {
        "address:192.0.2.1": 2,
        "address:2001:db8::7": 1,
    }
    assert all(t.tzinfo is not None and t > long_ago for t in found["address:192.0.2.1"])
    assert store.login_failures_from("address:", datetime.now(UTC) + timedelta(seconds=1)) == {}
    assert set(store.login_failures_from("name:address_", long_ago)) == {"name:address_like"}
    assert store.login_failures_from("name:address%", long_ago) == {}
