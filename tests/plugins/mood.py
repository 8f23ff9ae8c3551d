"""A test plugin granted to read chats and change prompts.

It keeps the mood light (a system line last in every prompt), hides the word
"secret" from the model, refuses to answer a message that says FORBIDDEN, counts
words for the model, and remembers every event it saw.
"""

from __future__ import annotations

from typing import Any

from taverna.providers.request import ToolSpec
from taverna.services.plugins import hookimpl
from taverna.services.plugins.tools import Tool

TAVERNA_GRANTS = ["read_chats", "change_prompts"]

seen: list[tuple[str, str, str]] = []  # (event, chat id, text)


@hookimpl
def taverna_event(event: Any) -> None:
    seen.append((event.name.value, event.chat_id, event.text))


@hookimpl
def taverna_generate_interceptor(chat: Any) -> None:
    messages = chat.messages
    if messages and "FORBIDDEN" in messages[-1]["text"]:
        chat.abort("the last message says a forbidden word")
        return
    for index, message in enumerate(messages):
        if "secret" in message["text"]:
            chat.set_text(index, message["text"].replace("secret", "[redacted]"))


@hookimpl
def taverna_prompt_ready(prompt: Any) -> None:
    if prompt.is_chat:
        prompt.append("system", "Mood: keep it light.")
    else:
        prompt.set_text(prompt.text + "\n(Mood: keep it light.)")


def count_words(arguments: Any) -> dict[str, int]:
    return {"words": len(str(arguments.get("text", "")).split())}


@hookimpl
def taverna_tools(host: Any) -> list[Tool]:
    return [
        Tool(
            ToolSpec(
                "count_words",
                "Count the words of a text.",
                {"type": "object", "properties": {"text": {"type": "string"}}},
            ),
            count_words,
        )
    ]
