"""Summaries as state on the tree: they follow the path, and SillyTavern's chats keep them."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from taverna.formats.st_chat import read_chat, write_chat
from taverna.model.chat import NodeRole
from taverna.services.chats.service import ChatService
from taverna.services.interchange import build_tree, export_tree
from taverna.services.memory.summaries import SummaryService, in_force
from taverna.store.sql import SqlStore
from taverna.store.testing import backends, temporary_store
from tests.services.test_interchange_roundtrip import as_tree

USER, BOT = NodeRole.USER, NodeRole.ASSISTANT

# ------------------------------------------------------------ the property

say = st.tuples(st.just("say"), st.text(min_size=1, max_size=6))
summarize = st.tuples(st.just("summarize"), st.text(min_size=1, max_size=6))
operation = st.one_of(
    say,
    say,
    say,
    summarize,
    summarize,
    st.tuples(st.just("edit_summary"), st.text(min_size=1, max_size=6)),
    st.tuples(st.just("remove_summary"), st.just(0)),
    st.tuples(st.just("delete_from_here"), st.integers(0, 4)),
    st.tuples(st.just("delete"), st.integers(0, 4)),
    st.tuples(st.just("restore"), st.integers(0, 4)),
    st.tuples(st.just("edit_and_resend"), st.integers(0, 4)),
    st.tuples(st.just("edit"), st.integers(0, 4)),
    st.tuples(st.just("branch"), st.integers(0, 4)),
    st.tuples(st.just("swipe"), st.integers(0, 4)),
    st.tuples(st.just("switch"), st.integers(0, 4)),
)


class _World:
    """A chat driven through the services, and what the person made: summaries by node."""

    def __init__(self, store: SqlStore) -> None:
        self.chats = ChatService(store)
        self.summaries = SummaryService(self.chats)
        out = self.chats.create_chat("c", greetings=["Hello."], greeting_speaker="Kael")
        self.chat_id = out.chat.id
        self.made: dict[str, str] = {}  # node id -> the summary the person left there
        self.deleted: list[str] = []
        self.branches = 0

    @property
    def revision(self) -> int:
        return self.chats.get_chat(self.chat_id).revision

    def path(self) -> list[Any]:
        return list(self.chats.active_path(self.chat_id).nodes)

    def apply(self, name: str, arg: Any) -> None:
        path = self.path()
        # Picks count from the end: the messages near a fresh summary are the interesting ones.
        pick = path[-1 - arg % len(path)] if path and isinstance(arg, int) else None
        cid, rev = self.chat_id, self.revision
        if name == "say":
            role = USER if not path or path[-1].role is not USER else BOT
            self.chats.append(cid, role, arg, revision=rev)
        elif name == "summarize" and path and arg.strip():
            self.summaries.record(cid, path[-1].id, arg, revision=rev)
            self.made[path[-1].id] = arg.strip()
        elif name == "edit_summary":
            current = self.summaries.current(cid)
            if arg.strip() and current is not None and current.node_id is not None:
                self.summaries.edit(cid, arg, revision=rev)
                self.made[current.node_id] = arg.strip()
        elif name == "remove_summary":
            current = self.summaries.current(cid)
            if current is not None and current.node_id is not None:
                self.summaries.remove(cid, revision=rev)
                del self.made[current.node_id]
        elif name == "delete_from_here" and pick is not None and len(path) > 1:
            self.chats.delete_from_here(cid, pick.id, revision=rev)
            self.deleted += [n.id for n in path[path.index(pick) :]]
        elif name == "delete" and pick is not None and len(path) > 1:
            self.chats.delete(cid, pick.id, revision=rev)
            self.deleted.append(pick.id)
        elif name == "restore" and self.deleted:
            node_id = self.deleted.pop(arg % len(self.deleted))
            self.chats.restore(cid, node_id, revision=rev)
        elif name == "edit" and pick is not None:
            # an edited message loses the summary made at it (SillyTavern drops its memory)
            self.chats.edit(cid, pick.id, pick.content + "*", revision=rev)
            self.made.pop(pick.id, None)
        elif name == "edit_and_resend" and pick is not None and pick.role is USER:
            self.chats.edit_and_resend(cid, pick.id, pick.content + "!", revision=rev)
        elif name == "branch" and pick is not None:
            self.branches += 1
            self.chats.branch_from(cid, pick.id, f"b{self.branches}", revision=rev)
        elif name == "swipe" and pick is not None:
            self.chats.swipe(cid, pick.id, pick.content + "~", revision=rev)
        elif name == "switch" and pick is not None:
            siblings = self.chats.candidates(cid, pick.id)
            if len(siblings) > 1:
                self.chats.step_candidate(cid, pick.id, 1, revision=rev)

    def expected(self) -> str:
        """The newest summary the person left on a live message of the path now read."""
        for node in reversed(self.path()):
            if node.id in self.made:
                return self.made[node.id]
        return ""

    def in_force(self) -> str:
        path = self.chats.active_path(self.chat_id)
        store = self.chats.store
        text, _ = in_force(store, self.chat_id, path.state, path.chat.base_state, {})
        current = self.summaries.current(self.chat_id)
        assert (current.text if current else "") == text
        return text


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=st.lists(operation, min_size=1, max_size=25))
# The four ways back past a summary, each once for sure.
@example([("say", "a"), ("summarize", "S"), ("say", "b"), ("delete", 1)])
@example([("say", "a"), ("say", "b"), ("summarize", "S"), ("swipe", 0), ("switch", 0)])
@example([("say", "a"), ("say", "b"), ("summarize", "S"), ("say", "c"), ("edit_and_resend", 2)])
@example([("say", "a"), ("say", "b"), ("summarize", "S"), ("say", "c"), ("branch", 2)])
@example([("say", "a"), ("summarize", "S"), ("say", "b"), ("delete_from_here", 1)])
@example([("say", "a"), ("summarize", "R"), ("say", "b"), ("summarize", "S"), ("edit", 0)])
def test_a_summary_follows_the_path_through_deletes_edits_branches_and_switches(
    operations: list[tuple[str, Any]],
) -> None:
    with tempfile.TemporaryDirectory() as folder, temporary_store("sqlite", Path(folder)) as store:
        world = _World(store)
        for name, arg in operations:
            world.apply(name, arg)
            assert world.in_force() == world.expected(), (name, arg)


@pytest.mark.parametrize("backend", backends())
def test_deleting_the_message_of_a_summary_rolls_it_back_and_restoring_brings_it(
    backend: str, tmp_path: Path
) -> None:
    with temporary_store(backend, tmp_path) as store:
        world = _World(store)
        world.apply("say", "Where to?")
        world.apply("summarize", "They talk.")
        world.apply("say", "North.")
        world.apply("summarize", "They go north.")
        world.apply("say", "Why north?")
        carrier = world.path()[2]
        world.chats.delete(world.chat_id, carrier.id, revision=world.revision)
        assert world.in_force() == "They talk."
        world.chats.restore(world.chat_id, carrier.id, revision=world.revision)
        assert world.in_force() == "They go north."


def test_deleting_the_message_before_a_summary_rolls_it_back(tmp_path: Path) -> None:
    with temporary_store("sqlite", tmp_path) as store:
        world = _World(store)
        world.apply("say", "Where to?")
        world.apply("say", "North.")
        world.apply("summarize", "They go north.")
        world.apply("say", "Why north?")
        world.apply("say", "The map says so.")
        assert world.in_force() == "They go north."
        user = world.path()[1]
        world.chats.delete_from_here(world.chat_id, user.id, revision=world.revision)
        assert world.in_force() == ""


# ------------------------------------------------------------ import and export

CHAT = [
    {
        "user_name": "Ann",
        "character_name": "Kael",
        "create_date": "2024-01-01@00h00m00s",
        "chat_metadata": {"note_prompt": "", "variables": {"x": 1}},
    },
    {
        "name": "Kael",
        "is_user": False,
        "is_system": False,
        "send_date": "1",
        "mes": "Hello.",
        "extra": {},
    },
    {
        "name": "Ann",
        "is_user": True,
        "is_system": False,
        "send_date": "2",
        "mes": "Hi.",
        "extra": {"memory": "Ann met Kael."},
    },
    {
        "name": "Kael",
        "is_user": False,
        "is_system": True,
        "send_date": "3",
        "mes": "Hm.",
        "extra": {"memory": "", "api": "openai"},
    },
    {
        "name": "Ann",
        "is_user": True,
        "is_system": False,
        "send_date": "4",
        "mes": "Go on.",
        "extra": {"api": "x", "memory": "Ann met Kael; they talked."},
    },
    {
        "name": "Kael",
        "is_user": False,
        "is_system": False,
        "send_date": "5",
        "mes": "Fine.",
        "extra": {},
    },
]


def _source() -> str:
    return "\n".join(json.dumps(line, separators=(",", ":")) for line in CHAT)


def test_a_sillytavern_chat_brings_its_summaries_onto_their_messages() -> None:
    built = build_tree(read_chat(_source()), name="chat")
    assert built.new.base_state.summary is None
    by_text = {n.content: n for n in built.nodes}
    hi = by_text["Hi."].state
    assert hi is not None and (hi.summary, hi.summary_at) == ("Ann met Kael.", by_text["Hi."].id)
    # an empty `memory` carries nothing (SillyTavern reads it by truthiness)
    assert by_text["Hm."].state is None
    leaf = by_text["Fine."].state
    assert leaf is not None
    assert (leaf.summary, leaf.summary_at) == ("Ann met Kael; they talked.", by_text["Go on."].id)
    assert leaf.variables == {"x": 1}


def test_a_sillytavern_chat_with_summaries_exports_byte_for_byte() -> None:
    source = _source()
    (main,) = export_tree(as_tree(build_tree(read_chat(source), name="chat")))
    assert write_chat(main.document) == source


@pytest.mark.parametrize("backend", backends())
def test_a_summary_made_or_removed_here_is_what_the_export_carries(
    backend: str, tmp_path: Path
) -> None:
    with temporary_store(backend, tmp_path) as store:
        chats = ChatService(store)
        summaries = SummaryService(chats)
        built = build_tree(read_chat(_source()), name="chat")
        chat_id = store.import_tree(
            built.new,
            built.nodes,
            active_leaf_id=built.active_leaf_id,
            branches=built.branches,
            checkpoints=built.checkpoints,
        ).id
        assert summaries.current(chat_id) is not None
        rev = chats.get_chat(chat_id).revision
        summaries.remove(chat_id, revision=rev)
        current = summaries.current(chat_id)
        assert current is not None and current.text == "Ann met Kael." and current.number == 1
        rev = chats.get_chat(chat_id).revision
        leaf = chats.get_chat(chat_id).active_leaf_id
        assert leaf is not None
        summaries.record(chat_id, leaf, "Kael agreed.", revision=rev)
        (main,) = export_tree(store.tree(chat_id))
        lines = [json.loads(line) for line in write_chat(main.document).splitlines()]
        memories = [line.get("extra", {}).get("memory") for line in lines[1:]]
        assert memories == [None, "Ann met Kael.", "", None, "Kael agreed."]
        assert [s.text for s in summaries.along(chat_id)] == ["Ann met Kael.", "Kael agreed."]


@pytest.mark.parametrize("backend", backends())
def test_a_chat_with_summaries_comes_back_byte_for_byte_from_every_database(
    backend: str, tmp_path: Path
) -> None:
    from taverna.services.interchange import InterchangeService

    path = tmp_path / "chat.jsonl"
    path.write_text(_source(), encoding="utf-8")
    with temporary_store(backend, tmp_path / "db") as store:
        interchange = InterchangeService(store)
        (result,) = interchange.import_files([path], find_linked=False)
        assert interchange.export_jsonl(result.chat.id) == _source()
        current = SummaryService(ChatService(store)).current(result.chat.id)
        assert current is not None and current.text == "Ann met Kael; they talked."
