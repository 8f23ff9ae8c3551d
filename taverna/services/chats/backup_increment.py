"""A chat's backup brought up to date from what changed since the last one.

A backup is the main file of a full export (`main_jsonl`), which reads the whole tree: at
100,000 messages that is seconds of work for a turn that added two. (A short chat's whole
tree costs less than the dozen small reads below: the caller extends long ones only.) When the last backup
was of a plain chat (one line of messages with their candidates: no tombstones, no other
branches or checkpoints, no group, no edit-and-resend leftovers), the next one is the
lines of the last up to the first message that changed since, then the changed ones,
made from the change log (`changed_nodes`) and the end of the path alone. Anything the
shortcut cannot prove it makes the same way as a full export gives None, and the caller
exports the whole tree (a test compares both byte for byte after every kind of change).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from taverna.formats.st_chat import ChatHeader, dump_json
from taverna.model.chat import Chat, ChatTree, Node
from taverna.services.interchange.message_lines import (
    header_for,
    message_for,
    metadata_for,
    swipe_group,
)
from taverna.services.interchange.st_record import chat_record, layout_from
from taverna.store.repository import Store


@dataclass(frozen=True)
class WrittenBackup:
    """What a plain chat's last backup held: its revision, the chat as read, the ids of
    the path (root first) and each one's message line."""

    revision: int
    chat: Chat
    ids: tuple[str, ...]
    lines: tuple[str, ...]

    @property
    def size(self) -> int:
        """The characters held."""
        return sum(map(len, self.lines))


def written_backup(tree: ChatTree, text: str, *, shortest: int = 0) -> WrittenBackup | None:
    """The record of a full backup (`text`, the main file of `tree`) that the next one
    can extend, or None where the chat is not plain (see the module's doc) or its path is
    shorter than `shortest` messages."""
    chat = tree.chat
    if chat.group_id is not None or tree.checkpoints or not _one_line(tree.branches, chat):
        return None
    if any(node.deleted for node in tree.nodes):
        return None
    by_id = {node.id: node for node in tree.nodes}
    path: list[Node] = []
    current = by_id.get(chat.active_leaf_id) if chat.active_leaf_id else None
    while current is not None:
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    path.reverse()
    if not path or len(path) < shortest or any(node.created is None for node in path):
        return None
    kids = tree.children()
    on_path = {node.id for node in path}
    shown: set[str] = set()
    for node in path:
        shown.update(c.id for c in swipe_group(node, kids, on_path))
    if len(shown) != len(tree.nodes):
        return None  # a leftover subtree: a fork inside some line
    lines = _message_lines(text, chat, len(path))
    if lines is None:
        return None
    return WrittenBackup(chat.revision, chat, tuple(n.id for n in path), lines)


def extended(store: Store, last: WrittenBackup) -> tuple[str, WrittenBackup] | None:
    """The chat's backup text now, made from `last` and what changed since, with its
    record; None where only a full export can tell."""
    chat = store.get_chat(last.chat.id)
    if _fixed(chat) != _fixed(last.chat) or chat.active_leaf_id is None:
        return None  # the title, the participants, the metadata or the branch changed
    changed = store.changed_nodes(chat.id, last.revision)
    if not changed:
        # Nothing but the chat row, a branch or a checkpoint: not a line of messages.
        return _text(chat, last, store) if chat.revision == last.revision else None
    nodes = store.get_nodes(chat.id, sorted(changed))
    if len(nodes) != len(changed) or any(n.deleted or n.created is None for n in nodes):
        return None
    if store.checkpoints(chat.id) or not _one_line(
        [b.branch for b in store.branches(chat.id)], chat
    ):
        return None
    start = min(node.depth for node in nodes)
    if start == 0 or start > len(last.ids):
        return None
    leaf = store.get_node(chat.id, chat.active_leaf_id)
    tail = store.path_tail(chat.id, leaf.id, limit=leaf.depth - start + 2, counted=False)
    path = list(tail.nodes)
    if [n.depth for n in path] != list(range(start - 1, leaf.depth + 1)):
        return None
    if path[0].id != last.ids[start - 1]:
        return None  # the path left the last one above the first change
    on_path = {n.id for n in path}
    if any(node.parent_id not in on_path for node in nodes):
        return None  # a change off the path's end: under a swipe, or a leftover's
    # Until the last backup, only its path's messages had children; since, only the
    # messages of this path's end (above).
    parents = set(last.ids[:-1]) | {node.parent_id for node in nodes if node.parent_id}
    if leaf.id in parents:
        return None  # messages under the active one: a leftover, as a file of its own
    fresh = []
    for node in path[1:]:
        siblings = sorted(store.children(chat.id, node.parent_id), key=lambda n: n.id)
        kids: dict[str | None, list[Node]] = {node.parent_id: siblings}
        for sibling in siblings:
            if sibling.id != node.id and sibling.id in parents:
                kids[sibling.id] = [node]  # it has children: a stand-in says so
        group = swipe_group(node, kids, on_path)
        if len(group) != len(siblings) or node.created is None:
            return None  # a sibling that is no candidate: an edit-and-resend's leftover
        fresh.append(dump_json(message_for(node, kids, on_path, group=group).fields))
    ids = (*last.ids[:start], *(n.id for n in path[1:]))
    record = WrittenBackup(chat.revision, chat, ids, (*last.lines[:start], *fresh))
    state = tail.state
    metadata = metadata_for(chat, state, main_chat=None, own=False)
    header = header_for(chat, state, metadata, own=False)
    return _joined(chat, header, record.lines), record


def _text(chat: Chat, last: WrittenBackup, store: Store) -> tuple[str, WrittenBackup]:
    """The same backup again (nothing changed since)."""
    assert chat.active_leaf_id is not None
    state = store.state_at(chat.id, chat.active_leaf_id)
    metadata = metadata_for(chat, state, main_chat=None, own=False)
    header = header_for(chat, state, metadata, own=False)
    return _joined(chat, header, last.lines), last


def _joined(chat: Chat, header: ChatHeader | None, lines: Sequence[str]) -> str:
    """A main file's text, as `StreamedFile.text` lays it out."""
    layout = layout_from(chat_record(chat))
    every = [dump_json(header.fields), *lines] if header is not None else list(lines)
    return ("\ufeff" if layout.bom else "") + layout.newline.join(every) + layout.end


def _message_lines(text: str, chat: Chat, count: int) -> tuple[str, ...] | None:
    """The message lines of a main file's `text` (its header and layout taken off)."""
    layout = layout_from(chat_record(chat))
    body = text.removeprefix("\ufeff") if layout.bom else text
    if layout.end:
        if not body.endswith(layout.end):
            return None
        body = body[: -len(layout.end)]
    lines = body.split(layout.newline) if body else []
    lines = lines[len(lines) - count :] if len(lines) >= count else []
    return tuple(lines) if len(lines) == count else None


def _one_line(branches: Sequence[object], chat: Chat) -> bool:
    """No branch but the active one has a head: no other file, no link on a line."""
    return all(
        getattr(b, "id", None) == chat.active_branch_id or getattr(b, "head_id", None) is None
        for b in branches
    )


def _fixed(chat: Chat) -> Chat:
    """What of a chat a backup's lines depend on besides its messages."""
    return dataclasses.replace(chat, active_leaf_id=None, updated=None, revision=0)
