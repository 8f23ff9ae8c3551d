"""Commands on the expression a chat's character wears (its sprite beside the chat):
set it by hand, list the labels, read a text's expression as a reply's is read."""

from __future__ import annotations

import json

from taverna.engine.expressions import LABELS, classify
from taverna.engine.script.errors import ScriptError
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ScriptValue


def set_expression(call: Call) -> ScriptValue:
    label = call.text().strip()
    if not label:
        raise ScriptError(
            "/expression needs an expression (joy, anger, ...)",
            command="expression",
            code="expression_needs_label",
        )
    return call.run.host.set_expression(label, call.arg("name") or None)


def list_expressions(call: Call) -> ScriptValue:
    return json.dumps(list(LABELS))


def classify_text(call: Call) -> ScriptValue:
    return classify(call.text()).label


COMMANDS: tuple[Command, ...] = (
    Command(
        "expression",
        set_expression,
        "Show this expression on the chat's character (name=, another of its characters) "
        "until the next reply.",
        ("expression-set", "sprite", "emote"),
        usage="/expression [name=character] label",
    ),
    Command(
        "expression-list",
        list_expressions,
        "The expression labels the classifier gives, as a JSON list.",
        usage="/expression-list",
    ),
    Command(
        "expression-classify",
        classify_text,
        "The expression a text reads as (the keywords a reply is read by).",
        usage="/expression-classify text",
    ),
)
