"""Read-only views of a whole chat: its tree for the tree view, its files for download."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import Any

from taverna.formats.st_chat import write_chat
from taverna.model.chat import Node
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
    tree = chats.store.tree(chat_id)
    alive = [n for n in tree.nodes if not n.deleted]
    by_id = {n.id: n for n in alive}
    kids: dict[str | None, list[Node]] = {}
    for node in alive:
        kids.setdefault(node.parent_id, []).append(node)
    for siblings in kids.values():
        siblings.sort(key=lambda n: n.id)
    on_path = _path_ids(tree.chat.active_leaf_id, by_id)
    out: dict[str, list[dict[str, Any]]] = {}
    for node_id in node_ids:
        if node_id not in by_id:
            continue
        found = []
        for index, candidate in enumerate(kids[by_id[node_id].parent_id], start=1):
            end = _walk_down(candidate, kids, tree.selections)
            found.append(
                {
                    "id": candidate.id,
                    "index": index,
                    "on_path": candidate.id in on_path,
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
    tree = chats.store.tree(chat_id)
    alive = [n for n in tree.nodes if not n.deleted]
    by_id = {n.id: n for n in alive}
    kids: dict[str | None, list[Node]] = {}
    for node in alive:
        kids.setdefault(node.parent_id, []).append(node)
    for siblings in kids.values():
        siblings.sort(key=lambda n: n.id)
    leaf = tree.chat.active_leaf_id if tree.chat.active_leaf_id in by_id else None
    on_path = _path_ids(leaf, by_id)
    heads: dict[str, list[dict[str, Any]]] = {}
    for branch in tree.branches:
        if branch.head_id in by_id:
            heads.setdefault(branch.head_id, []).append(
                {
                    "id": branch.id,
                    "name": branch.name,
                    "active": branch.id == tree.chat.active_branch_id,
                }
            )
    marks: dict[str, list[dict[str, Any]]] = {}
    for checkpoint in tree.checkpoints:
        if checkpoint.node_id in by_id:
            marks.setdefault(checkpoint.node_id, []).append(
                {"id": checkpoint.id, "name": checkpoint.name}
            )

    def worth_drawing(node: Node) -> bool:
        return bool(kids.get(node.id)) or node.id in on_path or node.id in heads or node.id in marks

    def snippet(node: Node) -> dict[str, Any]:
        return {
            "id": node.id,
            "depth": node.depth,
            "role": node.role.value,
            "name": node.speaker,
            "text": node.content[:100],
        }

    segments: list[dict[str, Any]] = []
    roots = kids.get(None, [])
    drawn_roots = [n for n in roots if worth_drawing(n)] or roots[-1:]
    stack: list[tuple[Node, str | None, int, int]] = [
        (n, None, 0, len(roots) - len(drawn_roots)) for n in reversed(drawn_roots)
    ]
    while stack:
        first, parent, lane, spare = stack.pop()
        node = first
        count = 1
        unused = 0
        branches: list[dict[str, Any]] = []
        checkpoints: list[dict[str, Any]] = []
        while True:
            branches += [
                {**b, "depth": node.depth, "node_id": node.id} for b in heads.get(node.id, [])
            ]
            checkpoints += [
                {**c, "depth": node.depth, "node_id": node.id} for c in marks.get(node.id, [])
            ]
            children = kids.get(node.id, [])
            ways = [c for c in children if worth_drawing(c)]
            if len(children) == 1 or (children and not ways):
                # One way on (an unused candidate beside it is only counted).
                following = next(
                    (c for c in children if c.id == tree.selections.get(node.id)), children[-1]
                )
                unused += len(children) - 1
                node = following
                count += 1
                continue
            if len(ways) == 1:
                unused += len(children) - 1
                node = ways[0]
                count += 1
                continue
            break
        segment_id = first.id
        ends_here = [c for c in kids.get(node.id, []) if worth_drawing(c)]
        unused += len(kids.get(node.id, [])) - len(ends_here)
        segments.append(
            {
                "id": segment_id,
                "parent": parent,
                "lane": lane,
                "first": snippet(first),
                "last": snippet(node),
                "count": count,
                "unused": unused + spare,
                "on_path": first.id in on_path,
                "here": leaf is not None and leaf in on_path and _holds(first, node, leaf, by_id),
                "branches": branches,
                "checkpoints": checkpoints,
                "forks": len(ends_here),
            }
        )
        # The way the path takes (else the one chosen last) goes on in this lane, drawn
        # after the others; each other way gets a lane of its own to the right, the first
        # drawn the farthest, so no line crosses a row it does not lead to.
        if ends_here:
            main = next((c for c in ends_here if c.id in on_path), None) or next(
                (c for c in ends_here if c.id == tree.selections.get(node.id)), ends_here[-1]
            )
            sides = [c for c in ends_here if c is not main]
            stack.append((main, segment_id, lane, 0))
            for i, child in reversed(list(enumerate(sides))):
                stack.append((child, segment_id, lane + len(sides) - i, 0))
    here = by_id.get(leaf) if leaf else None
    return {
        "segments": segments,
        "messages": len(alive),
        "here": snippet(here) if here else None,
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
