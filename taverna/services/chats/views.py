"""Read-only views of a whole chat: its tree for the tree view, its files for download."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taverna.formats.st_chat import write_chat
from taverna.model.chat import ChatTree, Node
from taverna.services.chats.service import ChatService
from taverna.services.interchange import InterchangeService


def export_archive(chats: ChatService, chat_id: str) -> tuple[bytes, str, str]:
    """A chat's SillyTavern files for download: `(bytes, file name, media type)`.

    A chat without branches is one JSONL; with branches or checkpoints, a zip of the
    main file and one file per branch, linked as SillyTavern links them.
    """
    files = InterchangeService(chats.store).export_files(chat_id)
    texts = [(f"{item.name}.jsonl", write_chat(item.document)) for item in files]
    if len(texts) == 1:
        name, text = texts[0]
        return text.encode("utf-8"), name, "application/jsonl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in texts:
            archive.writestr(name, text)
    return buffer.getvalue(), f"{files[0].name}.zip", "application/zip"


def chat_tree(chats: ChatService, chat_id: str) -> list[dict[str, Any]]:
    """The whole tree for the tree view, depth-first, deleted messages left out.

    `level` grows only at forks, so a long chain without alternatives stays flat;
    `shown` marks the nodes worth a line (roots, the candidates of a fork, leaves and
    branch heads); `on_path` marks the active path.
    """
    tree = chats.store.tree(chat_id)
    alive = {n.id for n in tree.nodes if not n.deleted}
    kids = {k: [n for n in v if n.id in alive] for k, v in tree.children().items()}
    heads: dict[str, list[str]] = {}
    for branch in tree.branches:
        if branch.head_id:
            heads.setdefault(branch.head_id, []).append(branch.name)
    marks: dict[str, list[str]] = {}
    for checkpoint in chats.list_checkpoints(chat_id):
        marks.setdefault(checkpoint.node_id, []).append(checkpoint.name)
    on_path = {n.id for n in chats.active_path(chat_id).nodes}
    out: list[dict[str, Any]] = []
    stack = [(n, 0, True) for n in reversed(kids.get(None, []))]
    while stack:
        node, level, fork_child = stack.pop()
        children = kids.get(node.id, [])
        out.append(
            {
                "id": node.id,
                "parent_id": node.parent_id,
                "depth": node.depth,
                "level": level,
                "role": node.role.value,
                "name": node.speaker,
                "snippet": node.content[:120],
                "on_path": node.id in on_path,
                "branches": heads.get(node.id, []),
                "checkpoints": marks.get(node.id, []),
                "shown": fork_child or not children or node.id in heads or node.id in marks,
            }
        )
        forked = len(children) > 1
        for child in reversed(children):
            stack.append((child, level + (1 if forked else 0), forked))
    return out


def _walk_down(start: Node, kids: dict[str | None, list[Node]], chosen: Mapping[str, str]) -> Node:
    """Where the path goes on from `start`: the remembered choice at each fork, as far
    as it was remembered (the way a switch to `start` continues)."""
    node = start
    while True:
        pick = chosen.get(node.id)
        following = next((c for c in kids.get(node.id, []) if c.id == pick), None)
        if following is None:
            return node
        node = following


def candidates_follow(
    chats: ChatService, chat_id: str, node_ids: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The candidates at each named message's place and how many messages follow each on
    the way it last went: what a switch at a fork in the middle leaves behind, and where.
    Ids that are no live message of the chat are left out."""
    forks = _Forks.of(chats.store.tree(chat_id))
    by_id, kids = forks.by_id, forks.kids
    out: dict[str, list[dict[str, Any]]] = {}
    for node_id in node_ids:
        if node_id not in by_id:
            continue
        found = []
        for index, candidate in enumerate(kids[by_id[node_id].parent_id], start=1):
            end = _walk_down(candidate, kids, forks.tree.selections)
            found.append(
                {
                    "id": candidate.id,
                    "index": index,
                    "on_path": candidate.id in forks.on_path,
                    "follow": end.depth - candidate.depth,
                }
            )
        out[node_id] = found
    return out


def _path_ids(leaf_id: str | None, by_id: Mapping[str, Node]) -> set[str]:
    ids: set[str] = set()
    node = by_id.get(leaf_id) if leaf_id else None
    while node is not None:
        ids.add(node.id)
        node = by_id.get(node.parent_id) if node.parent_id else None
    return ids


