"""A reply's sent-prompt record: compressed, read back whole, shown by the inspector."""

from __future__ import annotations

from taverna.model.lorebook import EntryOutcome, EntryTrace
from taverna.model.prompt import Ledger, LedgerItem, Prompt, PromptMessage, Role
from taverna.services.chats import sent_prompts
from taverna.services.turns.inspector import recorded_view


def prompt() -> Prompt:
    return Prompt(
        kind="chat",
        messages=(
            PromptMessage(Role.SYSTEM, "You are Mira, 灯塔看守人.", source="main"),
            PromptMessage(Role.USER, "Is it lit?", source="chatHistory:n3"),
        ),
        ledger=Ledger(
            items=(
                LedgerItem("slot", "main", 9),
                LedgerItem("history", "n1", 5, included=False, reason="budget"),
                LedgerItem("history", "n2", 4),
                LedgerItem("history", "n3", 4),
            ),
            total_tokens=17,
            budget=20,
            trace=(EntryTrace("Harbour", 1, "", EntryOutcome.ACTIVATED, "constant"),),
        ),
    )


def test_a_record_reads_back_the_prompt_and_the_request() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Is it lit?"}]}
    data = sent_prompts.encode(
        prompt(), url="http://127.0.0.1:1/v1/chat/completions", bodies=[body]
    )
    record = sent_prompts.decode(data)
    assert record["request"] == {"url": "http://127.0.0.1:1/v1/chat/completions", "body": body}
    assert record["prompt"] == sent_prompts.prompt_json(prompt())
    assert record["prompt"]["messages"][0]["content"] == "You are Mira, 灯塔看守人."
    assert record["prompt"]["ledger"]["trace"] == [
        {
            "book": "Harbour",
            "uid": 1,
            "comment": "",
            "outcome": "activated",
            "reason": "constant",
            "code": "",
            "params": {},
            "loop": 0,
            "primary_key": None,
            "secondary_keys": [],
            "roll": None,
        }
    ]


def test_the_inspector_draws_the_cut_line_above_the_oldest_message_sent() -> None:
    data = sent_prompts.encode(prompt(), url="u", bodies=[{"a": 1}, {"b": 2}])
    view = recorded_view(sent_prompts.decode(data))
    assert view.as_sent and view.request == {"url": "u", "body": {"b": 2}}
    assert view.included_message_ids == ["n2", "n3"]
    assert view.first_message_in_context == "n2"


def test_a_prompt_that_kept_every_message_has_no_cut_line() -> None:
    whole = Prompt(kind="chat", ledger=Ledger(items=(LedgerItem("history", "n1", 3),)))
    view = recorded_view(sent_prompts.decode(sent_prompts.encode(whole, url="u", bodies=[{}])))
    assert view.first_message_in_context is None and view.included_message_ids == ["n1"]
