"""Read-only views of a whole chat: its tree for the tree view, its files for download."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from taverna.formats.st_chat import write_chat
from taverna.services.chats import ChatService
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
