"""Chat backups: throttled per chat, pruned, safe names, restored as new chats."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from taverna.errors import NotFound
from taverna.formats.st_chat import read_chat
from taverna.model.chat import CharacterRef, NodeRole
from taverna.services.chats.backups import Backup, BackupService, chat_key, title_slug
from taverna.services.chats.service import ChatService
from taverna.services.interchange import InterchangeService
from taverna.store.sql import SqlStore


class Clocks:
    """A monotonic clock and a wall clock that tests move by hand."""

    def __init__(self) -> None:
        self.seconds = 1000.0
        self.wall = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

    def tick(self, seconds: float) -> None:
        self.seconds += seconds
        self.wall += timedelta(seconds=seconds)


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


@pytest.fixture
def backups(store: SqlStore, tmp_path: Path, clocks: Clocks) -> BackupService:
    return BackupService(
        store,
        tmp_path / "backups",
        keep=3,
        clock=lambda: clocks.seconds,
        now=lambda: clocks.wall,
    )


def new_chat(store: SqlStore, title: str = "Seraphina - 2024-09-28") -> str:
    chats = ChatService(store)
    outcome = chats.create_chat(
        title,
        characters=[CharacterRef("Seraphina")],
        greetings=["Hello."],
        greeting_speaker="Seraphina",
    )
    return outcome.chat.id


def test_at_most_one_backup_per_chat_every_ten_seconds(
    backups: BackupService, store: SqlStore, clocks: Clocks
) -> None:
    chat = new_chat(store)
    other = new_chat(store, "Kael")
    assert backups.after_write(chat) is not None
    clocks.tick(3)
    assert backups.after_write(chat) is None  # throttled, now pending
    assert backups.after_write(other) is not None  # other chats are not held back
    assert backups.pending == {chat}
    assert backups.flush() == []  # not due yet
    clocks.tick(7)
    (written,) = backups.flush()
    assert backups.pending == frozenset()
    assert len(backups.backups(chat)) == 2
    assert written == backups.backups(chat)[0].path
    clocks.tick(10)
    assert backups.after_write(chat) is not None


def test_newest_backups_are_kept(backups: BackupService, store: SqlStore, clocks: Clocks) -> None:
    chat = new_chat(store)
    paths = []
    for _ in range(5):
        paths.append(backups.after_write(chat))
        clocks.tick(11)
    kept = [b.path for b in backups.backups(chat)]
    assert kept == list(reversed(paths[-3:]))
    assert all(not p.exists() for p in paths[:2] if p is not None)


def test_backup_is_the_chat_as_sillytavern_jsonl(backups: BackupService, store: SqlStore) -> None:
    chat = new_chat(store)
    chats = ChatService(store)
    revision = store.get_chat(chat).revision
    chats.append(chat, NodeRole.USER, "Hi there.", speaker="Traveler", revision=revision)
    path = backups.backup(chat)
    assert path.parent == backups.folder and path.name.startswith("chat_seraphina_2024_09_28_")
    document = read_chat(path.read_bytes())
    assert [m.text for m in document.messages] == ["Hello.", "Hi there."]
    assert path.read_text(encoding="utf-8") == InterchangeService(store).export_jsonl(chat)


@pytest.mark.parametrize(
    ("title", "shape"),
    [
        ("Seraphina - 2024", r"seraphina_2024"),
        ("東京の夜", r"[0-9a-f]{8}"),
        ("Café Noir", r"cafe_noir_[0-9a-f]{8}"),
        ("../../etc/passwd", r"etc_passwd"),
        ("", r"[0-9a-f]{8}"),
    ],
)
def test_file_names_are_safe_for_any_title(title: str, shape: str) -> None:
    import re

    assert re.fullmatch(shape, title_slug(title))


def test_non_ascii_titles_do_not_collide(backups: BackupService, store: SqlStore) -> None:
    first = backups.backup(new_chat(store, "東京の夜"))
    second = backups.backup(new_chat(store, "大阪の夜"))
    assert first.name != second.name
    assert first.name.isascii() and second.name.isascii()


def test_restore_brings_a_backup_back_as_a_new_chat(
    backups: BackupService, store: SqlStore
) -> None:
    chat = new_chat(store)
    path = backups.backup(chat)
    restored = backups.restore(path.name)
    assert restored.chat.id != chat
    assert restored.chat.title.startswith("Seraphina - 2024-09-28 (backup ")
    assert [e.node.content for e in store.active_path(restored.chat.id).entries] == ["Hello."]
    assert len(store.list_chats()) == 2
    with pytest.raises(NotFound):
        backups.restore("chat_nothing_like_this")


def test_flusher_writes_the_last_change_of_a_burst(store: SqlStore, tmp_path: Path) -> None:
    import time

    from taverna.services.chats.backups import BackupFlusher

    backups = BackupService(store, tmp_path / "b", interval=0.2)
    chat = new_chat(store)
    flusher = BackupFlusher(backups, every=0.05)
    flusher.start()
    try:
        assert backups.after_write(chat) is not None
        assert backups.after_write(chat) is None
        deadline = time.monotonic() + 5
        while len(backups.backups(chat)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(backups.backups(chat)) == 2
        assert backups.pending == frozenset()
    finally:
        flusher.stop()
    assert backups.pending == frozenset()


def test_a_long_chat_is_backed_up_by_a_process_of_its_own(store: SqlStore, tmp_path: Path) -> None:
    chat_id = new_chat(store)
    chats = ChatService(store)
    for i in range(4):
        revision = store.get_chat(chat_id).revision
        chats.append(chat_id, NodeRole.USER, f"line {i}", revision=revision)
    separate = BackupService(store, tmp_path / "apart", separate_above=3)
    assert separate.after_write(chat_id) is None  # handed to a process of its own
    separate.wait_for_children()
    [written] = separate.backups(chat_id)
    # The same file as one written here.
    here = BackupService(store, tmp_path / "here").backup(chat_id)
    assert written.path.read_text(encoding="utf-8") == here.read_text(encoding="utf-8")
    # A short chat is still written at once, here.
    short = new_chat(store, "short")
    assert separate.after_write(short) is not None


def test_backups_and_their_folder_are_the_owners_alone(
    store: SqlStore, backups: BackupService, tmp_path: Path
) -> None:
    old_umask = os.umask(0o022)  # the usual one, which would give 0644 and 0755
    try:
        written = backups.backup(new_chat(store))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "backups").stat().st_mode) == 0o700


@pytest.fixture
def deferred(store: SqlStore, tmp_path: Path, clocks: Clocks) -> BackupService:
    return BackupService(
        store,
        tmp_path / "backups",
        keep=3,
        clock=lambda: clocks.seconds,
        now=lambda: clocks.wall,
        deferred=True,
    )


def append(store: SqlStore, chat_id: str, text: str, role: NodeRole = NodeRole.USER) -> None:
    chats = ChatService(store)
    chats.append(chat_id, role, text, revision=chats.get_chat(chat_id).revision)


def test_deferred_a_turn_is_one_backup_written_by_the_flush_within_the_interval(
    deferred: BackupService, store: SqlStore, clocks: Clocks
) -> None:
    chat = new_chat(store)
    assert deferred.after_write(chat) is not None  # its first write here: at once
    clocks.tick(60)
    append(store, chat, "Where are we?")
    assert deferred.after_write(chat) is None  # the message: left to the flush
    clocks.tick(4)
    append(store, chat, "The harbour.", NodeRole.ASSISTANT)
    assert deferred.after_write(chat) is None  # the reply: with it
    assert deferred.pending == {chat}
    clocks.tick(5)
    assert deferred.flush() == []  # 9 s after the message: not yet
    clocks.tick(1)
    (written,) = deferred.flush()  # 10 s after the message: both, in one backup
    assert deferred.pending == frozenset()
    assert len(deferred.backups(chat)) == 2
    text = written.read_text(encoding="utf-8")
    assert "Where are we?" in text and "The harbour." in text
    clocks.tick(30)
    assert deferred.flush() == []  # nothing changed since: nothing more


def test_deferred_changes_are_written_on_shutdown_and_after_a_failed_write(
    deferred: BackupService, store: SqlStore, clocks: Clocks, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = new_chat(store)
    deferred.after_write(chat)
    append(store, chat, "One.")
    deferred.after_write(chat)
    clocks.tick(10)
    real = deferred.backup

    def full_disk(chat_id: str) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(deferred, "backup", full_disk)
    assert deferred.flush() == []
    assert deferred.pending == {chat}  # not lost: tried again
    monkeypatch.setattr(deferred, "backup", real)
    append(store, chat, "Two.")
    deferred.after_write(chat)
    (written,) = deferred.flush(force=True)  # shutdown: whatever is pending, now
    assert "Two." in written.read_text(encoding="utf-8")
    assert deferred.pending == frozenset()


def test_pruning_leaves_other_chats_and_the_newest_of_every_process(
    store: SqlStore, tmp_path: Path, clocks: Clocks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes back one chat up into one folder that holds other chats' backups:
    each prunes without listing the folder every time, never deletes one of the newest
    `keep` in the folder, and the folder comes back to `keep` once each lists it again."""
    folder = tmp_path / "shared"
    chat = new_chat(store)
    one, two = (BackupService(store, folder, keep=3, now=lambda: clocks.wall) for _ in range(2))
    listings = 0
    real_listing = one.backups

    def counted(chat_id: str | None = None) -> list[Backup]:
        nonlocal listings
        listings += 1
        return real_listing(chat_id)

    monkeypatch.setattr(one, "backups", counted)
    folder.mkdir(mode=0o700)
    others = [folder / f"chat_kael_0000abcd_20240101-00000{n}.jsonl" for n in range(5)]
    for other in others:
        other.write_text("{}\n", encoding="utf-8")
    written: list[Path] = []  # oldest first: the clock moves on after each
    for round in range(12):
        written.append(one.backup(chat))
        clocks.tick(1)
        if round % 3 == 0:
            written.append(two.backup(chat))
            clocks.tick(1)
        assert all(path.exists() for path in written[-3:])
    assert listings <= 12 // 3 + 1  # not once a backup: after every `keep` of them
    assert all(other.exists() for other in others)
    # Both list the folder again within `keep` backups: the surplus is pruned.
    for _ in range(3):
        one.backup(chat)
        clocks.tick(1)
    assert len(real_listing(chat)) == 3
    assert real_listing(chat)[0].path == sorted(folder.glob(f"*_{chat_key(chat)}_*"))[-1]