def chat_graph(chats: ChatService, chat_id: str) -> dict[str, Any]:
    """The chat's forks as a small graph for the tree view: its size follows the forks,
    not the messages, so a chat of thousands of messages draws in a few rows.

    A segment is a run of messages with one way on; it ends where two or more ways go on
    (a fork) or at a leaf. Candidates that lead nowhere (a swipe never answered, not on
    the path, no branch or checkpoint there) are counted on their place, not drawn.
    `lane` is the segment's fork nesting, for the graph's columns.
    """
    forks = _Forks.of(chats.store.tree(chat_id))
    segments: list[dict[str, Any]] = []
    roots = forks.kids.get(None, [])
    drawn_roots = [n for n in roots if forks.worth_drawing(n)] or roots[-1:]
    stack: list[tuple[Node, str | None, int, int]] = [
        (n, None, 0, len(roots) - len(drawn_roots)) for n in reversed(drawn_roots)
    ]
    while stack:
        first, parent, lane, spare = stack.pop()
        segment, last, ends_here = forks.segment(first, parent, lane, spare)
        segments.append(segment)
        # The way the path takes (else the one chosen last) goes on in this lane, drawn
        # after the others; each other way gets a lane of its own to the right, the first
        # drawn the farthest, so no line crosses a row it does not lead to.
        if ends_here:
            main = next((c for c in ends_here if c.id in forks.on_path), None) or forks.chosen(
                last.id, ends_here
            )
            sides = [c for c in ends_here if c is not main]
            stack.append((main, first.id, lane, 0))
            for i, child in reversed(list(enumerate(sides))):
                stack.append((child, first.id, lane + len(sides) - i, 0))
    here = forks.by_id.get(forks.leaf) if forks.leaf else None
    return {
        "segments": segments,
        "messages": len(forks.by_id),
        "here": _snippet(here) if here else None,
    }


@dataclass(frozen=True, slots=True)
class _Forks:
    """A chat's live messages by parent, with what makes a message worth drawing: a way
    on below it, a place on the active path, a branch's head or a checkpoint."""

    tree: ChatTree
    by_id: dict[str, Node]
    kids: dict[str | None, list[Node]]
    leaf: str | None
    on_path: set[str]
    heads: dict[str, list[dict[str, Any]]]
    marks: dict[str, list[dict[str, Any]]]

    @classmethod
    def of(cls, tree: ChatTree) -> _Forks:
        alive = [n for n in tree.nodes if not n.deleted]
        by_id = {n.id: n for n in alive}
        kids: dict[str | None, list[Node]] = {}
        for node in alive:
            kids.setdefault(node.parent_id, []).append(node)
        for siblings in kids.values():
            siblings.sort(key=lambda n: n.id)
        leaf = tree.chat.active_leaf_id if tree.chat.active_leaf_id in by_id else None
        heads: dict[str, list[dict[str, Any]]] = {}
        for branch in tree.branches:
            if branch.head_id in by_id:
                active = branch.id == tree.chat.active_branch_id
                heads.setdefault(branch.head_id, []).append(
                    {"id": branch.id, "name": branch.name, "active": active}
                )
        marks: dict[str, list[dict[str, Any]]] = {}
        for checkpoint in tree.checkpoints:
            if checkpoint.node_id in by_id:
                marks.setdefault(checkpoint.node_id, []).append(
                    {"id": checkpoint.id, "name": checkpoint.name}
                )
        return cls(tree, by_id, kids, leaf, _path_ids(leaf, by_id), heads, marks)

    def worth_drawing(self, node: Node) -> bool:
        return (
            bool(self.kids.get(node.id))
            or node.id in self.on_path
            or node.id in self.heads
            or node.id in self.marks
        )

    def chosen(self, node_id: str, among: list[Node]) -> Node:
        """The one of `among` chosen last below `node_id` (else the newest)."""
        selected = self.tree.selections.get(node_id)
        return next((c for c in among if c.id == selected), among[-1])

    def segment(
        self, first: Node, parent: str | None, lane: int, spare: int
    ) -> tuple[dict[str, Any], Node, list[Node]]:
        """The segment from `first` down to where two or more ways go on (or a leaf): the
        segment, its last message and the ways on below it."""
        node = first
        count = 1
        unused = 0
        branches: list[dict[str, Any]] = []
        checkpoints: list[dict[str, Any]] = []
        while True:
            at = {"depth": node.depth, "node_id": node.id}
            branches += [{**b, **at} for b in self.heads.get(node.id, [])]
            checkpoints += [{**c, **at} for c in self.marks.get(node.id, [])]
            children = self.kids.get(node.id, [])
            ways = [c for c in children if self.worth_drawing(c)]
            if len(children) == 1 or (children and not ways):
                # One way on (an unused candidate beside it is only counted).
                following = self.chosen(node.id, children)
            elif len(ways) == 1:
                following = ways[0]
            else:
                break
            unused += len(children) - 1
            node = following
            count += 1
        ends_here = [c for c in self.kids.get(node.id, []) if self.worth_drawing(c)]
        unused += len(self.kids.get(node.id, [])) - len(ends_here)
        leaf = self.leaf
        segment = {
            "id": first.id,
            "parent": parent,
            "lane": lane,
            "first": _snippet(first),
            "last": _snippet(node),
            "count": count,
            "unused": unused + spare,
            "on_path": first.id in self.on_path,
            "here": leaf is not None
            and leaf in self.on_path
            and _holds(first, node, leaf, self.by_id),
            "branches": branches,
            "checkpoints": checkpoints,
            "forks": len(ends_here),
        }
        return segment, node, ends_here


def _snippet(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "depth": node.depth,
        "role": node.role.value,
        "name": node.speaker,
        "text": node.content[:100],
    }


def _holds(first: Node, last: Node, leaf_id: str, by_id: Mapping[str, Node]) -> bool:
    """Whether the active leaf lies on the run from `first` down to `last`."""
    leaf = by_id[leaf_id]
    if not first.depth <= leaf.depth <= last.depth:
        return False
    node: Node | None = last
    while node is not None and node.depth > leaf.depth:
        node = by_id.get(node.parent_id) if node.parent_id else None
    return node is not None and node.id == leaf_id
