"""Scripts run in a chat: effects written through the chat's service, variables on the path."""

from __future__ import annotations

import json

import pytest

from taverna.engine.script import Generation, Limits, ScriptError
from taverna.errors import StaleRevision
from taverna.model.chat import CharacterRef, NodeRole
from taverna.model.quick_reply import QuickReply, QuickReplySet
from taverna.services.chats.service import ChatService
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.scripts.runner import ScriptService


def _chat(chats: ChatService) -> str:
    out = chats.create_chat(
        "story",
        characters=[CharacterRef("Seraphina")],
        user_name="Ann",
        greetings=["Hello."],
        greeting_speaker="Seraphina",
    )
    out = chats.append(out.chat.id, NodeRole.USER, "Hi", revision=out.chat.revision)
    return out.chat.id


def test_variables_go_on_the_active_leaf_and_follow_the_branch(chats: ChatService) -> None:
    chat_id = _chat(chats)
    scripts = ScriptService(chats)
    first = chats.active_path(chat_id).nodes[0]
    run = scripts.run("/setvar key=mood happy | /incvar visits", chat_id=chat_id)
    assert run.result.pipe == "1"
    assert dict(chats.state_at(chat_id).variables) == {"mood": "happy", "visits": 1}
    # A branch from the greeting (before the script ran) does not have them.
    assert dict(chats.state_at(chat_id, first.id).variables) == {}
    again = scripts.run("/getvar mood", chat_id=chat_id)
    assert again.result.pipe == "happy"


def test_chat_effects_are_messages_of_the_chat(chats: ChatService) -> None:
    chat_id = _chat(chats)
    run = ScriptService(chats).run(
        "/send Are you there? | /sendas name={{char}} I am. | /sys Night falls. | /comment note",
        chat_id=chat_id,
    )
    nodes = chats.active_path(chat_id).nodes
    assert [(n.role, n.speaker, n.content, n.hidden) for n in nodes[2:]] == [
        (NodeRole.USER, "Ann", "Are you there?", False),
        (NodeRole.ASSISTANT, "Seraphina", "I am.", False),
        (NodeRole.NARRATOR, "System", "Night falls.", False),
        (NodeRole.SYSTEM, "Note", "note", True),
    ]
    assert run.changed
    assert run.chat is not None and run.chat.revision == chats.get_chat(chat_id).revision


def test_hide_and_unhide(chats: ChatService) -> None:
    chat_id = _chat(chats)
    ScriptService(chats).run("/hide 0-1", chat_id=chat_id)
    assert [n.hidden for n in chats.active_path(chat_id).nodes] == [True, True]
    ScriptService(chats).run("/unhide 1", chat_id=chat_id)
    assert [n.hidden for n in chats.active_path(chat_id).nodes] == [True, False]


def test_trigger_is_a_follow_up(chats: ChatService) -> None:
    chat_id = _chat(chats)
    run = ScriptService(chats).run("/send go on | /trigger", chat_id=chat_id)
    assert run.follow_up == "trigger"


def test_injections_are_kept_in_the_chat_metadata(chats: ChatService) -> None:
    chat_id = _chat(chats)
    scripts = ScriptService(chats)
    scripts.run("/inject id=mood position=chat depth=2 She is angry.", chat_id=chat_id)
    assert chats.get_chat(chat_id).metadata["script_injects"] == {
        "mood": {"value": "She is angry.", "position": 1, "depth": 2, "scan": False, "role": 0}
    }
    assert scripts.run("/listinjects", chat_id=chat_id).result.pipe.startswith('{"mood":')
    scripts.run("/flushinject mood", chat_id=chat_id)
    assert chats.get_chat(chat_id).metadata["script_injects"] == {}


def test_global_variables_persist_in_the_library(chats: ChatService) -> None:
    ScriptService(chats).run("/setglobalvar key=seen 3")
    chat_id = _chat(chats)
    assert ScriptService(chats).run("/incglobalvar seen", chat_id=chat_id).result.pipe == "4"
    assert ScriptService(chats).global_variables() == {"seen": 4}


def test_quick_replies_are_found_by_label(chats: ChatService) -> None:
    library = LibraryService(chats.store)
    qr_set = QuickReplySet(
        name="Tools", qr_list=[QuickReply(id=1, label="Roll", message="/pass 6")]
    )
    library.put(LibraryKind.QUICK_REPLY_SET, "Tools", qr_set.model_dump(by_alias=True, mode="json"))
    scripts = ScriptService(chats)
    assert scripts.run("/run Roll").result.pipe == "6"
    assert scripts.run("/:Tools.Roll").result.pipe == "6"


def test_a_stale_revision_is_refused(chats: ChatService) -> None:
    chat_id = _chat(chats)
    with pytest.raises(StaleRevision):
        ScriptService(chats).run("/send hi", chat_id=chat_id, revision=1)


def test_a_failing_script_keeps_the_variables_set_before_the_failure(
    chats: ChatService,
) -> None:
    """As SillyTavern 1.12.6 does (oracle cases error_*): a script that does not parse
    runs nothing; one that fails as it runs keeps what the commands before it set."""
    chat_id = _chat(chats)
    scripts = ScriptService(chats)
    with pytest.raises(ScriptError):
        scripts.run("/setvar key=x 1 | /nosuch", chat_id=chat_id)
    assert dict(chats.state_at(chat_id).variables) == {}
    with pytest.raises(ScriptError):
        scripts.run(
            "/setvar key=x 1 | /setglobalvar key=g 2 | /var y | /setvar key=z 3", chat_id=chat_id
        )
    assert dict(chats.state_at(chat_id).variables) == {"x": "1"}
    assert scripts.global_variables() == {"g": "2"}


def test_the_time_limit_does_not_count_the_wait_for_a_model(chats: ChatService) -> None:
    chat_id = _chat(chats)
    now = [0.0]

    def ask(request: Generation) -> str:
        now[0] += 60.0  # a slow model
        return f"answer to {request.prompt}"

    scripts = ScriptService(chats, limits=Limits(max_seconds=5.0), clock=lambda: now[0])
    run = scripts.run("/genraw one | /genraw two | /pass {{pipe}}", chat_id=chat_id, ask=ask)
    assert run.result.pipe == "answer to two"
    with pytest.raises(ScriptError) as raised:
        scripts.run("/genraw x", chat_id=chat_id)
    assert "needs a connection" in str(raised.value)


def test_a_comment_is_exported_with_its_type_in_extra(chats: ChatService) -> None:
    """SillyTavern 1.12.6 writes `/comment` as `is_system` with `extra.type = comment`."""
    from taverna.services.interchange import InterchangeService

    chat_id = _chat(chats)
    ScriptService(chats).run("/comment a note", chat_id=chat_id)
    lines = InterchangeService(chats.store).export_jsonl(chat_id).splitlines()
    row = json.loads(lines[-1])
    assert (row["name"], row["mes"], row["is_system"]) == ("Note", "a note", True)
    assert row["extra"]["type"] == "comment"
    assert "type" not in row
