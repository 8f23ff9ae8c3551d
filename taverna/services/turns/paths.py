"""The end of a chat's path as turns read it, kept in memory between turns.

A turn needs the newest messages of the path, as far back as its budget, scan depth
and macros reach: a few hundred of a chat's thousands. Reading them costs tens of
milliseconds; a turn should cost less than that. So the ends of recently used paths
stay here, named by the chat revision they were read at. The next turn asks the store
which nodes changed since (one indexed query on the change log) and what the path now
ends with (a short climb from the new leaf), and splices: an appended message, a
swipe, an edit or a hide costs a few rows, not the path. Anything it cannot splice
(a change above the kept end, a path that moved far) reads the end again, so another
process's writes are always seen.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from taverna.model.chat import Chat, ChatState, Node, PathTail
from taverna.store.repository import Store

__all__ = ["PathEnds"]

# How far a splice climbs from the new leaf looking for a node it already holds.
_SPLICE_CLIMB = 4
# What stays: the ends of the chats used most recently, up to this many messages in all
# (a server with many people keeps every active chat's end; one 100,000-message chat
# keeps the few hundred its turns read), and never more than this many chats.
MESSAGES_HELD = 20_000
CHATS_HELD = 1_024
# A kept end grows by a splice each turn; past twice what turns read (and this much) its
# oldest messages go, so a long-running chat keeps about its window, not its whole story.
TRIM_SLACK = 32


@dataclass(frozen=True, slots=True)
class _Kept:
    """One path end as read at a revision."""

    revision: int
    leaf_id: str
    nodes: tuple[Node, ...]  # live messages, root side first
    before: int
    visible_before: int
    state: ChatState
    user_before: int | None = None  # the person's messages above `nodes`, once asked


class PathEnds:
    """Path ends per chat, of the most recently used chats: at most `max_chats` chats
    and `max_messages` messages in all (the newest chat's end is kept whatever its size)."""

    def __init__(
        self, store: Store, *, max_chats: int = CHATS_HELD, max_messages: int = MESSAGES_HELD
    ) -> None:
        self.store = store
        self.max_chats = max_chats
        self.max_messages = max_messages
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._held = 0  # messages in all the kept ends
        self._lock = threading.Lock()
        self.reads = 0  # full reads of a path end (for tests and benchmarks)
        self.splices = 0

    def tail(self, chat: Chat, leaf_id: str, want: int) -> PathTail:
        """At least the last `want` live messages down to `leaf_id` (fewer: the whole path).

        `leaf_id` off the chat's active path (a past reply) is read straight from the
        store and not kept.
        """
        want = max(want, 1)
        if leaf_id != chat.active_leaf_id:
            return self.store.path_tail(chat.id, leaf_id, limit=want)
        with self._lock:
            kept = self._kept.get(chat.id)
        found = self._current(chat, leaf_id, kept)
        if found is None or (len(found.nodes) < want and found.before > 0):
            found = self._read(chat, leaf_id, max(want, 2 * len(found.nodes) if found else want))
        elif len(found.nodes) > 2 * want + TRIM_SLACK:
            found = _cut(found, want + TRIM_SLACK)
        with self._lock:
            self._keep(chat.id, found)
        return _trimmed(found, want)

    def _keep(self, chat_id: str, found: _Kept) -> None:
        """Keep a chat's end as the most recent, letting the oldest go past the bounds."""
        old = self._kept.pop(chat_id, None)
        if old is not None:
            self._held -= len(old.nodes)
        self._kept[chat_id] = found
        self._held += len(found.nodes)
        while len(self._kept) > 1 and (
            len(self._kept) > self.max_chats or self._held > self.max_messages
        ):
            _, gone = self._kept.popitem(last=False)
            self._held -= len(gone.nodes)

    def user_messages_before(self, chat: Chat, tail: PathTail) -> int:
        """The person's messages above `tail` on its path (a walk of the path, done once
        per kept end: only the author's note interval needs it)."""
        if not tail.nodes or tail.before == 0:
            return 0
        first = tail.nodes[0]
        with self._lock:
            kept = self._kept.get(chat.id)
        if kept is not None and kept.nodes and kept.nodes[0].id == first.id:
            if kept.user_before is None:
                kept = replace(kept, user_before=self._users_above(chat.id, first))
                with self._lock:
                    held = self._kept.get(chat.id)
                    if held is not None:
                        self._held += len(kept.nodes) - len(held.nodes)
                        self._kept[chat.id] = kept
            assert kept.user_before is not None
            return kept.user_before
        return self._users_above(chat.id, first)

    def messages_held(self, chat_id: str) -> int:
        """The messages kept of a chat's path end (0: none kept)."""
        with self._lock:
            kept = self._kept.get(chat_id)
        return len(kept.nodes) if kept is not None else 0

    def forget(self, chat_id: str) -> None:
        with self._lock:
            gone = self._kept.pop(chat_id, None)
            if gone is not None:
                self._held -= len(gone.nodes)

    # ------------------------------------------------------------------ internals

    def _users_above(self, chat_id: str, first: Node) -> int:
        return self.store.user_messages_to(chat_id, first.parent_id) if first.parent_id else 0

    def _read(self, chat: Chat, leaf_id: str, limit: int) -> _Kept:
        self.reads += 1
        tail = self.store.path_tail(chat.id, leaf_id, limit=limit)
        return _Kept(
            chat.revision, leaf_id, tail.nodes, tail.before, tail.visible_before, tail.state
        )

    def _current(self, chat: Chat, leaf_id: str, kept: _Kept | None) -> _Kept | None:
        """`kept` brought up to the chat's revision, or None when it must be read again."""
        if kept is None or not kept.nodes or kept.revision > chat.revision:
            return None
        if kept.revision == chat.revision and kept.leaf_id == leaf_id:
            return kept
        changed = self.store.changed_nodes(chat.id, kept.revision)
        held = {node.id: index for index, node in enumerate(kept.nodes)}
        # Climb from the new leaf until the climb holds a node of the kept end: below
        # that node the climb is the path, read fresh; above it the kept end stands.
        climb = _SPLICE_CLIMB
        while True:
            above = self.store.path_tail(chat.id, leaf_id, limit=climb, counted=False)
            joint = next((i for i, node in enumerate(above.nodes) if node.id in held), None)
            if joint is not None or len(above.nodes) < climb:
                break
            if climb >= len(kept.nodes):
                return None
            climb *= 4
        if joint is None:  # the climb reached the root (or nothing is held): read again
            return None
        # The climb read its own nodes fresh; the other changed ones are read here (an
        # append's new nodes are all in the climb, so it usually reads none).
        need = sorted(changed - {node.id for node in above.nodes})
        fresh = {n.id: n for n in self.store.get_nodes(chat.id, need)} if need else {}
        if len(fresh) < len(need):
            return None  # a node is gone (an undone append): read again
        floor = above.nodes[joint].depth
        for node in fresh.values():
            # A changed node above the climb's reach that the kept end does not hold may
            # be on the path (a restored message): only a fresh read can tell.
            if node.depth < floor and node.id not in held:
                return None
        if len(above.nodes) < climb:
            # The climb reached the root: it is the whole path (a short chat), read fresh.
            self.splices += 1
            whole = _joined((), above.nodes, kept, held, changed)
            return _Kept(chat.revision, leaf_id, whole, 0, 0, above.state)
        prefix = [fresh.get(node.id, node) for node in kept.nodes[: held[above.nodes[joint].id]]]
        kept_prefix = tuple(node for node in prefix if not node.deleted)
        if kept_prefix:
            self.splices += 1
            return _Kept(
                chat.revision,
                leaf_id,
                _joined(kept_prefix, above.nodes[joint:], kept, held, changed),
                kept.before,
                kept.visible_before,
                above.state,
            )
        return None  # nothing of the kept end lies above the joint: read again


def _joined(
    prefix: tuple[Node, ...],
    climbed: Sequence[Node],
    kept: _Kept,
    held: Mapping[str, int],
    changed: AbstractSet[str],
) -> tuple[Node, ...]:
    """The kept prefix and the climb below it, as one path end. A climbed node the kept end
    holds unchanged stays the kept object (what was made of it last turn is found again,
    and its strings are not held twice); a new node below it holds its parent's id object."""
    nodes = list(prefix)
    for node in climbed:
        index = held.get(node.id)
        if index is not None and node.id not in changed:
            node = kept.nodes[index]
        elif nodes and node.parent_id is not nodes[-1].id and node.parent_id == nodes[-1].id:
            node = replace(node, parent_id=nodes[-1].id)
        nodes.append(node)
    return tuple(nodes)


def _trimmed(kept: _Kept, want: int) -> PathTail:
    """The last `want` messages of a kept end, counting the rest as above them."""
    last = _cut(kept, want)
    return PathTail(last.nodes, last.before, last.visible_before, last.state)


def _cut(kept: _Kept, want: int) -> _Kept:
    """A kept end's last `want` messages, the rest counted as above them."""
    if len(kept.nodes) <= want:
        return kept
    cut = len(kept.nodes) - want
    left = kept.nodes[:cut]
    return replace(
        kept,
        nodes=kept.nodes[cut:],
        before=kept.before + cut,
        visible_before=kept.visible_before + sum(1 for node in left if not node.hidden),
        user_before=None,  # counted again, from the new first message, when asked
    )
