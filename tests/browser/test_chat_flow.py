"""The whole chat in a real browser against `taverna serve` and a local stub model server.

One story, step by step: import a card by upload, chat, regenerate twice and move
between the candidates, edit and resend then go back to the old branch, hide a message
and see it leave the inspector's prompt, branch and switch, continue, stop mid-stream,
reload mid-stream; everything survives a page reload and a server restart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from taverna.formats.png_card import write_png_card
from taverna.model.character import Character
from tests.browser.conftest import TavernaServer, shot
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 812}


def card_file(tmp_path: Path) -> Path:
    character = Character.create(
        "Aster Vale",
        description="A cartographer who maps cities that move at night.",
        personality="curious, dry humour",
        first_mes='*Aster unrolls a map across the table.* "You found the shop, {{user}}."',
        alternate_greetings=["*A bell rings as you enter.*"],
    )
    path = tmp_path / "Aster Vale.png"
    path.write_bytes(write_png_card(character))
    return path


def messages(page):  # type: ignore[no-untyped-def]
    return page.locator("ol.messages > li.message:not(#streaming)")


def last_message(page):  # type: ignore[no-untyped-def]
    return messages(page).last


def wait_idle(page, text: str | None = None) -> None:  # type: ignore[no-untyped-def]
    """Until `text` is in a saved message (when given) and no generation runs."""
    if text is not None:
        page.locator("ol.messages > li.message:not(.streaming)", has_text=text).first.wait_for(
            timeout=15000
        )
    page.locator("#send").wait_for(state="visible", timeout=15000)
    page.locator("#streaming").wait_for(state="detached", timeout=15000)


def counter(message) -> str:  # type: ignore[no-untyped-def]
    return message.locator(".swipes .counter").inner_text()


def test_chat_story(chromium, taverna: TavernaServer, stub: StubServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "dialog", lambda d: d.accept(prompt_text="side path") if d.type == "prompt" else d.accept()
    )

    # Import a card by upload.
    page.goto(taverna.url + "/#/characters")
    page.get_by_role("button", name="Import", exact=True).wait_for()
    page.locator("#card-file").set_input_files(str(card_file(tmp_path)))
    page.locator(".card", has_text="Aster Vale").wait_for()
    shot(page, "desktop-characters")
    page.locator(".card", has_text="Aster Vale").get_by_role(
        "button", name="Chat with Aster Vale"
    ).click()
    page.locator("ol.messages").wait_for()
    first = last_message(page)
    assert "You found the shop, User." in first.inner_text()
    assert counter(first) == "1/2"

    # Chat.
    stub.script(Reply(tokens=["First ", "answer."]))
    page.get_by_label("Message", exact=True).fill("Where does this road go?")
    page.get_by_role("button", name="Send", exact=True).click()
    wait_idle(page, "First answer.")
    assert "First answer." in last_message(page).inner_text()

    # Regenerate twice, then move between the three candidates.
    stub.script(Reply(tokens=["Second answer."]), Reply(tokens=["Third answer."]))
    last_message(page).get_by_role("button", name="Regenerate").click()
    wait_idle(page, "Second answer.")
    last_message(page).get_by_role("button", name="Regenerate").click()
    wait_idle(page, "Third answer.")
    reply = last_message(page)
    assert "Third answer." in reply.inner_text() and counter(reply) == "3/3"
    reply.get_by_role("button", name="Previous candidate").click()
    page.locator(".message", has_text="Second answer.").wait_for()
    last_message(page).get_by_role("button", name="Previous candidate").click()
    page.locator(".message", has_text="First answer.").wait_for()
    assert counter(last_message(page)) == "1/3"
    last_message(page).get_by_role("button", name="Next candidate").click()
    page.locator(".message", has_text="Second answer.").wait_for()
    assert counter(last_message(page)) == "2/3"
    shot(page, "desktop-chat-candidates")

    # Edit and resend, then switch back to the old branch.
    stub.script(Reply(tokens=["Answer to the new question."]))
    question = messages(page).nth(1)
    question.get_by_role("button", name="Edit and resend").click()
    page.locator(".edit-area").fill("Where does the river go?")
    page.get_by_role("button", name="Save and resend").click()
    wait_idle(page, "Answer to the new question.")
    assert "Answer to the new question." in last_message(page).inner_text()
    question = messages(page).nth(1)
    assert "Where does the river go?" in question.inner_text() and counter(question) == "2/2"
    # Switching the question's candidate redraws it and what follows; the greeting stays.
    messages(page).evaluate_all("(els) => els.forEach((el) => { el.tagged = el.dataset.index; })")
    question.get_by_role("button", name="Previous candidate").click()
    page.locator(".message", has_text="Where does this road go?").wait_for()
    assert "Second answer." in last_message(page).inner_text()
    tags = messages(page).evaluate_all("(els) => els.map((el) => el.tagged ?? null)")
    assert tags == ["0", None, None]
    messages(page).nth(1).get_by_role("button", name="Next candidate").click()
    page.locator(".message", has_text="Where does the river go?").wait_for()

    # Hide a message and see it leave the inspector's prompt.
    question = messages(page).nth(1)
    page.get_by_role("button", name="Prompt inspector").click()
    page.locator("#inspector .pm").first.wait_for()
    assert "Where does the river go?" in page.locator("#inspector").inner_text()
    page.get_by_role("button", name="Close").click()
    question.get_by_role("button", name="Hide", exact=True).click()
    page.locator(".message.hidden-msg", has_text="Where does the river go?").wait_for()
    assert messages(page).nth(1).get_by_role("button", name="Unhide").count() == 1
    page.get_by_role("button", name="Prompt inspector").click()
    page.locator("#inspector .pm").first.wait_for()
    assert "Where does the river go?" not in page.locator("#inspector .inspector-body").inner_text()
    page.get_by_role("tab", name="Ledger").click()
    page.locator("#inspector table.ledger tbody tr").first.wait_for()
    shot(page, "desktop-inspector")
    page.get_by_role("button", name="Close").click()
    messages(page).nth(1).get_by_role("button", name="Unhide").click()
    page.locator(".message.hidden-msg").wait_for(state="detached")

    # A past reply's prompt is the one it was sent with, kept when the reply was stored.
    last_message(page).get_by_role("button", name="Show the prompt").click()
    page.locator("#inspector h2", has_text="as it was sent").wait_for()
    page.locator("#inspector .pm").first.wait_for()
    assert "Where does the river go?" in page.locator("#inspector .inspector-body").inner_text()
    shot(page, "desktop-inspector-sent")
    page.get_by_role("button", name="Close").click()

    # Branch from the greeting and switch back.
    count_before = messages(page).count()
    messages(page).nth(0).get_by_role("button", name="Branch").click()
    expect(page.locator("ol.messages > li.message")).to_have_count(1)
    branches = page.get_by_label("Branches")
    assert branches.is_visible()
    options = branches.locator("option").all_inner_texts()
    assert any("side path" in o for o in options) and len(options) == 2
    main = next(o for o in options if "side path" not in o)
    branches.select_option(label=main)
    expect(page.locator("ol.messages > li.message")).to_have_count(count_before)

    # The tree view shows the forks; picking the old question goes back to it.
    page.get_by_role("button", name="Conversation tree").click()
    tree = page.locator("#tree")
    tree.locator(".graph-row", has_text="Where does this road go?").first.wait_for()
    shot(page, "desktop-tree")
    tree.locator(".graph-row", has_text="Where does this road go?").first.locator(
        ".graph-jump"
    ).click()
    page.locator(".message", has_text="Where does this road go?").wait_for()
    messages(page).nth(1).get_by_role("button", name="Next candidate").click()
    page.locator(".message", has_text="Where does the river go?").wait_for()

    # Continue the last reply.
    stub.script(Reply(tokens=[" It bends north."]))
    page.get_by_role("button", name="Continue", exact=True).click()
    page.locator(".message", has_text="Answer to the new question. It bends north.").wait_for()
    wait_idle(page)

    # Impersonate from the input box.
    stub.script(Reply(tokens=["I follow the river."]))
    page.get_by_role("button", name="Impersonate").click()
    expect(page.get_by_label("Message", exact=True)).to_have_value("I follow the river.")
    page.get_by_label("Message", exact=True).fill("")

    # Stop mid-stream: the partial text is kept as a draft to keep or drop.
    stub.script(Reply(tokens=[f"slow{i} " for i in range(100)], delay=0.1))
    page.get_by_label("Message", exact=True).fill("Tell me everything.")
    page.get_by_role("button", name="Send", exact=True).click()
    page.locator("#streaming", has_text="slow3").wait_for()
    page.get_by_role("button", name="Stop", exact=True).click()
    page.locator(".draft").wait_for()
    wait_idle(page)
    draft = page.locator(".draft")
    draft.wait_for()
    assert "slow0" in draft.inner_text()
    assert "Tell me everything." in last_message(page).inner_text()
    draft.get_by_role("button", name="Keep").click()
    page.locator(".draft").wait_for(state="detached")
    assert "slow0" in last_message(page).inner_text()

    # Reload mid-stream: the page follows the same generation and the result is saved.
    stub.script(Reply(tokens=[f"tide{i} " for i in range(60)], delay=0.1))
    page.get_by_label("Message", exact=True).fill("And the tide?")
    page.get_by_role("button", name="Send", exact=True).click()
    page.locator("#streaming", has_text="tide2").wait_for()
    page.reload()
    page.locator("#streaming", has_text="tide0").wait_for()
    wait_idle(page, "tide59")
    assert "tide59" in last_message(page).inner_text()
    # The edited question is a fork in the middle: its note (read after the messages) says
    # what follows on the old one.
    fork_notes = page.locator(".fork-note")
    expect(fork_notes).to_have_count(1)
    texts = messages(page).all_inner_texts()

    # Everything survives a page reload and a server restart.
    page.reload()
    page.locator("ol.messages > li.message").first.wait_for()
    expect(fork_notes).to_have_count(1)
    assert messages(page).all_inner_texts() == texts
    taverna.restart()
    page.reload()
    page.locator("ol.messages > li.message").first.wait_for()
    expect(fork_notes).to_have_count(1)
    assert messages(page).all_inner_texts() == texts
    reply = last_message(page)
    assert re.fullmatch(r"\d+/\d+", counter(reply))
    shot(page, "desktop-chat")

    # Delete a reply, then undo: nothing is lost.
    last_message(page).get_by_role("button", name="Delete").click()
    expect(messages(page)).to_have_count(len(texts) - 1)
    page.get_by_role("button", name="Undo").click()
    expect(messages(page)).to_have_count(len(texts))
    expect(fork_notes).to_have_count(1)  # read after the messages are drawn
    assert messages(page).all_inner_texts() == texts

    # A server restart in the middle of a reply: what streamed is kept as a draft.
    stub.script(Reply(tokens=[f"wave{i} " for i in range(100)], delay=0.1))
    page.get_by_label("Message", exact=True).fill("Listen to the waves.")
    page.get_by_role("button", name="Send", exact=True).click()
    page.locator("#streaming", has_text="wave3").wait_for()
    taverna.restart()
    page.locator(".draft", has_text="wave0").wait_for(timeout=20000)
    wait_idle(page, "Listen to the waves.")
    assert stub.problems == []
    assert errors == []
    context.close()
