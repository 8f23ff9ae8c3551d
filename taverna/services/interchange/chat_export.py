"""A conversation tree written out as SillyTavern chat files, one per named line, forks inside.

The active path becomes a JSONL that SillyTavern opens (candidates as `swipes`), and every
named branch and checkpoint its own JSONL linked by `main_chat`. Importing a plain chat and
exporting it gives back the same file.

Which leaves get a file: SillyTavern's branches and checkpoints are things a person named, so
those are files. A leftover no one named (the old turn after an edit-and-resend, a swipe with
its own continuation) is kept too, but not as a file: a file repeats the whole path up to its
fork, so a file per leftover costs the chat's length for each one, and a chat where every
message was resent once would need as many files as messages, quadratic in size. Instead the
leftover subtree is written once, beside the message it is an alternative to, under the
message key `taverna_forks` (its newest line as message objects, its own leftovers nested the
same way). SillyTavern keeps unknown message keys and shows the chat as it was; importing the
file here rebuilds the subtree, so the export stays linear in the number of nodes. Only a
leftover with no message beside it (under a named file's last message), or nested more than
MAX_FORK_NESTING forks deep, gets a `Branch #N` file.
A fork keeps the messages and their candidates, not the per-branch chat state at its end.
Files are made line by line and written as they are made, so memory holds the tree and one
path, never a whole file set.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from taverna.formats.json_text import TextLayout
from taverna.formats.st_chat import (
    FORKS,
    JSONL_LAYOUT,
    ChatDocument,
    ChatHeader,
    JsonValue,
    MessageLine,
    dump_json,
    humanized_date,
)
from taverna.model.chat import Chat, ChatState, ChatTree, Node, NodeRole, effective_state
from taverna.services.interchange.message_lines import (
    alive_children,
    header_for,
    message_for,
    metadata_for,
    swipe_group,
    with_link,
    without_link,
)
from taverna.services.interchange.st_record import ST, chat_record, layout_from, state_record

# How deep forks nest inside forks before the deeper ones get files of their own: JSON
# readers (SillyTavern's, Python's) stop at some nesting depth, and no chat should near it.
MAX_FORK_NESTING = 32


@dataclass(frozen=True)
class ExportedFile:
    """One SillyTavern chat file of an export: its name (no extension) and its document."""

    name: str
    document: ChatDocument
    main: bool


def safe_file_name(name: str, *, limit: int = 180) -> str:
    """A file name safe on every system for any title (reserved characters replaced)."""
    cleaned = unicodedata.normalize("NFC", name)
    cleaned = re.sub(r'[\x00-\x1f\x7f<>:"/\\|?*]', "_", cleaned).strip().rstrip(". ")
    if (
        not cleaned
        or cleaned.upper() in {"CON", "PRN", "AUX", "NUL"}
        or re.fullmatch(r"(?i)(COM|LPT)\d", cleaned)
    ):
        cleaned = f"_{cleaned}"
    if len(cleaned.encode("utf-8")) > limit:
        cleaned = cleaned.encode("utf-8")[:limit].decode("utf-8", "ignore").rstrip(". ")
    return cleaned


@dataclass(frozen=True)
class _FilePlan:
    """One file of an export: its name, the node it ends at, and what kind it is."""

    name: str
    leaf_id: str | None
    main: bool
    checkpoint: bool


class LineMemo:
    """The main file's message lines of a chat's last export, for the next one to reuse.

    A chat backed up again after a turn has a message or two changed: a line whose message
    and candidates are the same nodes at the same revisions (a node's revision moves with
    every change to it) is the same text, so it is not made again. Lines that carry links
    or forks, and a group chat's first, are made every time.
    """

    def __init__(self) -> None:
        self.lines: dict[str, tuple[tuple[tuple[str, int], ...], str]] = {}
        self.group_id: str | None = None

    @property
    def size(self) -> int:
        """The characters held."""
        return sum(len(text) for _, text in self.lines.values())


@dataclass
class StreamedFile:
    """One file of an export, its lines made only when read (header first, no line breaks).

    `layout`: the line breaks and file end of the file it came from (SillyTavern's for
    files made here).
    """

    name: str
    main: bool
    header: ChatHeader | None
    messages: Iterator[MessageLine]
    layout: TextLayout = JSONL_LAYOUT
    # The message lines as text instead of `messages` (some of them a memo's).
    texts: Iterator[str] | None = None

    def lines(self) -> Iterator[str]:
        if self.header is not None:
            yield dump_json(self.header.fields)
        if self.texts is not None:
            yield from self.texts
            return
        for message in self.messages:
            yield dump_json(message.fields)

    def text(self) -> Iterator[str]:
        """The file's text in pieces: the lines with the file's line breaks and end."""
        layout = self.layout
        if layout.bom:
            yield "\ufeff"
        for number, line in enumerate(self.lines()):
            if number:
                yield layout.newline
            yield line
        yield layout.end


class _Exporter:
    """Plans a chat's files, then makes each one's lines on demand.

    The tree is read once and shared; a file holds one path (its length, not the tree's)
    while it is written, so memory does not grow with the number of leaves or files.
    """

    def __init__(self, tree: ChatTree, memo: LineMemo | None = None) -> None:
        self.chat = tree.chat
        self.memo = memo
        # Tombstones are not exported: a live message under one hangs from the nearest live
        # ancestor, as it reads on the path (and as an import of the files rebuilds it).
        every = {n.id: n for n in tree.nodes}
        self.alive = []
        for node in tree.nodes:
            if node.deleted:
                continue
            parent = every.get(node.parent_id) if node.parent_id else None
            while parent is not None and parent.deleted:
                parent = every.get(parent.parent_id) if parent.parent_id else None
            if parent is None and node.parent_id is not None:
                node = node.with_changes(parent_id=None)
            elif parent is not None and parent.id != node.parent_id:
                node = node.with_changes(parent_id=parent.id)
            self.alive.append(node)
        self.by_id = {n.id: n for n in self.alive}
        self.selections = tree.selections
        self.kids: dict[str | None, list[Node]] = {}
        for node in self.alive:
            self.kids.setdefault(node.parent_id, []).append(node)
        for siblings in self.kids.values():
            siblings.sort(key=lambda n: n.id)
        chat_st = chat_record(self.chat)
        self.main_name = str(chat_st.get("file") or "") or _default_name(self.chat)
        self.plans = self._plan(tree)
        self._links_and_forks()
        # Nodes shown so far; a fork shows each leftover node once, in the first file that
        # reaches its place.
        self.taken = set(self.covered)

    def path_to(self, node_id: str | None) -> list[Node]:
        path: list[Node] = []
        current = self.by_id.get(node_id) if node_id else None
        while current is not None:
            path.append(current)
            current = self.by_id.get(current.parent_id) if current.parent_id else None
        path.reverse()
        return path

    def next_on_line(self, node: Node) -> Node | None:
        """Where a line goes on from `node`: the child chosen there last, else the newest."""
        children = alive_children(self.kids, node.id)
        if not children:
            return None
        chosen = self.selections.get(node.id)
        return next((c for c in children if c.id == chosen), children[-1])

    def newest_leaf(self, node: Node) -> Node:
        """The end of the line a subtree continues on from `node`."""
        while (child := self.next_on_line(node)) is not None:
            node = child
        return node

    def _plan(self, tree: ChatTree) -> list[_FilePlan]:
        chat = self.chat
        plans = [_FilePlan(self.main_name, chat.active_leaf_id, True, False)]
        used = self.used = {self.main_name}
        self.overflow: list[Node] = []
        for branch in tree.branches:
            if branch.id == chat.active_branch_id or branch.head_id is None:
                continue
            name = branch.name if branch.name != "main" else f"{self.main_name} (main)"
            plans.append(_FilePlan(_unique(name, used), branch.head_id, False, False))
        for checkpoint in tree.checkpoints:
            plans.append(_FilePlan(_unique(checkpoint.name, used), checkpoint.node_id, False, True))
        # Which file shows each node first, and the nodes every file shows.
        self.first_file: dict[str, int] = {}
        self.covered: set[str] = set()
        for index, plan in enumerate(plans):
            self._cover(index, plan)
        # A leftover with no place beside a shown message (under a file's last message, or
        # a root when no file shows one) gets a file through its newest line; the rest of
        # its subtree then forks off beside that file's messages.
        main_path = self.path_to(chat.active_leaf_id)
        while True:
            orphan = next((n for n in self.alive if self._orphan(n)), None)
            if orphan is None:
                break
            leaf = self.newest_leaf(orphan)
            fork = _fork_index(main_path, self.path_to(leaf.id))
            date = humanized_date(leaf.created or datetime.now(UTC))
            plan = _FilePlan(_unique(f"Branch #{fork} - {date}", used), leaf.id, False, False)
            plans.append(plan)
            self._cover(len(plans) - 1, plan)
        return plans

    def _cover(self, index: int, plan: _FilePlan) -> None:
        path = self.path_to(plan.leaf_id)
        on_path = {n.id for n in path}
        for node in path:
            self.first_file.setdefault(node.id, index)
            self.covered.update(c.id for c in swipe_group(node, self.kids, on_path))

    def _leftover(self, node: Node) -> bool:
        """A live node no file shows whose parent one does: the top of a leftover subtree."""
        if node.id in self.covered:
            return False
        return node.parent_id is None or node.parent_id in self.covered

    def _orphan(self, node: Node) -> bool:
        if not self._leftover(node):
            return False
        return not any(
            s.id in self.first_file for s in self.kids.get(node.parent_id, []) if s.id != node.id
        )

    def _links_and_forks(self) -> None:
        """Where each file forks off the main one, and where each leftover subtree goes."""
        main_path = self.path_to(self.chat.active_leaf_id)
        self.main_path_ids = [n.id for n in main_path]
        self.links: dict[int, list[tuple[str, bool]]] = {}
        self.fork_at: dict[int, int] = {}
        self.own: dict[int, bool] = {}
        for index, plan in enumerate(self.plans):
            if plan.main:
                continue
            path = self.path_to(plan.leaf_id)
            state = effective_state(path, self.chat.base_state)
            own = _state_file(state) == plan.name
            fork = len(path) - 1 if plan.checkpoint else _fork_index(main_path, path)
            self.fork_at[index], self.own[index] = fork, own
            on_main = 0 <= fork < len(main_path) and main_path[fork].id == path[fork].id
            if path and on_main and not own:
                # A link SillyTavern shows on the main chat; imported files carry theirs.
                self.links.setdefault(fork, []).append((plan.name, plan.checkpoint))
        # Each leftover subtree forks off beside the first shown sibling, in one file only.
        self.forks: dict[str, list[Node]] = {}
        for node in self.alive:
            if not self._leftover(node):
                continue
            siblings = [s for s in self.kids.get(node.parent_id, []) if s.id in self.first_file]
            beside = min(siblings, key=lambda s: self.first_file[s.id])
            self.forks.setdefault(beside.id, []).append(node)

    def files(self) -> Iterator[StreamedFile]:
        for index, plan in enumerate(self.plans):
            yield self._render(index, plan)
        while self.overflow:
            yield self._overflow_file(self.overflow.pop(0))

    def _render(self, index: int, plan: _FilePlan) -> StreamedFile:
        chat = self.chat
        path = self.path_to(plan.leaf_id)
        state = effective_state(path, chat.base_state)
        own = self.own.get(index, False)
        metadata = metadata_for(
            chat, state, main_chat=None if plan.main else self.main_name, own=own
        )
        header = header_for(chat, state, metadata, own=own)
        record = state_record(state) if own else chat_record(chat)
        if plan.main and self.memo is not None:
            texts = self._main_texts(plan, path, header, self.memo)
            return StreamedFile(plan.name, True, header, iter(()), layout_from(record), texts)
        return StreamedFile(
            plan.name,
            plan.main,
            header,
            self._messages(index, plan, path, header),
            layout_from(record),
        )

    def _messages(
        self, index: int, plan: _FilePlan, path: list[Node], header: ChatHeader | None
    ) -> Iterator[MessageLine]:
        on_path = {n.id for n in path}
        fork = self.fork_at.get(index, -1)
        for position, node in enumerate(path):
            yield self._message_at(index, plan, position, node, on_path, fork, header)

    def _main_texts(
        self, plan: _FilePlan, path: list[Node], header: ChatHeader | None, memo: LineMemo
    ) -> Iterator[str]:
        """The main file's message lines, each taken from `memo` where its nodes are
        unchanged; `memo` then holds this export's lines."""
        if memo.group_id != self.chat.group_id:
            memo.lines, memo.group_id = {}, self.chat.group_id
        on_path = {n.id for n in path}
        lines: dict[str, tuple[tuple[tuple[str, int], ...], str]] = {}
        for position, node in enumerate(path):
            group = swipe_group(node, self.kids, on_path)
            varies = (
                position in self.links
                or (self.first_file.get(node.id) == 0 and node.id in self.forks)
                or (position == 0 and self.chat.group_id is not None)
                or any(c.created is None for c in group)  # dated as it is written
            )
            if varies:
                yield dump_json(
                    self._message_at(0, plan, position, node, on_path, -1, header).fields
                )
                continue
            key = tuple((c.id, c.revision) for c in group)
            kept = memo.lines.get(node.id)
            if kept is not None and kept[0] == key:
                text = kept[1]
            else:
                message = self._message_at(0, plan, position, node, on_path, -1, header, group)
                text = dump_json(message.fields)
            lines[node.id] = (key, text)
            yield text
        memo.lines = lines

    def _message_at(
        self,
        index: int,
        plan: _FilePlan,
        position: int,
        node: Node,
        on_path: set[str],
        fork: int,
        header: ChatHeader | None,
        group: list[Node] | None = None,
    ) -> MessageLine:
        """The line of the `position`th message of a file's path."""
        message = message_for(node, self.kids, on_path, group=group)
        if position == 0 and header is None and self.chat.group_id and not chat_record(self.chat):
            # formats-chat.md §6.2: the first line of a group chat carries `is_group`.
            message = message.with_fields(is_group=True)
        if (
            self.chat.group_id
            and node.role is NodeRole.ASSISTANT
            and node.speaker
            and "original_avatar" not in message.fields
        ):
            # formats-chat.md §6.2: a member's message names its card file, which
            # SillyTavern shows the avatar of (a member made here: its name's file)
            card = f"{node.speaker}.png"
            message = message.with_fields(
                original_avatar=card, force_avatar=f"/thumbnail?type=avatar&file={card}"
            )
        if plan.main:
            for name, checkpoint in self.links.get(position, ()):
                message = with_link(message, name, checkpoint=checkpoint)
        elif position == fork:
            message = without_link(message, plan.name)
        if self.first_file.get(node.id) == index and node.id in self.forks:
            branches: list[JsonValue] = []
            taken = self.taken
            for root in self.forks[node.id]:
                if root.id not in taken:
                    branches.append(self._fork(root, taken))
            message = message.with_fields(**{FORKS: branches})
        return message

    def _fork(self, root: Node, taken: set[str], nesting: int = 1) -> list[JsonValue]:
        """A leftover subtree as message objects: its newest line, its own forks inside."""
        line = [root]
        while (child := self.next_on_line(line[-1])) is not None:
            line.append(child)
        on_path = {n.id for n in line}
        groups = []
        for node in line:
            group = swipe_group(node, self.kids, on_path, taken)
            taken.update(c.id for c in group)
            groups.append(group)
        taken.update(on_path)
        out: list[JsonValue] = []
        for node, group in zip(line, groups, strict=True):
            message = message_for(node, self.kids, on_path, group=group)
            nested = [
                s
                for s in alive_children(self.kids, node.parent_id)
                if s.id not in taken and s.id != node.id
            ]
            if nested:
                inner: list[JsonValue] = []
                for other in nested:
                    if other.id in taken:
                        continue
                    if nesting >= MAX_FORK_NESTING:
                        # Deeper than JSON readers nest: a file of its own, after the others.
                        taken.add(other.id)
                        self.overflow.append(other)
                    else:
                        inner.append(self._fork(other, taken, nesting + 1))
                if inner:
                    message = message.with_fields(**{FORKS: inner})
            out.append(message.fields)
        return out

    def _overflow_file(self, root: Node) -> StreamedFile:
        """A fork nested too deep, as a branch file: the path to it, then its subtree."""
        prefix = self.path_to(root.parent_id) if root.parent_id else []
        leaf = self.newest_leaf(root)
        state = effective_state(self.path_to(leaf.id), self.chat.base_state)
        date = humanized_date(leaf.created or datetime.now(UTC))
        name = _unique(f"Branch #{len(prefix)} - {date}", self.used)
        metadata = metadata_for(self.chat, state, main_chat=self.main_name, own=False)
        header = header_for(self.chat, state, metadata, own=False)

        def messages() -> Iterator[MessageLine]:
            on_path = {n.id for n in prefix}
            for node in prefix:
                yield message_for(node, self.kids, on_path)
            for fields in self._fork(root, self.taken):
                assert isinstance(fields, dict)
                yield MessageLine(fields)

        return StreamedFile(name, False, header, messages())


def export_stream(tree: ChatTree, memo: LineMemo | None = None) -> Iterator[StreamedFile]:
    """The SillyTavern files of a chat, each made line by line as it is read (main first).

    With `memo`, the main file reuses the lines of the export `memo` last saw.
    """
    return _Exporter(tree, memo).files()


def main_jsonl(tree: ChatTree, memo: LineMemo | None = None) -> str:
    """The active path as one SillyTavern JSONL text (the other files are not made)."""
    return "".join(next(export_stream(tree, memo)).text())


def export_tree(tree: ChatTree) -> list[ExportedFile]:
    """The SillyTavern files of a chat: the active path first, then branches and checkpoints."""
    return [
        ExportedFile(
            item.name,
            ChatDocument(item.header, tuple(item.messages), layout=item.layout),
            item.main,
        )
        for item in export_stream(tree)
    ]


def _state_file(state: ChatState) -> str | None:
    st = state.extras.get(ST)
    return str(st.get("file")) if isinstance(st, Mapping) and st.get("file") else None


def _fork_index(main_path: Sequence[Node], path: Sequence[Node]) -> int:
    """Index of the last message a path shares with the main path (-1: none)."""
    index = -1
    for a, b in zip(main_path, path, strict=False):
        if a.id != b.id:
            break
        index += 1
    return index


def _unique(name: str, used: set[str]) -> str:
    base = safe_file_name(name)
    candidate, n = base, 2
    while candidate in used:
        candidate = f"{base} ({n})"
        n += 1
    used.add(candidate)
    return candidate


def _default_name(chat: Chat) -> str:
    who = chat.characters[0].name if chat.characters else chat.title
    return f"{who} - {humanized_date(chat.created or datetime.now(UTC))}"
