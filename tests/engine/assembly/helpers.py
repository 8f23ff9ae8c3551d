"""Building blocks for assembly tests: a context from a few fields, a simple counter."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import AssemblyContext, CharacterInfo, ChatMessage, Speaker
from taverna.model.prompt import Prompt
from taverna.model.settings import ChatCompletionSettings


def word_count(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


def msg(index: int, speaker: str, text: str, **kw: Any) -> ChatMessage:
    names = {"user": "Alex", "character": "Seraphina", "narrator": "System"}
    return ChatMessage(str(index), Speaker(speaker), kw.pop("name", names[speaker]), text, **kw)


def chat(*turns: tuple[str, str]) -> tuple[ChatMessage, ...]:
    return tuple(msg(i, s, t) for i, (s, t) in enumerate(turns))


SERAPHINA = CharacterInfo(
    name="Seraphina",
    description="D",
    personality="P",
    scenario="S",
    mes_example="<START>\n{{user}}: Hey\n{{char}}: Hello there",
)


def context(**kw: Any) -> AssemblyContext:
    base = AssemblyContext(
        characters=(kw.pop("character", SERAPHINA),),
        messages=kw.pop("messages", chat(("character", "Hi, I am Seraphina."), ("user", "Hello!"))),
    )
    cc = kw.pop("cc", None)
    if cc:
        base = replace(base, chat_completion=replace(ChatCompletionSettings(), **cc))
    persona = kw.pop("persona", None)
    base = replace(base, persona=replace(base.persona, name="Alex", **(persona or {})))
    return replace(base, **kw)


def build(ctx: AssemblyContext, count: Any = word_count) -> Prompt:
    return assemble(ctx, count_text=count)


def pairs(prompt: Prompt) -> list[tuple[str, str, str | None]]:
    return [(m.role.value, m.content, m.name) for m in prompt.messages]
