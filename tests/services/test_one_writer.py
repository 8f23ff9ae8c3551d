"""One writer of the conversation tree: every change to a chat's tree goes through
`ChatService` (taverna/services/chats/service.py, with the parts of its class beside it),
by one set of rules and one revision check.

The first tests read every module under taverna/ with `ast` and fail where a module
other than the chat service's and the store itself (taverna/store/) opens a store's unit of work
(`store.write(...)`) or uses a unit of work's writing methods (`insert_node`,
`update_node`, `set_selection`, `set_active`, `update_chat`, the branch and checkpoint
pointers, `undo`, `redo`). A generation that wrote its own nodes once stored a swipe by
a rule of its own; this keeps that from coming back.

Left alone on purpose: the interchange's bulk `import_tree`. It creates a new chat with
its whole tree in one transaction, as `create_chat` creates an empty one; it edits no
existing tree, so there is no revision to check and no rule about where a message
lands.

The last tests pin the rules generated messages share with the person's own writes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import taverna
from taverna.errors import Conflict, StaleRevision, TavernaError
from taverna.model.chat import NodeRole
from taverna.services.chats import editing
from taverna.services.chats.generated_reply import ToolStep
from taverna.services.chats.service import ChatService, WriteResult
from taverna.store.testing import backends, temporary_store

PACKAGE = Path(taverna.__file__).resolve().parent
# The one writer, and the store that implements the unit of work.
# The chat service (its module and the parts of its class that live beside it: the rules
# every write follows, candidates, generated messages, branches, checkpoints, state,
# revisions, insertion at a place) and the store that implements the unit of work.
WRITER = tuple(
    f"services/chats/{part}.py"
    for part in (
        "service",
        "write_rules",
        "candidates",
        "generated",
        "branches",
        "checkpoints",
        "state",
        "revisions",
        "insertion",
    )
)
ALLOWED = (WRITER, "store/")

# Names only a chat's unit of work has: any use of them is a tree write.
WRITER_ONLY = frozenset(
    {
        "insert_node",
        "update_node",
        "set_selection",
        "update_chat",
        "put_branch",
        "remove_branch",
        "put_checkpoint",
        "remove_checkpoint",
    }
)
# Names other objects have too (`ChatService.undo`, `active_settings.set_active`): a
# tree write only when called on a unit of work.
WRITER_SHARED = frozenset({"set_active", "undo", "redo"})


def _writer_names(tree: ast.AST) -> set[str]:
    """Names bound to a unit of work: `with <x>.write(...) as w`, or annotated
    `ChatWriter` (a parameter or a variable)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "write"
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    names.add(item.optional_vars.id)
        elif isinstance(node, ast.arg) and _names_writer(node.annotation):
            names.add(node.arg)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _names_writer(node.annotation)
        ):
            names.add(node.target.id)
    return names


def _names_writer(annotation: ast.expr | None) -> bool:
    return annotation is not None and "ChatWriter" in ast.unparse(annotation)


