"""Hugging Face chat templates: rendered in a sandbox, as a template kind of their own."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import (
    AssemblyContext,
    CharacterInfo,
    ChatMessage,
    ChatMetadata,
    GenerationType,
    Speaker,
)
from taverna.engine.assembly.layouts import CACHE
from taverna.engine.textgen.chat_template import ChatTemplate, ChatTemplateError, alternate_roles
from taverna.errors import FormatError
from taverna.model.character import DepthPrompt
from taverna.model.chat import AuthorsNote
from taverna.model.settings import DEFAULT_CONTEXT_TEMPLATE, PersonaInfo, TextCompletionSettings

TURNS = (
    "{% for m in messages %}<|turn|>{{ m['role'] }}\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|turn|>assistant\n{% endif %}"
)
STRICT = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Roles must alternate') }}{% endif %}"
    "[{{ m['role'] }}]{{ m['content'] | trim }}[/]"
    "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
)


def config(template: object, **tokens: object) -> str:
    return json.dumps({"chat_template": template, **tokens})


def test_renders_messages_and_the_generation_prompt() -> None:
    template = ChatTemplate.from_tokenizer_config(config(TURNS))
    out = template.render(
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]
    )
    assert out == "<|turn|>user\nHi<|end|>\n<|turn|>assistant\nYo<|end|>\n<|turn|>assistant\n"


def test_reads_special_tokens_and_named_variants() -> None:
    text = config(
        [{"name": "default", "template": STRICT}, {"name": "tool_use", "template": "T"}],
        bos_token={"content": "<s>", "lstrip": False},
        eos_token="</s>",
    )
    template = ChatTemplate.from_tokenizer_config(text)
    assert (template.bos_token, template.eos_token) == ("<s>", "</s>")
    assert template.render([{"role": "user", "content": " a "}]) == "<s>[user]a[/][assistant]"
    assert ChatTemplate.from_tokenizer_config(text, variant="tool_use").source == "T"
    with pytest.raises(FormatError):
        ChatTemplate.from_tokenizer_config(text, variant="rag")
    with pytest.raises(FormatError):
        ChatTemplate.from_tokenizer_config(json.dumps({"eos_token": "x"}))
    with pytest.raises(FormatError):
        ChatTemplate.from_tokenizer_config("{not json")


def test_a_refusal_is_reported_and_adapting_the_roles_satisfies_it() -> None:
    template = ChatTemplate(STRICT, bos_token="<s>")
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "Anyone?"},
    ]
    with pytest.raises(ChatTemplateError, match="System role not supported"):
        template.render(messages)
    assert template.render_adapted(messages) == (
        "<s>[user]Be brief.[/][assistant]Hello.[/][user]Hi\n\nAnyone?[/][assistant]"
    )


def test_alternate_roles() -> None:
    assert alternate_roles([{"role": "assistant", "content": "A"}]) == [
        {"role": "user", "content": "[Start a new chat]"},
        {"role": "assistant", "content": "A"},
    ]
    assert alternate_roles(
        [{"role": "user", "content": "U"}, {"role": "system", "content": "S"}]
    ) == [{"role": "user", "content": "U\n\nS"}]


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ messages.append({'role': 'user'}) }}",
        "{{ cycler.__init__.__globals__ }}",
        "{% for i in range(10**9) %}x{% endfor %}",
        "{% for i in range(1000) %}{% for j in range(1000) %}x{% endfor %}{% endfor %}",
        "{{ 'a' * 1000000000 }}",
        "{{ 7 ** 99999999 }}",
        "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}{{ ns.s }}",
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "{% for m in messages %}{{ m.content",
    ],
)
def test_hostile_or_broken_templates_fail_fast_without_running_code(source: str) -> None:
    started = time.monotonic()
    with pytest.raises(ChatTemplateError) as error:
        ChatTemplate(source).render([{"role": "user", "content": "x"}])
    assert error.value.field == "chat_template"
    assert time.monotonic() - started < 5


def _context(**changes: object) -> AssemblyContext:
    character = CharacterInfo(name="Aria", description="A cartographer.")
    messages = tuple(
        ChatMessage(
            str(i),
            Speaker.USER if i % 2 else Speaker.CHARACTER,
            "Alex" if i % 2 else "Aria",
            f"message {i:02d} " + "z" * 30,
        )
        for i in range(12)
    )
    text = TextCompletionSettings(
        context=DEFAULT_CONTEXT_TEMPLATE.model_copy(update={"use_stop_strings": False}),
        extras={"chat_template": config(TURNS, eos_token="<|end|>")},
    )
    context = AssemblyContext(
        characters=(character,),
        messages=messages,
        persona=PersonaInfo(name="Alex"),
        api="textgen",
        text_completion=text,
        tokenizer="estimate",
    )
    return replace(context, **changes)  # type: ignore[arg-type]


def test_text_completion_in_the_models_chat_template() -> None:
    prompt = assemble(_context())
    assert prompt.text.startswith(
        "<|turn|>system\nWrite Aria's next reply in a fictional chat between Aria and Alex.\n"
        "A cartographer.<|end|>\n<|turn|>assistant\nmessage 00 "
    )
    assert prompt.text.endswith(
        "<|turn|>user\nmessage 11 " + "z" * 30 + "<|end|>\n<|turn|>assistant\n"
    )
    assert prompt.stop == ("\nAlex:", "<|end|>")


def test_chat_template_history_is_fitted_newest_first() -> None:
    context = _context()
    small = replace(context.text_completion, max_context=300, amount_gen=100)
    prompt = assemble(replace(context, text_completion=small))
    kept = [i for i in range(12) if f"message {i:02d} " in prompt.text]
    assert kept == list(range(kept[0], 12)) and kept[0] > 0
    assert any(not item.included for item in prompt.ledger.items)


def test_chat_template_continue_leaves_the_last_message_open() -> None:
    prompt = assemble(_context(generation_type=GenerationType.CONTINUE))
    assert prompt.text.endswith("<|turn|>user\nmessage 11 " + "z" * 30)


def test_the_cache_layout_puts_the_notes_after_the_chat_in_a_chat_template() -> None:
    """Beyond ST: with the `cache` layout the story string keeps only the stable card, and
    the author's note (in prompt) and the character's note (at depth) follow the chat."""
    note = AuthorsNote(prompt="AN TEXT", position=0)  # in prompt: after the story string
    character = replace(
        _context().character, depth_prompt=DepthPrompt(prompt="DEPTH NOTE", depth=4)
    )
    changes = {"metadata": ChatMetadata(authors_note=note), "characters": (character,)}
    exact = assemble(_context(**changes)).text
    cached = assemble(_context(layout=CACHE, **changes)).text
    assert exact.index("AN TEXT") < exact.index("message 00")
    assert exact.index("DEPTH NOTE") < exact.index("message 11")
    tail = cached[cached.index("message 11") :]
    assert "AN TEXT" in tail and "DEPTH NOTE" in tail
    assert cached.endswith("<|end|>\n<|turn|>assistant\n")
    # a later turn shares every message the earlier one had
    fewer = _context(layout=CACHE, messages=_context().messages[:10], **changes)
    earlier = assemble(fewer).text
    shared = earlier[: earlier.index("message 09")]
    assert cached.startswith(shared + "message 09")
