"""Branches: named pointers to a leaf, each a path of the chat to switch to.

A part of `ChatService`, the one writer of the tree.
"""

from __future__ import annotations

import threading

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import Branch, BranchSummary, new_id
from taverna.services.chats.write_rules import WriteResult, WriteRules
from taverna.services.kept_bytes import KeptBytes, text_bytes
from taverna.services.plugins import EventName
from taverna.store.repository import ChatWriter

# The bytes of the branch lists kept, each with the chat revision it was read at: the
# chats viewed last.
BRANCH_LISTS_BYTES = 2 << 20
# What a branch's summary holds besides its texts (its ids, times and counts).
BRANCH_OVERHEAD = 240


def branch_list_bytes(chat_id: str, kept: tuple[int, list[BranchSummary]]) -> int:
    """About what a chat's kept branch list holds: names, and each branch's last message."""
    texts = [chat_id]
    for listed in kept[1]:
        texts.append(listed.branch.name)
        if listed.last_message is not None:
            texts.append(listed.last_message.content)
    return text_bytes(texts) + BRANCH_OVERHEAD * (len(kept[1]) + 1)


def kept_branch_lists() -> KeptBytes[str, tuple[int, list[BranchSummary]]]:
    """The branch lists a chat service keeps, in BRANCH_LISTS_BYTES."""
    return KeptBytes(BRANCH_LISTS_BYTES, branch_list_bytes)


class Branches(WriteRules):
    """The chat service's branches (a part of `ChatService`)."""

    _branches: KeptBytes[str, tuple[int, list[BranchSummary]]]
    _branches_lock: threading.Lock

    def list_branches(self, chat_id: str, *, revision: int | None = None) -> list[BranchSummary]:
        """The chat's branches. `revision`: the revision the caller read the chat at; the
        list made at that revision is kept and given again (every write to a chat moves its
        revision on, on any worker), so a page's view after each reply costs no queries."""
        if revision is None:
            return self.store.branches(chat_id)
        with self._branches_lock:
            kept = self._branches.get(chat_id)
            if kept is not None and kept[0] == revision:
                return list(kept[1])
        branches = self.store.branches(chat_id)
        with self._branches_lock:
            kept = self._branches.get(chat_id)
            if kept is None or kept[0] <= revision:
                self._branches.put(chat_id, (revision, branches))
        return list(branches)

    def branch_from(
        self, chat_id: str, node_id: str, name: str, *, revision: int, switch: bool = True
    ) -> WriteResult:
        """A named branch ending at `node_id`; switched to unless told not to.

        The branch's path is the path to `node_id`, so it inherits all state up to there.
        """
        name = self._name(name)
        with self.store.write(chat_id, revision=revision, label="branch") as w:
            node = w.get_node(node_id)
            self._require_alive(node)
            self._unique_branch_name(w, name)
            branch = Branch(
                id=new_id(), chat_id=chat_id, name=name, head_id=node_id, created=self.clock()
            )
            w.put_branch(branch)
            if switch:
                self._activate(w, node_id, branch_id=branch.id)
        return WriteResult(w.chat, node)

    def switch_branch(self, chat_id: str, branch_id: str, *, revision: int) -> WriteResult:
        """Make a branch active: the path becomes the path to its head."""
        with self.store.write(chat_id, revision=revision, label="switch branch") as w:
            branch = self._branch(w, branch_id)
            self._activate(w, branch.head_id, branch_id=branch.id)
        self._emit(EventName.CHAT_CHANGED, chat_id, None, kind="switch branch")
        return WriteResult(w.chat)

    def rename_branch(
        self, chat_id: str, branch_id: str, name: str, *, revision: int
    ) -> WriteResult:
        name = self._name(name)
        with self.store.write(chat_id, revision=revision, label="rename branch") as w:
            branch = self._branch(w, branch_id)
            if branch.name != name:
                self._unique_branch_name(w, name)
                w.put_branch(Branch(branch.id, chat_id, name, branch.head_id, branch.created))
        return WriteResult(w.chat)

    def delete_branch(self, chat_id: str, branch_id: str, *, revision: int) -> WriteResult:
        """Remove a branch pointer (not its messages); the active branch cannot go."""
        with self.store.write(chat_id, revision=revision, label="delete branch") as w:
            self._branch(w, branch_id)
            if w.chat.active_branch_id == branch_id:
                raise TavernaError(
                    "switch to another branch first",
                    field="branch_id",
                    code="switch_to_another_branch_first",
                )
            w.remove_branch(branch_id)
        return WriteResult(w.chat)

    @staticmethod
    def _branch(w: ChatWriter, branch_id: str) -> Branch:
        for branch in w.branches():
            if branch.id == branch_id:
                return branch
        raise NotFound("no such branch", field="branch_id", code="no_such_branch")

    @staticmethod
    def _unique_branch_name(w: ChatWriter, name: str) -> None:
        if any(b.name == name for b in w.branches()):
            raise TavernaError(
                f"a branch named {name!r} exists",
                field="name",
                code="branch_named_exists",
                params={"name": str(name)},
            )