def _is_store_write(call: ast.Call) -> bool:
    """`<...>store.write(...)`, or any `.write(...)` in the unit of work's shape
    (`revision=` and `label=` are keyword-only there); a file's `out.write(text)` is not."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "write":
        return False
    receiver = ast.unparse(call.func.value).lower()
    keywords = {k.arg for k in call.keywords}
    return receiver.endswith("store") or {"revision", "label"} <= keywords


def _is_writer_method(node: ast.Attribute, writers: set[str]) -> bool:
    """`x.insert_node` and the like on anything; `w.set_active` on a unit of work."""
    if node.attr in WRITER_ONLY or node.attr == "ChatWriter":
        return True
    return (
        node.attr in WRITER_SHARED and isinstance(node.value, ast.Name) and node.value.id in writers
    )


def _is_getattr_of_writer(call: ast.Call) -> bool:
    """`getattr(w, "insert_node")`: the same write, spelled to hide from a scan."""
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == "getattr"
        and len(call.args) >= 2
        and isinstance(call.args[1], ast.Constant)
        and call.args[1].value in WRITER_ONLY | WRITER_SHARED | {"write"}
    )


def tree_writes(source: str, filename: str = "<module>") -> list[str]:
    """Every place in `source` that writes a chat's tree itself, as `line: code`."""
    tree = ast.parse(source, filename)
    writers = _writer_names(tree)
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if (
            (isinstance(node, ast.ImportFrom) and any(a.name == "ChatWriter" for a in node.names))
            or (isinstance(node, ast.Attribute) and _is_writer_method(node, writers))
            or (
                isinstance(node, ast.Call)
                and (_is_store_write(node) or _is_getattr_of_writer(node))
            )
        ):
            found.add((node.lineno, ast.unparse(node)))
    return [f"{line}: {code}" for line, code in sorted(found)]


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_only_the_chat_service_writes_a_chats_tree() -> None:
    """Everything else asks ChatService; the store only implements the unit of work."""
    offenders: dict[str, list[str]] = {}
    for path in _modules():
        name = path.relative_to(PACKAGE).as_posix()
        if name in ALLOWED[0] or name.startswith(ALLOWED[1]):
            continue
        found = tree_writes(path.read_text(encoding="utf-8"), str(path))
        if found:
            offenders[name] = found
    assert offenders == {}, "write the tree through ChatService, not the store"


def test_the_scan_reads_the_whole_package() -> None:
    """A scan that found no modules would pass for the wrong reason."""
    names = {p.relative_to(PACKAGE).as_posix() for p in _modules()}
    assert {
        "services/turns/service.py",
        "services/chats/editing.py",
        "services/chats/service.py",
    } <= names


def test_the_scan_finds_tree_writes_and_lets_other_writes_be() -> None:
    """The checker itself: each way of writing a tree is caught, look-alikes are not."""
    writes = """
from taverna.store.repository import ChatWriter
def save(store, ctx, chat):
    with store.write(chat.id, revision=chat.revision, label="normal") as w:
        w.insert_node(None, "assistant", "hi")
        w.set_active(None)
        w.undo()
    with ctx.store.write(chat.id, revision=1, label="x") as unit:
        unit.redo()
    repo.write(chat.id, revision=1, label="y")
def helper(writer: "ChatWriter") -> None:
    writer.set_active("n")
def sneaky(w):
    getattr(w, "update_node")("n", content="x")
    w.update_chat(title="t")
"""
    found = tree_writes(writes)
    for code in (
        "from taverna.store.repository import ChatWriter",
        "store.write(chat.id, revision=chat.revision, label='normal')",
        "w.insert_node",
        "w.set_active",
        "w.undo",
        "ctx.store.write(chat.id, revision=1, label='x')",
        "unit.redo",
        "repo.write(chat.id, revision=1, label='y')",
        "writer.set_active",
        "getattr(w, 'update_node')",
        "w.update_chat",
    ):
        assert any(f.endswith(f": {code}") for f in found), code

    innocent = """
from taverna.services.library.active_settings import set_active
def other(out, chats, store, chat):
    out.write("line")
    handle.write(text)
    set_active(store, "preset", "id")
    chats.undo(chat.id, revision=chat.revision)
    chats.redo(chat.id, revision=chat.revision)
    store.import_tree(new, nodes, active_leaf_id=None)
"""
    assert tree_writes(innocent) == []


# ----------------------------------------------------- the rules they share

USER, BOT = NodeRole.USER, NodeRole.ASSISTANT


@pytest.fixture(params=backends())
def chats(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChatService]:
    with temporary_store(request.param, tmp_path) as store:
        yield ChatService(store)


def _chat(chats: ChatService) -> WriteResult:
    """Greeting, the person's line, a reply: the path ends at the reply."""
    out = chats.create_chat("story", greetings=["Hello."], greeting_speaker="Aria")
    out = chats.append(out.chat.id, USER, "Hi.", revision=out.chat.revision, speaker="Alex")
    return chats.append(out.chat.id, BOT, "First.", revision=out.chat.revision, speaker="Aria")


