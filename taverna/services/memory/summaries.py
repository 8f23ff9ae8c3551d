"""A chat's summaries: read, record, edit and remove them on the tree.

A summary is state recorded on the node it was made at (the newest message it covers,
`ChatState.summary_at`), so it follows the path with no roll-back code: deleting the
messages up to it, editing and resending before it, branching above it or switching a
candidate above it leaves it behind. A summary whose own message was deleted (a
restorable tombstone) is not in force; restoring the message brings it back.

Making a summary with a model is `taverna.services.turns.summary_generation`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import ChatState, Node
from taverna.model.prompt import Prompt
from taverna.model.summary import SummarySettings
from taverna.services.chats.service import ChatService, WriteResult
from taverna.store.repository import Store


@dataclass(frozen=True, slots=True)
class SummaryInfo:
    """One summary on the active path.

    `node_id`: the message it belongs to (None for a summary of an older import that
    did not record one). `number`: its place among the path's summaries, 1 the oldest.
    `covers`: how many messages of the path (deleted ones not counted) it covers, from
    the start up to its own message.
    """

    text: str
    node_id: str | None
    number: int
    covers: int


def in_force(
    store: Store, chat_id: str, state: ChatState, base: ChatState, known: Mapping[str, Node]
) -> tuple[str, str]:
    """The summary `state` puts in force and the id of its message ("" for none).

    The message's own state holds the summary's text (later states keep a copy of what
    was in force when they were recorded); a summary whose message is deleted, or was
    removed from it, yields to the one before it. `known` holds nodes already read (the
    turn's path end), so a turn reads the store only for an older message.
    """
    seen = 0
    while state.summary and state.summary_at:
        node = known.get(state.summary_at)
        if node is None:
            try:
                node = store.get_node(chat_id, state.summary_at)
            except NotFound:
                return "", ""
        if not node.deleted and carries_summary(node):
            assert node.state is not None and node.state.summary is not None
            return node.state.summary, node.id
        seen += 1
        if node.parent_id is None or seen > 10_000:
            state = base
            break
        state = store.state_at(chat_id, node.parent_id)
    if state.summary and not state.summary_at:
        return state.summary, ""  # recorded before summaries named their message
    return "", ""


def covered_ids(nodes: Sequence[Node], carrier_id: str, keep: int) -> set[str]:
    """The messages of a path (its end, oldest first) a summary made at `carrier_id` hides:
    those up to and including its own message, but for the newest `keep` of them. Nothing
    is written: removing the summary (or leaving its message) shows them again."""
    ids = [n.id for n in nodes if not n.deleted]
    if carrier_id not in ids:
        return set()
    covered = ids[: ids.index(carrier_id) + 1]
    return set(covered[: max(0, len(covered) - keep)])


def hidden_count(info: SummaryInfo, settings: SummarySettings) -> int:
    """How many of the path's first messages the summary in force hides from the prompt."""
    if not settings.hide_covered or not settings.places_summary or info.node_id is None:
        return 0
    return max(0, info.covers - settings.hide_keep)


def carries_summary(node: Node) -> bool:
    """Whether a summary was made at this node (its own state says so)."""
    return node.state is not None and node.state.summary_at == node.id and bool(node.state.summary)


def summaries_along(nodes: Sequence[Node]) -> list[SummaryInfo]:
    """The summaries made along a path (oldest first), deleted messages' left out."""
    out: list[SummaryInfo] = []
    live = 0
    for node in nodes:
        if node.deleted:
            continue
        live += 1
        if carries_summary(node):
            assert node.state is not None and node.state.summary is not None
            out.append(SummaryInfo(node.state.summary, node.id, len(out) + 1, live))
    return out


class SummaryService:
    """A chat's summaries as a person reads and changes them (the page, the CLI)."""

    def __init__(self, chats: ChatService) -> None:
        self.chats = chats
        self.store = chats.store

    def along(self, chat_id: str) -> list[SummaryInfo]:
        """Every summary on the active path, oldest first."""
        return summaries_along(self.chats.active_path(chat_id).nodes)

    def current(self, chat_id: str) -> SummaryInfo | None:
        """The summary in force at the end of the active path, if any."""
        path = self.chats.active_path(chat_id)
        text, at = in_force(
            self.store, chat_id, path.state, path.chat.base_state, {n.id: n for n in path.nodes}
        )
        if not text:
            return None
        for info in reversed(summaries_along(path.nodes)):
            if info.node_id == at:
                return info
        return SummaryInfo(text, at or None, 0, 0)

    def record(self, chat_id: str, node_id: str, text: str, *, revision: int) -> WriteResult:
        """A new summary made at `node_id` (the newest message it covers)."""
        return self.chats.write_summary(chat_id, node_id, _clean(text), revision=revision)

    def edit(self, chat_id: str, text: str, *, revision: int) -> WriteResult:
        """Change the text of the summary in force (it stays with its message)."""
        text = _clean(text)
        current = self.current(chat_id)
        if current is None or current.node_id is None:
            leaf = self.chats.get_chat(chat_id).active_leaf_id
            if leaf is None:
                raise TavernaError(
                    "an empty chat has nothing to summarize",
                    field="chat_id",
                    code="summary_of_empty_chat",
                )
            return self.record(chat_id, leaf, text, revision=revision)
        return self.record(chat_id, current.node_id, text, revision=revision)

    def remove(self, chat_id: str, *, revision: int) -> WriteResult:
        """Remove the summary in force; the one before it (if any) is in force again."""
        current = self.current(chat_id)
        if current is None or current.node_id is None:
            raise NotFound(
                "this chat has no summary to remove",
                field="summary",
                code="this_chat_has_no_summary",
            )
        return self.chats.write_summary(chat_id, current.node_id, None, revision=revision)


def _clean(text: str) -> str:
    text = text.strip()
    if not text:
        raise TavernaError(
            "a summary needs some text", field="text", code="summary_needs_some_text"
        )
    return text


def went_in(prompt: Prompt, info: SummaryInfo) -> bool:
    """Whether the summary's text is part of the prompt."""
    if prompt.kind == "text":
        return info.text in prompt.text
    return any(info.text in message.content for message in prompt.messages)


def describe(prompt: Prompt, info: SummaryInfo | None, *, width: int = 60) -> str:
    """One line for a person: which summary is in force, its message, and whether it went in."""
    if info is None:
        return "summary: none"
    preview = " ".join(info.text.split())
    if len(preview) > width:
        preview = preview[: width - 1] + "…"
    where = f"#{info.number} on message #{info.covers - 1}" if info.number else "(imported)"
    state = (
        "in this prompt"
        if went_in(prompt, info)
        else "not in this prompt (it covers the last message, or its position is none)"
    )
    return f"summary {where}, {state}: {preview}"
