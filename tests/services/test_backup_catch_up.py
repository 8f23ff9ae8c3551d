"""Backups written in the background: a turn only records that its chat changed; the
flusher extends the last backup from the change log; a backup the database is ahead of
is written again when the flusher starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from taverna.model.chat import CharacterRef, ChatTree, NodeRole
from taverna.services.chats import backups as backups_module
from taverna.services.chats.backups import BackupFlusher, BackupService
from taverna.services.chats.service import ChatService
from taverna.services.interchange import InterchangeService
from taverna.store.repository import Store
from taverna.store.sql import SqlStore
from tests.services.test_backups import Clocks


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


@pytest.fixture
def background(store: SqlStore, tmp_path: Path, clocks: Clocks) -> BackupService:
    return BackupService(
        store,
        tmp_path / "backups",
        keep=50,
        clock=lambda: clocks.seconds,
        now=lambda: clocks.wall,
        background=True,
        extend_from=1,  # every chat's backup extends the last (a server: long chats')
    )


def new_chat(store: Store) -> str:
    made = ChatService(store).create_chat(
        "Harbour", characters=[CharacterRef("Sera")], greetings=["Hello."], greeting_speaker="Sera"
    )
    return made.chat.id


def turn(chats: ChatService, chat: str, text: str) -> tuple[str, str]:
    asked = chats.append(chat, NodeRole.USER, text, revision=chats.get_chat(chat).revision)
    assert asked.node is not None
    reply = chats.add_reply(
        chat, asked.node.id, f"Re: {text}", revision=chats.get_chat(chat).revision, speaker="Sera"
    )
    assert reply.node is not None
    return asked.node.id, reply.node.id


class TreeReads:
    """Counts the whole-tree reads of a store (what a full export costs)."""

    def __init__(self, store: SqlStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = store.tree

        def counted(chat_id: str) -> ChatTree:
            self.count += 1
            return real(chat_id)

        monkeypatch.setattr(store, "tree", counted)


def test_a_turn_writes_no_backup_and_exports_nothing(
    background: BackupService, store: SqlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = new_chat(store)
    assert background.after_write(chat, store.get_chat(chat).revision) is not None  # just made
    made = len(background.backups(chat))
    chats = ChatService(store)
    turn(chats, chat, "Where are we?")

    def no_export(*args: object, **kwargs: object) -> str:
        raise AssertionError("a turn exported its chat")

    monkeypatch.setattr(backups_module, "main_jsonl", no_export)
    monkeypatch.setattr(backups_module, "extended", no_export)
    opened: list[str] = []
    real_open = os.open

    def counted_open(path: str, flags: int, mode: int = 0o777) -> int:
        opened.append(path)
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", counted_open)
    assert background.after_write(chat, store.get_chat(chat).revision) is None
    assert background.after_write(chat) is None
    assert opened == [] and background.pending == {chat}
    assert len(background.backups(chat)) == made


def test_the_flusher_catches_a_backup_up_from_the_change_log(
    background: BackupService,
    store: SqlStore,
    clocks: Clocks,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat = new_chat(store)
    chats = ChatService(store)
    background.after_write(chat, store.get_chat(chat).revision)
    reads = TreeReads(store, monkeypatch)
    for n in range(3):
        turn(chats, chat, f"Question {n}?")
        assert background.after_write(chat, store.get_chat(chat).revision) is None
        clocks.tick(4)
        assert background.flush() == []  # at most one backup a window
        clocks.tick(7)
        (written,) = background.flush()
        main = InterchangeService(store).export_to(chat, tmp_path / f"export-{n}")[0]
        assert written.read_bytes() == main.read_bytes()
    assert reads.count == 3  # the exports to compare with; the backups read no whole tree
    assert background.pending == frozenset()


def test_each_extended_backup_is_the_full_exports_main_file(
    background: BackupService, store: SqlStore, clocks: Clocks, tmp_path: Path
) -> None:
    """Every kind of change to a plain chat: the backup, extended from the last one where
    it can be, is byte for byte the main file of a full export."""
    chats = ChatService(store)
    chat = new_chat(store)

    def rev() -> int:
        return chats.get_chat(chat).revision

    exports = 0

    def same_as_a_full_export() -> None:
        nonlocal exports
        exports += 1
        written = background.backup(chat)
        clocks.tick(11)
        main = InterchangeService(store).export_to(chat, tmp_path / f"export-{exports}")[0]
        assert written.read_bytes() == main.read_bytes()

    same_as_a_full_export()
    asked, replied = turn(chats, chat, "Where are we?")
    same_as_a_full_export()
    chats.add_candidate(chat, replied, "Another answer.", revision=rev(), speaker="Sera")
    same_as_a_full_export()
    chats.select_candidate(chat, replied, revision=rev())
    same_as_a_full_export()
    chats.edit(chat, replied, "The harbour, at dawn.", revision=rev())
    same_as_a_full_export()
    second, second_reply = turn(chats, chat, "And the tide?")
    chats.set_hidden(chat, [asked], True, revision=rev())
    same_as_a_full_export()
    chats.rename_chat(chat, "Harbour at dawn", revision=rev())
    same_as_a_full_export()
    chats.delete(chat, second_reply, revision=rev())
    same_as_a_full_export()
    chats.undo(chat, revision=rev())
    same_as_a_full_export()
    chats.redo(chat, revision=rev())
    same_as_a_full_export()
    turn(chats, chat, "Shall we go?")
    chats.branch_from(chat, replied, "harbour", revision=rev(), switch=False)
    same_as_a_full_export()
    chats.create_checkpoint(chat, second, "before the storm", revision=rev())
    turn(chats, chat, "Now?")
    same_as_a_full_export()


def test_a_backup_behind_the_database_is_written_when_the_flusher_starts(
    store: SqlStore, tmp_path: Path
) -> None:
    folder = tmp_path / "backups"
    chats = ChatService(store)
    behind, current = new_chat(store), new_chat(store)
    before = BackupService(store, folder, background=True)
    before.backup(behind)
    before.backup(current)
    # The process writes a turn and ends before its flusher came to it.
    turn(chats, behind, "Lost?")
    after = BackupService(store, folder, background=True)
    flusher = BackupFlusher(after, every=0.05)
    flusher.start()
    flusher.stop()
    assert [len(after.backups(chat)) for chat in (behind, current)] == [2, 1]
    assert "Re: Lost?" in after.backups(behind)[0].path.read_text(encoding="utf-8")
    assert BackupService(store, folder).catch_up() == []  # nothing behind any more


def test_a_server_workspace_backs_a_turn_up_in_the_background(tmp_path: Path) -> None:
    from taverna.services.house.workspace import open_workspace

    workspace = open_workspace(tmp_path / "data", plugins=False)
    try:
        chat = new_chat(workspace.store)
        workspace.chat_written(chat)  # just made: backed up at once, as before
        assert len(workspace.backups.backups(chat)) == 1
        turn(workspace.chats, chat, "Where are we?")
        workspace.chat_written(chat, workspace.store.get_chat(chat).revision)
        assert chat in workspace.backups.pending
        assert len(workspace.backups.backups(chat)) == 1  # the turn wrote none
    finally:
        workspace.close()  # the flusher writes what is pending
    (newest, _) = workspace.backups.backups(chat)
    assert "Re: Where are we?" in newest.path.read_text(encoding="utf-8")