def _texts(chats: ChatService, chat_id: str) -> list[str]:
    return [n.content for n in chats.active_path(chat_id).nodes]


def test_a_generated_candidate_is_shown_only_if_the_person_is_still_there(
    chats: ChatService,
) -> None:
    out = _chat(chats)
    first = out.node
    assert first is not None
    # the person swipes by hand while a generated swipe of `first` is on its way
    mine = chats.swipe(out.chat.id, first.id, "Mine.", revision=out.chat.revision)
    late = chats.add_candidate(
        out.chat.id, first.id, "Late.", revision=mine.chat.revision, label="swipe"
    )
    assert late.chat.active_leaf_id == mine.chat.active_leaf_id
    assert _texts(chats, out.chat.id)[-1] == "Mine."
    assert [n.content for n in chats.candidates(out.chat.id, first.id)] == [
        "First.",
        "Mine.",
        "Late.",
    ]
    # beside where the person is, it is shown, with the speaker of what it stands beside
    assert mine.node is not None
    shown = chats.add_candidate(out.chat.id, mine.node.id, "Now.", revision=late.chat.revision)
    assert shown.node is not None
    assert shown.chat.active_leaf_id == shown.node.id
    assert shown.node.speaker == "Aria"
    assert chats.revisions(out.chat.id, limit=1)[0].label == "swipe"


def test_a_generated_reply_waits_where_it_belongs_when_the_person_moved_on(
    chats: ChatService,
) -> None:
    out = _chat(chats)
    greeting = chats.active_path(out.chat.id).nodes[0]
    steps = [ToolStep("Let me look.", "c1", "lookup", "{}", "found")]
    at_greeting = chats.add_reply(
        out.chat.id,
        greeting.id,
        "Elsewhere.",
        revision=out.chat.revision,
        speaker="Aria",
        tool_steps=steps,
        label="normal",
    )
    assert at_greeting.chat.active_leaf_id == out.chat.active_leaf_id
    assert _texts(chats, out.chat.id) == ["Hello.", "Hi.", "First."]
    # where the person is, the tool step and the reply follow one another on the path
    here = chats.add_reply(
        out.chat.id,
        out.chat.active_leaf_id,
        "Found it.",
        revision=at_greeting.chat.revision,
        speaker="Aria",
        tool_steps=steps,
    )
    path = chats.active_path(out.chat.id).nodes
    assert [n.content for n in path[-2:]] == ["Let me look.\nlookup({}) → found", "Found it."]
    assert path[-2].hidden and path[-2].role is NodeRole.SYSTEM
    assert here.chat.active_leaf_id == path[-1].id


def test_generated_writes_check_the_revision_like_any_other(chats: ChatService) -> None:
    out = _chat(chats)
    edited = chats.edit(
        out.chat.id, out.chat.active_leaf_id or "", "Edited.", revision=out.chat.revision
    )
    with pytest.raises(StaleRevision):
        chats.add_reply(
            out.chat.id, out.chat.active_leaf_id, "Late.", revision=out.chat.revision, speaker=""
        )
    # a continue of a message edited since it started does not fit it any more
    with pytest.raises(Conflict):
        chats.extend(
            out.chat.id,
            out.chat.active_leaf_id or "",
            " More.",
            revision=edited.chat.revision,
            expected="First.",
        )
    assert _texts(chats, out.chat.id)[-1] == "Edited."
    extended = chats.extend(
        out.chat.id,
        out.chat.active_leaf_id or "",
        " More.",
        revision=edited.chat.revision,
        expected="Edited.",
    )
    assert extended.node is not None and extended.node.content == "Edited. More."


def test_a_rename_from_any_caller_refuses_a_blank_title(chats: ChatService) -> None:
    out = _chat(chats)
    with pytest.raises(TavernaError):
        editing.rename_chat(chats, out.chat.id, "   ", revision=out.chat.revision)
    renamed = editing.rename_chat(chats, out.chat.id, " Harbour ", revision=out.chat.revision)
    assert renamed.title == "Harbour"
    assert chats.revisions(out.chat.id, limit=1)[0].label == "rename"