def test_a_backup_deleted_elsewhere_does_not_make_a_newer_one_go(
    backups: BackupService, store: SqlStore, clocks: Clocks
) -> None:
    chat = new_chat(store)
    written = []
    for _ in range(3):
        written.append(backups.backup(chat))
        clocks.tick(1)
    for gone in written[1:]:  # the newest two, deleted by hand or by another process
        gone.unlink()
    newest = backups.backup(chat)
    # Of the three newest names seen two are gone: the oldest is still among the newest three.
    assert [b.path for b in backups.backups(chat)] == [newest, written[0]]


def test_each_backup_is_the_full_exports_main_file_as_the_chat_changes(
    backups: BackupService, store: SqlStore, clocks: Clocks, tmp_path: Path
) -> None:
    """Swipes, a resent message with its old turn, a named branch and a checkpoint, edits,
    a deletion, an undo: after each change the backup (which reuses the lines of the one
    before where they are unchanged) is byte for byte the main file of a full export."""
    chats = ChatService(store)
    chat = new_chat(store)

    def rev() -> int:
        return chats.get_chat(chat).revision

    def turn(text: str) -> tuple[str, str]:
        asked = chats.append(chat, NodeRole.USER, text, speaker="Traveler", revision=rev())
        assert asked.node is not None
        reply = chats.add_reply(chat, asked.node.id, f"Re: {text}", revision=rev(), speaker="Sera")
        assert reply.node is not None
        return asked.node.id, reply.node.id

    exports = 0

    def same_as_a_full_export() -> None:
        nonlocal exports
        exports += 1
        written = backups.backup(chat)
        clocks.tick(11)
        main = InterchangeService(store).export_to(chat, tmp_path / f"export-{exports}")[0]
        assert written.read_bytes() == main.read_bytes()

    asked, replied = turn("Where are we?")
    same_as_a_full_export()
    for i in range(3):
        chats.add_candidate(chat, replied, f"Another answer {i}.", revision=rev(), speaker="Sera")
    same_as_a_full_export()
    tide, tide_reply = turn("And the tide?")
    wind, _ = turn("And the wind?")
    old, _ = turn("Then we wait.")
    same_as_a_full_export()
    chats.edit_and_resend(chat, wind, "And the rain?", revision=rev())
    same_as_a_full_export()  # the old turn under `taverna_forks`
    chats.edit(chat, old, "Then we wait, still.", revision=rev())
    same_as_a_full_export()  # a change inside the old turn only
    later, later_reply = turn("Shall we go?")
    chats.branch_from(chat, tide_reply, "harbour", revision=rev(), switch=False)
    chats.create_checkpoint(chat, asked, "before the storm", revision=rev())
    same_as_a_full_export()  # links on the main file's lines
    chats.edit(chat, later, "Shall we go now?", revision=rev())
    same_as_a_full_export()
    chats.swipe(chat, later_reply, "Not yet.", revision=rev(), select=False)
    same_as_a_full_export()  # the same message, one more candidate beside it
    chats.add_candidate(chat, later_reply, "Soon.", revision=rev(), speaker="Sera")
    same_as_a_full_export()
    chats.set_hidden(chat, [tide], True, revision=rev())
    same_as_a_full_export()
    chats.select_candidate(chat, replied, revision=rev())
    same_as_a_full_export()
    chats.delete(chat, tide, revision=rev())
    same_as_a_full_export()
    chats.undo(chat, revision=rev())
    same_as_a_full_export()
    chats.redo(chat, revision=rev())
    same_as_a_full_export()


def test_a_full_disk_leaves_no_half_written_backup_behind(
    backups: BackupService, store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_id = new_chat(store)
    backups.backup(chat_id)
    before = sorted(p.name for p in (tmp_path / "backups").iterdir())

    def full(descriptor: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        backups.backup(chat_id)
    # the earlier backup stays, and no empty or partial .tmp file is left
    assert sorted(p.name for p in (tmp_path / "backups").iterdir()) == before
