"""Prompt handlers and the ledger: after plugins add, remove or change messages of a
built prompt, each part's position names the message it ended up in, a removed part is
marked cut, a changed one is recounted, and an added message has a line of its own."""

from __future__ import annotations

from taverna.engine.tokens import get_tokenizer
from taverna.model.prompt import Ledger, LedgerItem, Prompt, PromptMessage, Role
from taverna.services.plugins.events import PluginAccess
from taverna.services.plugins.grants import Grant
from taverna.services.plugins.prompt_ready import (
    ADDED,
    CHANGED,
    REMOVED,
    PromptReady,
    PromptView,
)

COUNT = get_tokenizer("cl100k_base").count


def built() -> Prompt:
    texts = ["You are Mira.", "Hello there.", "Hi! How are you?", "Fine, thanks."]
    roles = [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.USER]
    messages = tuple(PromptMessage(r, t) for r, t in zip(roles, texts, strict=True))
    items = (
        LedgerItem("slot", "main", COUNT(texts[0]), position=0),
        LedgerItem("history", "m1", COUNT(texts[1]), position=1),
        LedgerItem("history", "m0", 7, included=False, reason="budget"),
        LedgerItem("history", "m2", COUNT(texts[2]), position=2),
        LedgerItem("history", "m3", COUNT(texts[3]), position=3),
    )
    total = sum(i.tokens for i in items if i.included)
    ledger = Ledger(items=items, total_tokens=total, tokenizer="cl100k_base")
    return Prompt(kind="chat", messages=messages, ledger=ledger)


def handled(prompt: Prompt, *changes: str) -> Prompt:
    ready = PromptReady.of(prompt, chat_id="c", kind="normal", dry_run=False)
    view = PromptView(ready, PluginAccess("mood", frozenset({Grant.CHANGE_PROMPTS})))
    for change in changes:
        if change == "first":
            view.insert(0, "system", "Keep it light.")
        elif change == "drop":
            view.remove(2)  # "Hello there." (m1: the insert moved it to index 2)
        elif change == "edit":
            view.set_content(-1, "Fine, thanks. And you, my old friend?")
        elif change == "last":
            view.append("system", "Mood: cheerful.")
    return ready.result()


def test_positions_follow_the_messages_a_handler_moved() -> None:
    prompt = built()
    after = handled(prompt, "first", "drop", "edit", "last")
    contents = [m.content for m in after.messages]
    assert contents == [
        "Keep it light.",
        "You are Mira.",
        "Hi! How are you?",
        "Fine, thanks. And you, my old friend?",
        "Mood: cheerful.",
    ]
    items = after.ledger.items
    by_source = {(i.kind, i.source): i for i in items}
    # every included part names the message it is in now
    for item in items:
        if item.included and item.kind != "plugin":
            assert item.text == "" or item.text == contents[item.position or 0]
    assert by_source[("slot", "main")].position == 1
    assert by_source[("history", "m2")].position == 2
    removed = by_source[("history", "m1")]
    assert (removed.included, removed.position, removed.code) == (False, None, REMOVED)
    assert removed.reason == "removed by a prompt handler"
    changed = by_source[("history", "m3")]
    assert changed.position == 3 and changed.code == CHANGED
    assert changed.tokens == COUNT(contents[3])
    added = [i for i in items if i.kind == "plugin"]
    assert [(i.source, i.position, i.code, i.text) for i in added] == [
        ("mood", 0, ADDED, "Keep it light."),
        ("mood", 4, ADDED, "Mood: cheerful."),
    ]
    assert added[0].tokens == COUNT("Keep it light.")
    # the first line is the added one, and the cut part keeps its place in the order
    assert items[0].kind == "plugin"
    assert [i.source for i in items].index("m0") < [i.source for i in items].index("m2")
    included = sum(i.tokens for i in items if i.included)
    assert after.ledger.total_tokens == included
    assert prompt.ledger.total_tokens != after.ledger.total_tokens


def test_a_prompt_no_handler_changed_is_the_same_prompt() -> None:
    prompt = built()
    assert handled(prompt) is prompt


def test_a_text_prompt_rewritten_by_a_handler_counts_the_change() -> None:
    ledger = Ledger(
        items=(LedgerItem("story_string", "story_string", COUNT("Once."), position=0),),
        total_tokens=COUNT("Once."),
        tokenizer="cl100k_base",
    )
    prompt = Prompt(kind="text", text="Once.", ledger=ledger)
    ready = PromptReady.of(prompt, chat_id="c", kind="normal", dry_run=False)
    view = PromptView(ready, PluginAccess("mood", frozenset({Grant.CHANGE_PROMPTS})))
    view.set_text("Once upon a time.")
    after = ready.result()
    assert after.text == "Once upon a time."
    assert after.ledger.total_tokens == COUNT("Once upon a time.")
    line = after.ledger.items[-1]
    assert (line.kind, line.source, line.code) == ("plugin", "mood", CHANGED)
