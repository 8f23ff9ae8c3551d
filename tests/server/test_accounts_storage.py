"""The storage quota counts everything an account holds: its library, its chats and their
messages, its pictures; a full account is refused what would add more (413) and can
still tidy up (hide, delete, switch)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from taverna.errors import StorageFull
from taverna.model.chat import NodeRole
from taverna.server.app import create_app
from taverna.server.context import AppContext
from taverna.services.accounts.service import AccountService
from tests.server.accounts_fixtures import enable_accounts, log_in
from tests.server.conftest import rev
from tests.server.test_accounts_isolation import sample_png


@pytest.fixture
def alice(ctx: AppContext) -> Iterator[TestClient]:
    enable_accounts(ctx, "alice", "bob")
    with TestClient(create_app(ctx)) as client:
        log_in(client, "alice")
        yield client


def _owner(ctx: AppContext, name: str) -> str:
    return ctx.store.account(name=name).id


def test_chats_messages_and_pictures_count(alice: TestClient, ctx: AppContext) -> None:
    owner = _owner(ctx, "alice")
    empty = ctx.store.stored_bytes(owner)
    chat = ctx.chats.create_chat("Harbour", owner=owner).chat
    with_chat = ctx.store.stored_bytes(owner)
    assert with_chat > empty
    ctx.chats.append(chat.id, NodeRole.USER, "x" * 5000, revision=chat.revision)
    with_message = ctx.store.stored_bytes(owner)
    assert with_message - with_chat >= 5000
    picture = alice.post("/api/images", files={"file": ("p.png", sample_png(), "image/png")})
    assert picture.status_code in (200, 201), picture.text
    assert ctx.store.stored_bytes(owner) - with_message >= len(sample_png())
    # Bob holds none of it.
    assert ctx.store.stored_bytes(_owner(ctx, "bob")) == 0


def test_a_full_account_is_refused_more_but_can_tidy_up(alice: TestClient, ctx: AppContext) -> None:
    owner = _owner(ctx, "alice")
    chat = ctx.chats.create_chat("Harbour", owner=owner).chat
    out = ctx.chats.append(chat.id, NodeRole.USER, "y" * 20_000, revision=chat.revision)
    node = out.node
    assert node is not None
    used = ctx.store.stored_bytes(owner)
    accounts: AccountService = ctx.services["accounts"]
    accounts.set_quota("alice", storage_bytes=used + 500, generations_per_hour=None)

    # The library is small, but the chat fills the quota: a library write is refused.
    big_set = {"name": "Big", "replies": [{"label": "x", "message": "z" * 2000}]}
    refused = alice.put("/api/quick-replies", json=big_set)
    assert refused.status_code == 413, refused.text
    assert "alice" in refused.json()["detail"]["message"]
    # So is a chat write that adds text: an edit, a message sent for a reply.
    edit = alice.patch(
        f"/api/chats/{chat.id}/messages/{node.id}",
        json={"content": "w" * 2000, "revision": rev(alice, chat.id)},
    )
    assert edit.status_code == 413, edit.text
    sent = alice.post(
        f"/api/chats/{chat.id}/generate",
        json={"text": "v" * 2000, "revision": rev(alice, chat.id)},
    )
    assert sent.status_code == 413, sent.text
    assert [n.content for n in ctx.chats.active_path(chat.id).nodes] == ["y" * 20_000]
    # Tidying up is never refused: hide the message, then delete it.
    hidden = alice.post(
        f"/api/chats/{chat.id}/messages/{node.id}/hidden",
        json={"hidden": True, "revision": rev(alice, chat.id)},
    )
    assert hidden.status_code == 200, hidden.text
    deleted = alice.delete(f"/api/chats/{chat.id}", params={"revision": rev(alice, chat.id)})
    assert deleted.status_code == 204, deleted.text
    # With the chat gone, the space is free again at once.
    assert alice.put("/api/quick-replies", json=big_set).status_code == 200


def test_writes_between_counts_add_up(alice: TestClient, ctx: AppContext) -> None:
    owner = _owner(ctx, "alice")
    accounts: AccountService = ctx.services["accounts"]
    used = ctx.store.stored_bytes(owner)
    accounts.set_quota("alice", storage_bytes=used + 1000, generations_per_hour=None)
    accounts.check_storage(owner, 600)
    # Nothing was stored, but the 600 bytes admitted are counted until the next count.
    with pytest.raises(StorageFull):
        accounts.check_storage(owner, 600)
    accounts.forget_usage(owner)
    accounts.check_storage(owner, 600)
