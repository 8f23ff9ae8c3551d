"""SillyTavern chats into the tree and back: round trips, merged branch files, tree edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taverna.errors import FormatError
from taverna.formats.st_chat import read_chat, write_chat
from taverna.model.chat import CharacterRef, Node, NodeRole, new_id
from taverna.services.chats.service import ChatService
from taverna.services.interchange import MAX_FORK_NESTING, InterchangeService, safe_file_name
from taverna.store import NewChat
from taverna.store.sql import SqlStore

MAIN = "Seraphina - 2024-09-28@14h03m12s"
CHECKPOINT = "Checkpoint #1 - 2024-09-28@14h10m05s"


@pytest.fixture
def interchange(store: SqlStore) -> InterchangeService:
    return InterchangeService(store)


@pytest.fixture
def seraphina(st_fixtures: Path) -> Path:
    return st_fixtures / "handmade" / "user-data" / "chats" / "Seraphina"


def values(text: str) -> list[object]:
    """JSON values per line, numbers compared as JavaScript does."""
    return [json.loads(line, parse_int=float) for line in text.split("\n") if line.strip()]


def test_every_fixture_chat_round_trips(
    interchange: InterchangeService, store: SqlStore, st_fixtures: Path, oracle_cases: Path
) -> None:
    files = sorted(st_fixtures.rglob("*.jsonl")) + sorted(oracle_cases.glob("*/chat.jsonl"))
    assert len(files) > 10
    for path in files:
        text = path.read_text(encoding="utf-8")
        (result,) = interchange.import_files([path], find_linked=False)
        out = interchange.export_jsonl(result.chat.id)
        assert values(out) == values(text), path
        if "handmade" in str(path):
            # files SillyTavern wrote come back byte for byte, on every database
            assert out == text, path


def test_swipes_become_candidates_and_hidden_stays_hidden(
    interchange: InterchangeService, store: SqlStore, seraphina: Path
) -> None:
    (result,) = interchange.import_files([seraphina / f"{MAIN}.jsonl"], find_linked=False)
    path = store.active_path(result.chat.id)
    assert len(path.entries) == 7
    greeting, _, reply, _, narrator, comment, _ = path.entries
    assert (greeting.candidate_index, greeting.candidate_count) == (0, 2)
    assert (reply.candidate_index, reply.candidate_count) == (1, 2)
    assert reply.node.content.startswith('"Shh')
    assert narrator.node.role is NodeRole.NARRATOR and not narrator.node.hidden
    assert comment.node.hidden and comment.node.role is NodeRole.SYSTEM
    assert [n.content for n in path.for_model()] == [
        e.node.content for e in path.entries if e is not comment
    ]
    assert reply.node.generation is not None and reply.node.generation.model == "gpt-4-turbo"
    state = path.state
    assert state.variables["visits"] == 2
    assert state.authors_note is not None and state.authors_note.prompt.startswith("[Keep")
    assert "Glade Lore.1" in state.timers["cooldown"]
    assert state.summary is not None and state.summary.startswith("Traveler woke")
    assert result.chat.metadata["world_info"] == "Glade Lore"
    assert result.chat.characters[0].name == "Seraphina"
    assert result.chat.user_name == "Traveler"


def test_checkpoint_file_merges_into_the_main_tree(
    interchange: InterchangeService, store: SqlStore, seraphina: Path, tmp_path: Path
) -> None:
    (result,) = interchange.import_files([seraphina / f"{MAIN}.jsonl"])
    assert result.checkpoints == (CHECKPOINT,)
    assert result.nodes == 9  # the checkpoint shares all its messages with the main chat
    (checkpoint,) = store.checkpoints(result.chat.id)
    node = store.get_node(result.chat.id, checkpoint.node_id)
    assert node.content.startswith('"Shh')
    # the checkpoint's own timers are the state at its message
    timers = store.state_at(result.chat.id, node.id).timers
    assert "Glade Lore.1" in timers["sticky"]
    written = interchange.export_to(result.chat.id, tmp_path / "out")
    assert sorted(p.name for p in written) == sorted([f"{MAIN}.jsonl", f"{CHECKPOINT}.jsonl"])
    for path in written:
        original = (seraphina / path.name).read_text(encoding="utf-8")
        assert path.read_text(encoding="utf-8") == original, path.name


def make_branch_file(main_text: str, fork: int, name: str) -> tuple[str, str]:
    """A branch of a main chat as SillyTavern makes it, and the main chat linking to it."""
    header, *messages = main_text.split("\n")
    head = json.loads(header)
    head["chat_metadata"] = {**head["chat_metadata"], "main_chat": MAIN}
    head["chat_metadata"]["variables"] = {"visits": 3}
    new = [
        {
            "name": "Traveler",
            "is_user": True,
            "is_system": False,
            "send_date": "x",
            "mes": "Go.",
            "extra": {},
        },
        {
            "name": "Seraphina",
            "is_user": False,
            "send_date": "y",
            "mes": "A branch reply.",
            "extra": {},
            "swipe_id": 0,
            "swipes": ["A branch reply."],
            "swipe_info": [],
        },
    ]
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    branch = [json.dumps(head, **compact), *messages[: fork + 1]]  # type: ignore[arg-type]
    branch += [json.dumps(m, **compact) for m in new]  # type: ignore[arg-type]
    linked = json.loads(messages[fork])
    linked["extra"] = {**linked["extra"], "branches": [name]}
    messages[fork] = json.dumps(linked, **compact)  # type: ignore[arg-type]
    return "\n".join(branch), "\n".join([header, *messages])


def test_branch_file_merges_by_common_prefix_and_exports_back(
    interchange: InterchangeService, store: SqlStore, seraphina: Path, tmp_path: Path
) -> None:
    name = "Branch #3 - 2024-09-28@14h20m00s"
    branch_text, main_text = make_branch_file(
        (seraphina / f"{MAIN}.jsonl").read_text(encoding="utf-8"), 3, name
    )
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / f"{MAIN}.jsonl").write_text(main_text, encoding="utf-8")
    (folder / f"{name}.jsonl").write_text(branch_text, encoding="utf-8")
    (result,) = interchange.import_files([folder / f"{MAIN}.jsonl"])
    assert result.branches == (name,)
    assert result.nodes == 9 + 2
    summaries = {s.branch.name: s for s in store.branches(result.chat.id)}
    assert summaries["main"].active
    assert summaries[name].length == 6
    assert summaries[name].last_message is not None
    assert summaries[name].last_message.content == "A branch reply."
    head = summaries[name].branch.head_id
    assert store.state_at(result.chat.id, head).variables == {"visits": 3}
    written = interchange.export_to(result.chat.id, tmp_path / "out")
    assert {p.name for p in written} == {f"{MAIN}.jsonl", f"{name}.jsonl"}
    for path in written:
        original = (folder / path.name).read_text(encoding="utf-8")
        assert values(path.read_text(encoding="utf-8")) == values(original), path.name


def test_tree_edits_export_as_swipes_and_branch_files(
    interchange: InterchangeService, store: SqlStore, seraphina: Path
) -> None:
    (result,) = interchange.import_files([seraphina / f"{MAIN}.jsonl"], find_linked=False)
    chats = ChatService(store)
    chat_id = result.chat.id
    path = store.active_path(chat_id)
    last = path.entries[-1].node
    outcome = chats.swipe(chat_id, last.id, "A third way to say it.", revision=result.chat.revision)
    files = interchange.export_files(chat_id)
    assert len(files) == 1
    reply = files[0].document.messages[-1]
    assert reply.fields["swipes"] == [last.content, "A third way to say it."]
    assert reply.swipe_id == 1 and reply.text == "A third way to say it."
    assert reply.swipes_consistent
    # an edit-and-resend leaves the old turn as a fork beside the new message, not a file
    user = path.entries[3].node
    outcome = chats.edit_and_resend(
        chat_id, user.id, "Let me rest.", revision=outcome.chat.revision
    )
    (main,) = interchange.export_files(chat_id)
    assert [m.text for m in main.document.messages][-1] == "Let me rest."
    assert len(main.document.messages) == 4
    (old_turn,) = main.document.messages[3].forks
    shown_then = [n.content for n in path.nodes[3:-1]] + ["A third way to say it."]
    assert [m.text for m in old_turn] == shown_then
    assert old_turn[-1].fields["swipes"] == [last.content, "A third way to say it."]
    text = write_chat(main.document)
    assert read_chat(text).messages == main.document.messages
    # importing the file brings the old turn back; exporting that gives the same file
    again = interchange.import_data(text.encode("utf-8"), f"{main.name}.jsonl", again=True)
    assert again.nodes == len(store.tree(chat_id).nodes)
    assert interchange.export_jsonl(again.chat.id) == text


def test_chat_made_in_taverna_exports_as_sillytavern_chat(
    interchange: InterchangeService, store: SqlStore
) -> None:
    from taverna.model.chat import CharacterRef

    chats = ChatService(store)
    outcome = chats.create_chat(
        "Night watch",
        characters=[CharacterRef("Kael")],
        user_name="Traveler",
        greetings=["Halt.", "Who goes there?"],
        greeting_speaker="Kael",
    )
    outcome = chats.append(
        outcome.chat.id,
        NodeRole.USER,
        "A friend.",
        speaker="Traveler",
        revision=outcome.chat.revision,
    )
    outcome = chats.append(
        outcome.chat.id,
        NodeRole.ASSISTANT,
        "Pass.",
        speaker="Kael",
        revision=outcome.chat.revision,
    )
    (exported,) = interchange.export_files(outcome.chat.id)
    document = read_chat(write_chat(exported.document))
    assert document.header is not None
    assert document.header.character_name == "Kael"
    assert document.header.user_name == "Traveler"
    greeting, user, reply = document.messages
    assert greeting.fields["swipes"] == ["Halt.", "Who goes there?"] and greeting.swipe_id == 0
    assert user.is_user and user.name == "Traveler" and "swipes" not in user.fields
    assert reply.fields["swipes"] == ["Pass."]
    assert isinstance(reply.send_date, str)
    assert exported.name.startswith("Kael - ")


def test_group_chat_keeps_its_headerless_layout(
    interchange: InterchangeService, st_fixtures: Path
) -> None:
    path = next(st_fixtures.rglob("group chats/*.jsonl"))
    (result,) = interchange.import_files([path])
    assert result.chat.characters[0].name == "Seraphina"
    (exported,) = interchange.export_files(result.chat.id)
    assert exported.document.header is None
    assert values(write_chat(exported.document)) == values(path.read_text(encoding="utf-8"))


def test_bad_chat_file_names_file_and_line(interchange: InterchangeService, tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"user_name":"a","chat_metadata":{}}\n{"name":"x","mes":"ok"}\nnot json')
    with pytest.raises(FormatError) as info:
        interchange.import_files([path])
    assert "broken.jsonl" in str(info.value) and "line 3" in str(info.value)
    (result,) = interchange.import_files([path], lenient=True)
    assert result.messages == 1
    assert result.skipped and "line 3" in result.skipped[0]


@pytest.mark.parametrize(
    ("title", "expected"),
    [("a/b:c", "a_b_c"), ("  CON ", "_CON"), ("東京 chat", "東京 chat"), ("...", "_")],
)
def test_safe_file_names(title: str, expected: str) -> None:
    assert safe_file_name(title) == expected


def test_the_same_files_import_once_unless_asked_again(
    interchange: InterchangeService, store: SqlStore, seraphina: Path
) -> None:
    (first,) = interchange.import_files([seraphina / f"{MAIN}.jsonl"])
    (second,) = interchange.import_files([seraphina / f"{MAIN}.jsonl"])
    assert second.already_imported and second.chat.id == first.chat.id
    (third,) = interchange.import_files([seraphina / f"{MAIN}.jsonl"], again=True)
    assert not third.already_imported and third.chat.id != first.chat.id
    # the main file alone is different input: a chat of its own
    (alone,) = interchange.import_files([seraphina / f"{MAIN}.jsonl"], find_linked=False)
    assert not alone.already_imported
    assert len(store.list_chats()) == 3


def test_group_chat_made_in_taverna_exports_in_the_group_layout(
    interchange: InterchangeService, store: SqlStore
) -> None:
    from taverna.model.chat import CharacterRef

    chats = ChatService(store)
    outcome = chats.create_chat(
        "Glade Council",
        characters=[CharacterRef("Seraphina"), CharacterRef("Kael")],
        group_id="group-document-id",
        greetings=["Welcome."],
        greeting_speaker="Seraphina",
    )
    chats.append(
        outcome.chat.id,
        NodeRole.ASSISTANT,
        "I'll keep watch.",
        speaker="Kael",
        revision=outcome.chat.revision,
    )
    (exported,) = interchange.export_files(outcome.chat.id)
    assert exported.document.header is None
    document = read_chat(write_chat(exported.document))
    assert document.is_group
    assert [m.name for m in document.messages] == ["Seraphina", "Kael"]
    assert document.messages[0].fields["is_group"] is True


def test_uploaded_chat_bytes_import_once(
    interchange: InterchangeService, store: SqlStore, seraphina: Path
) -> None:
    data = (seraphina / f"{MAIN}.jsonl").read_bytes()
    first = interchange.import_data(data, f"{MAIN}.jsonl")
    assert first.messages == 7 and first.chat.title == MAIN
    again = interchange.import_data(data, f"{MAIN}.jsonl")
    assert again.already_imported and again.chat.id == first.chat.id
    with pytest.raises(FormatError, match="empty"):
        interchange.import_data(b"", "nothing.jsonl")
    assert interchange.export_jsonl(first.chat.id) == data.decode("utf-8")


def _forked_chat(chats: ChatService, turns: int) -> tuple[str, int]:
    """A chat where every user message was edited and resent (the old turn kept its reply)
    and every reply has a second candidate."""
    out = chats.create_chat(title="forks", characters=[CharacterRef("Ada")], user_name="Me")
    chat_id, rev = out.chat.id, out.chat.revision
    for i in range(turns):
        old = chats.append(chat_id, NodeRole.USER, f"u{i} first", revision=rev, speaker="Me")
        rev = chats.append(
            chat_id, NodeRole.ASSISTANT, f"a{i} old", revision=old.chat.revision, speaker="Ada"
        ).chat.revision
        rev = chats.edit_and_resend(chat_id, old.node.id, f"u{i}", revision=rev).chat.revision
        reply = chats.append(chat_id, NodeRole.ASSISTANT, f"a{i}", revision=rev, speaker="Ada")
        rev = chats.swipe(chat_id, reply.node.id, f"a{i} alt", revision=reply.chat.revision)
        rev = rev.chat.revision
    return chat_id, rev


def test_export_writes_named_files_and_keeps_leftover_turns_as_forks(
    interchange: InterchangeService, store: SqlStore, tmp_path: Path
) -> None:
    chats = ChatService(store)
    chat_id, rev = _forked_chat(chats, 6)
    path = store.active_path(chat_id).nodes
    assert len(path) == 12 and len(store.tree(chat_id).nodes) == 6 * 5
    outcome, _ = chats.create_checkpoint(chat_id, path[7].id, "Before the storm", revision=rev)
    outcome = chats.branch_from(
        chat_id, path[3].id, "Side story", revision=outcome.chat.revision, switch=True
    )
    outcome = chats.append(
        chat_id, NodeRole.USER, "elsewhere", revision=outcome.chat.revision, speaker="Me"
    )
    chats.switch_branch(
        chat_id, store.branches(chat_id)[0].branch.id, revision=outcome.chat.revision
    )
    written = interchange.export_to(chat_id, tmp_path / "out")
    # one file per named thing, none per leftover leaf (there are 6 of those)
    names = sorted(p.name for p in written)
    assert len(written) == 3 and "Before the storm.jsonl" in names and "Side story.jsonl" in names
    main = read_chat((tmp_path / "out" / written[0].name).read_text(encoding="utf-8"))
    assert [m.text for m in main.messages] == [x for i in range(6) for x in (f"u{i}", f"a{i} alt")]
    for i in range(6):
        user, reply = main.messages[2 * i], main.messages[2 * i + 1]
        assert [[m.text for m in fork] for fork in user.forks] == [[f"u{i} first", f"a{i} old"]]
        assert reply.fields["swipes"] == [f"a{i}", f"a{i} alt"] and not reply.forks
    side = read_chat((tmp_path / "out" / "Side story.jsonl").read_text(encoding="utf-8"))
    assert [m.text for m in side.messages] == ["u0", "a0 alt", "u1", "a1 alt", "elsewhere"]
    assert not any(m.forks for m in side.messages)  # shown once, in the main file
    storm = read_chat((tmp_path / "out" / "Before the storm.jsonl").read_text(encoding="utf-8"))
    assert len(storm.messages) == 8 and storm.metadata.main_chat == main_name(written)
    # every node comes back: importing the three files rebuilds the same tree
    (again,) = interchange.import_files([written[0]])
    assert again.nodes == len(store.tree(chat_id).nodes)


def main_name(written: list[Path]) -> str:
    return written[0].stem


def test_forks_nested_too_deep_become_branch_files_and_import_back(
    interchange: InterchangeService, store: SqlStore, tmp_path: Path
) -> None:
    # main: M0 -> M1; beside M1 a fork X1 -> C1, beside C1 a fork X2 -> C2, ... 400 deep
    chat_id = new_id()
    top = Node(new_id(), chat_id, None, NodeRole.ASSISTANT, "M0", speaker="Ada")
    nodes, selections = [top], {}
    parent = top
    for k in range(1, 401):
        fork = Node(new_id(), chat_id, parent.id, NodeRole.USER, f"X{k}", speaker="Me")
        line = Node(new_id(), chat_id, parent.id, NodeRole.USER, f"C{k - 1}", speaker="Me")
        reply = Node(new_id(), chat_id, line.id, NodeRole.ASSISTANT, f"R{k - 1}", speaker="Ada")
        nodes += [fork, line, reply] if k > 1 else [fork, line]
        selections[parent.id] = line.id
        parent = fork
    nodes.append(Node(new_id(), chat_id, parent.id, NodeRole.ASSISTANT, "end", speaker="Ada"))
    leaf = nodes[2].id  # C0: the main path is M0, C0
    store.import_tree(
        NewChat(title="deep", characters=(CharacterRef("Ada"),), id=chat_id),
        nodes,
        active_leaf_id=leaf,
        selections=selections,
    )
    written = interchange.export_to(chat_id, tmp_path / "out")
    assert len(written) == 1 + 400 // MAX_FORK_NESTING
    texts = [read_chat(p.read_text(encoding="utf-8")) for p in written]
    assert all(t.metadata.main_chat == written[0].stem for t in texts[1:])
    (again,) = interchange.import_files([written[0]])
    assert again.nodes == len(nodes)
    assert sorted(n.content for n in store.tree(again.chat.id).nodes) == sorted(
        n.content for n in nodes
    )
