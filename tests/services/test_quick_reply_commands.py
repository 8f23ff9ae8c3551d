"""The `/qr-*` script commands on the library's Quick Reply sets (SillyTavern's
quick-reply extension): list, get, create, update, delete, sets made and removed, and sets
turned on everywhere or in one chat."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from taverna.model.chat import CharacterRef, NodeRole
from taverna.services.chats.service import ChatService
from taverna.services.scripts.quick_replies import QuickReplyService
from taverna.services.scripts.runner import ScriptService
from taverna.store.sql import SqlStore, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStore]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


@pytest.fixture
def chats(store: SqlStore) -> ChatService:
    return ChatService(store)


def _chat(chats: ChatService) -> str:
    out = chats.create_chat("c", characters=[CharacterRef("Mira")], user_name="Ann")
    return chats.append(out.chat.id, NodeRole.USER, "Hi", revision=out.chat.revision).chat.id


def test_sets_and_replies_made_read_changed_and_removed_by_script(chats: ChatService) -> None:
    scripts = ScriptService(chats)
    run = scripts.run(
        "/qr-set-create Moods |"
        " /qr-create set=Moods label=Calm title=Breathe user=true /setvar key=mood calm |"
        " /qr-create set=Moods label=Angry /setvar key=mood angry |"
        " /qr-list Moods"
    )
    assert json.loads(run.result.pipe) == ["Calm", "Angry"]
    got = json.loads(scripts.run("/qr-get set=Moods label=Calm").result.pipe)
    assert (got["id"], got["label"], got["title"], got["message"]) == (
        1, "Calm", "Breathe", "/setvar key=mood calm"
    )  # fmt: skip
    assert got["executeOnUser"] is True and got["executeOnAi"] is False
    assert list(got)[:4] == ["id", "icon", "showLabel", "label"]
    # Update by id: a new label, a flag, and the script kept when none is given.
    scripts.run("/qr-update set=Moods id=2 newlabel=Cross bot=true")
    cross = json.loads(scripts.run("/qr-get set=Moods id=2").result.pipe)
    assert (cross["label"], cross["executeOnAi"], cross["message"]) == (
        "Cross", True, "/setvar key=mood angry"
    )  # fmt: skip
    scripts.run("/qr-delete set=Moods Calm")
    assert json.loads(scripts.run("/qr-list Moods").result.pipe) == ["Cross"]
    # A new reply takes the next id after the highest ever given.
    scripts.run("/qr-create set=Moods label=Sad /echo sad")
    assert json.loads(scripts.run("/qr-get set=Moods label=Sad").result.pipe)["id"] == 3
    assert json.loads(scripts.run("/qr-set-list").result.pipe) == ["Moods"]
    scripts.run("/qr-set-delete Moods")
    assert json.loads(scripts.run("/qr-set-list").result.pipe) == []


def test_a_missing_set_is_told_and_the_script_goes_on(chats: ChatService) -> None:
    run = ScriptService(chats).run("/qr-list Nothing | /echo after | /pass done")
    assert run.result.pipe == "done"
    assert ("error", '/qr-list: no Quick Reply set named "Nothing"') in run.notices
    missing = ScriptService(chats).run("/qr-get set=Nothing label=x")
    assert missing.result.pipe == "" and not missing.notices


def test_sets_turned_on_everywhere_and_in_one_chat(chats: ChatService) -> None:
    chat_id = _chat(chats)
    scripts = ScriptService(chats)
    scripts.run("/qr-set-create Weather | /qr-set-create Dice")
    run = scripts.run(
        "/qr-set-on Weather | /qr-chat-set-on Dice | /qr-set-list global", chat_id=chat_id
    )
    assert json.loads(run.result.pipe) == ["Weather"]
    service = QuickReplyService(chats)
    assert service.global_sets() == ["Weather"]
    assert service.chat_sets(chats.get_chat(chat_id)) == ["Dice"]
    listed = scripts.run("/qr-set-list chat", chat_id=chat_id).result.pipe
    assert json.loads(listed) == ["Dice"]
    # Toggles, and a chat command outside a chat is told.
    scripts.run("/qr-set Weather | /qr-chat-set Dice", chat_id=chat_id)
    assert service.global_sets() == [] and service.chat_sets(chats.get_chat(chat_id)) == []
    outside = scripts.run("/qr-chat-set-on Dice")
    assert outside.notices and "needs a chat" in outside.notices[0][1]
    # A later write in the same script still names the chat's new revision.
    run = scripts.run("/qr-chat-set-on Dice | /send after", chat_id=chat_id)
    assert chats.active_path(chat_id).nodes[-1].content == "after"
    assert "/qr-set-on" in ScriptService(chats).run("/help").result.pipe


def test_a_set_turned_on_with_visible_false_runs_without_buttons(chats: ChatService) -> None:
    """`visible=false` keeps a set active (its triggers and names still work) but hides its
    buttons; `-on` on a present set changes only its visibility; a toggle removes it."""
    chat_id = _chat(chats)
    scripts = ScriptService(chats)
    scripts.run(
        "/qr-set-create Weather | /qr-create set=Weather label=Rain /echo rain |"
        " /qr-set-create Dice | /qr-create set=Dice label=Roll /echo roll"
    )
    scripts.run("/qr-set visible=false Weather | /qr-chat-set visible=false Dice", chat_id=chat_id)
    service = QuickReplyService(chats)
    assert service.global_links() == {"Weather": False}
    assert service.chat_links(chats.get_chat(chat_id)) == {"Dice": False}
    buttons = {b.label: b.hidden for b in service.replies(chat_id)}
    assert buttons == {"Rain": True, "Roll": True}
    listed = scripts.run("/qr-set-list global", chat_id=chat_id).result.pipe
    assert json.loads(listed) == ["Weather"]
    scripts.run("/qr-set-on Weather | /qr-chat-set-on visible=true Dice", chat_id=chat_id)
    assert service.global_links() == {"Weather": True}
    assert {b.label: b.hidden for b in service.replies(chat_id)} == {"Rain": False, "Roll": False}
    scripts.run("/qr-set-on visible=false Weather", chat_id=chat_id)
    assert service.global_links() == {"Weather": False}
    # The page's own list keeps each set's visibility.
    service.set_global(["Weather", "Dice"])
    assert service.global_links() == {"Weather": False, "Dice": True}
    scripts.run("/qr-set Weather", chat_id=chat_id)
    assert service.global_links() == {"Dice": True}


def test_set_options_changed_by_qr_set_update(chats: ChatService) -> None:
    scripts = ScriptService(chats)
    scripts.run("/qr-set-create nosend=true Notes")
    service = QuickReplyService(chats)
    found = service.by_name("Notes")
    assert found is not None and found.set.disable_send and not found.set.inject_input
    scripts.run("/qr-set-update inject=true before=true Notes")
    found = service.by_name("Notes")
    assert found is not None
    assert (found.set.disable_send, found.set.place_before_input, found.set.inject_input) == (
        True, True, True
    )  # fmt: skip
    scripts.run("/qr-set-update nosend=false Notes")
    found = service.by_name("Notes")
    assert found is not None and not found.set.disable_send and found.set.inject_input


def test_a_replys_context_menu_sets_added_removed_and_cleared(chats: ChatService) -> None:
    scripts = ScriptService(chats)
    scripts.run(
        "/qr-set-create Main | /qr-create set=Main label=Go /echo go |"
        " /qr-set-create Moods | /qr-set-create Dice"
    )

    def links() -> list[tuple[str, bool]]:
        got = json.loads(scripts.run("/qr-get set=Main label=Go").result.pipe)
        return [(link["set"], link["isChained"]) for link in got["contextList"]]

    scripts.run("/qr-contextadd set=Main label=Go chain=true Moods")
    scripts.run("/qr-contextadd set=Main id=1 Dice")
    assert links() == [("Moods", True), ("Dice", False)]
    scripts.run("/qr-contextdel set=Main label=Go Moods")
    assert links() == [("Dice", False)]
    missing = scripts.run("/qr-contextadd set=Main label=Go Nowhere")
    assert ("error", '/qr-contextadd: no Quick Reply set named "Nowhere"') in missing.notices
    assert links() == [("Dice", False)]
    scripts.run("/qr-contextclear set=Main Go")
    assert links() == []
    assert "/qr-contextclear" in scripts.run("/help").result.pipe
