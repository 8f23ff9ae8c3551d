"""Token commands: `/tokens`, `/count` and `/trimtokens`, counted as the chat's prompt is."""

from __future__ import annotations

import math

from taverna.engine.macros.js import js_number
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ScriptValue
from taverna.engine.script.values import number_text
from taverna.engine.tokens.trim import trim_to_tokens


def tokens(call: Call) -> ScriptValue:
    return number_text(call.run.host.count_tokens(call.text()))


def count(call: Call) -> ScriptValue:
    """The tokens of the chat's messages the model is shown, joined by spaces (1.12.6)."""
    shown = [line.text for line in call.run.host.messages() if line.text and not line.hidden]
    return number_text(call.run.host.count_tokens(" ".join(shown)))


def trim_tokens(call: Call) -> ScriptValue:
    """Keep `limit` tokens of the text, its end (the default) or its start.

    SillyTavern 1.12.6: no text gives nothing; a limit that is not a number leaves the text
    as it is; a limit of 0 or less gives nothing."""
    text = call.text()
    if not text:
        return ""
    raw = call.arg("limit")
    limit = None if raw is None else js_number(raw)
    if limit is None or math.isnan(limit):
        return text
    keep_end = (call.arg("direction") or "end") != "start"
    return trim_to_tokens(call.run.host.count_tokens, text, int(limit), keep_end=keep_end)


COMMANDS: tuple[Command, ...] = (
    Command("tokens", tokens, "The number of tokens in the text.", usage="/tokens text"),
    Command(
        "count",
        count,
        "The number of tokens in the chat's messages the model is shown.",
        usage="/count",
    ),
    Command(
        "trimtokens",
        trim_tokens,
        "Keep this many tokens of the text: its end (direction=end) or its start.",
        usage="/trimtokens limit=n direction=start|end text",
    ),
)
