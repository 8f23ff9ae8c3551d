"""A ledger line whose source is the engine's own words (not a name, an id or a slot) says
them by a code and values too, so a page can say them in its language: every code has the
page's words in English and Chinese, and the English words stay what they always were."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import ChatMetadata, GenerationType, Speaker
from taverna.engine.assembly.layouts import CACHE
from taverna.model.character import DepthPrompt
from taverna.model.chat import AuthorsNote
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.prompt import LEDGER_SOURCES, LedgerItem, Prompt, ledger_source
from taverna.model.summary import SummarySettings

from .assembly.helpers import build, chat, context
from .textgen.test_textgen_prompt import chatml, long_chat, seraphina

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = ROOT / "taverna" / "web" / "i18n"
# a name the page fills: {name}, or the count of an ICU plural form {n, plural, ...}
FIELDS = re.compile(r"\{(\w+)(?:\}|,\s*plural\b)")


def _catalog(language: str) -> dict[str, str]:
    catalog: dict[str, str] = json.loads(
        (CATALOGS / f"{language}.json").read_text(encoding="utf-8")
    )
    return catalog


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_every_source_code_has_the_pages_words(language: str) -> None:
    catalog = _catalog(language)
    for code, english in LEDGER_SOURCES.items():
        said = catalog.get(f"ledger_source.{code}")
        assert said, f"{language}: ledger_source.{code} has no words"
        # the page's words name the same values the engine gives
        assert set(FIELDS.findall(said)) == set(FIELDS.findall(english)), code
    # a summary among the names is said apart, by its message
    assert FIELDS.findall(catalog["ledger_source.summary_of"]) == ["message"]


def test_the_chinese_source_words_are_chinese() -> None:
    catalog = _catalog("zh-CN")
    english = [
        key
        for key, text in catalog.items()
        if key.startswith("ledger_source.")
        and FIELDS.sub("", text)  # not only names
        and not re.search(r"[\u4e00-\u9fff]", FIELDS.sub("", text))
    ]
    assert not english, english


def test_every_source_code_the_code_names_is_known() -> None:
    """A `source_code="..."` written anywhere is a code of `LEDGER_SOURCES`."""
    found = []
    for path in (ROOT / "taverna").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "source_code"
                and isinstance(node.value, ast.Constant)
                and node.value.value
            ):
                found.append((path.name, node.value.value))
    assert ("chat_completion.py", "reply_priming") in found
    unknown = [(where, code) for where, code in found if code not in LEDGER_SOURCES]
    assert not unknown, unknown


def test_a_coded_source_reads_as_its_words() -> None:
    line = LedgerItem("history", "", 0, False, source_code="older_messages", source_params={"n": 7})
    assert line.source == "7 older messages"
    # a line given its own words keeps them
    assert LedgerItem("x", "as written", 0, source_code="messages").source == "as written"


def _coded(prompt: Prompt) -> dict[str, list[LedgerItem]]:
    """The prompt's coded lines by code; each one's words are its code's words."""
    by_code: dict[str, list[LedgerItem]] = {}
    for item in prompt.ledger.items:
        if not item.source_code:
            continue
        if "summary" not in item.source_params:
            assert item.source == ledger_source(item.source_code, item.source_params), item
        by_code.setdefault(item.source_code, []).append(item)
    return by_code


def _long_cc_chat(n: int) -> tuple:  # type: ignore[type-arg]
    return chat(*[(("user", "character")[i % 2], f"message number {i} here") for i in range(n)])


def test_chat_completion_lines_say_their_source_by_code() -> None:
    character = replace(
        context().characters[0], depth_prompt=DepthPrompt(prompt="NOTE", depth=1, role="system")
    )
    note = AuthorsNote(prompt="AN", depth=1, position=ExtensionPosition.IN_CHAT)
    messages = _long_cc_chat(40)
    # one long message stops the history, so the examples fit after it
    messages = (*messages[:-4], replace(messages[-4], text="huge " * 400), *messages[-3:])
    prompt = build(
        context(
            character=character,
            messages=messages,
            metadata=ChatMetadata(authors_note=note),
            cc={"max_context": 200, "max_tokens": 50},
        )
    )
    coded = _coded(prompt)
    assert [i.source for i in coded["reply_priming"]] == ["reply priming"]
    [older] = coded["older_messages"]
    assert not older.included and older.source.endswith(" older messages")
    assert older.source_params["n"] == int(older.source.split()[0])
    [depth] = coded["depth_injection"]
    # the names stay as written; the role is the chat role
    assert dict(depth.source_params) == {
        "depth": 1,
        "role": "system",
        "names": "authors_note,Seraphina",
    }
    assert depth.source == "depth 1 system: authors_note,Seraphina"
    # counted from 1, as a Text Completion prompt's example blocks are
    examples = coded["example_block_turn"]
    assert [dict(i.source_params) for i in examples] == [
        {"block": 1, "turn": 1},
        {"block": 1, "turn": 2},
    ]
    assert [i.source for i in examples] == ["block 1 turn 1", "block 1 turn 2"]


def test_cache_layout_chat_names_the_parts_it_moved_after_the_chat() -> None:
    character = replace(
        context().characters[0], depth_prompt=DepthPrompt(prompt="NOTE", depth=1, role="system")
    )
    prompt = build(context(character=character, messages=_long_cc_chat(6), layout=CACHE))
    [line] = _coded(prompt)["parts"]
    assert line.source == "injection@1:system" and line.included
    assert dict(line.source_params) == {"names": "injection@1:system"}


def test_a_chat_without_a_history_slot_says_how_many_messages_were_left_out() -> None:
    base = context(messages=_long_cc_chat(5))
    order = tuple(e for e in base.chat_completion.order if e.identifier != "chatHistory")
    prompt = build(replace(base, chat_completion=replace(base.chat_completion, order=order)))
    [line] = _coded(prompt)["messages"]
    assert line.source == "5 messages" and dict(line.source_params) == {"n": 5}


def test_a_summary_in_the_chat_is_named_with_its_message() -> None:
    settings = SummarySettings(
        position=ExtensionPosition.IN_CHAT, depth=1, role=InjectionRole.ASSISTANT
    )
    prompt = build(
        context(
            messages=_long_cc_chat(6),
            summary="They met.",
            summary_at="3",
            summary_settings=settings,
        )
    )
    [line] = _coded(prompt)["depth_injection"]
    assert line.source == "depth 1 assistant: 1_memory (summary of message 3)"
    assert dict(line.source_params) == {
        "depth": 1,
        "role": "assistant",
        "names": "1_memory",
        "summary": "3",
    }


def test_text_completion_lines_say_their_source_by_code() -> None:
    character = replace(seraphina().character, depth_prompt=DepthPrompt(prompt="NOTE", depth=1))
    blocks = "".join(f"<START>\n{{{{user}}}}: question {n} {'q' * 200}\n" for n in range(5))
    character = replace(character, mes_example=blocks)
    note = AuthorsNote(prompt="AN TEXT", position=ExtensionPosition.IN_PROMPT)
    ctx = seraphina(
        characters=(character,),
        messages=long_chat(60),
        metadata=ChatMetadata(authors_note=note),
    )
    text = replace(ctx.text_completion, max_context=900, amount_gen=100)
    prompt = assemble(replace(ctx, text_completion=text))
    coded = _coded(prompt)
    assert [i.source for i in coded["token_padding"]] == ["token padding"]
    assert [i.source for i in coded["after_story_string"]] == ["after story string"]
    [depth] = coded["depth_injection"]
    assert depth.source == "depth 1 system: DEPTH_PROMPT"
    blocks_seen = coded["example_block"]
    assert [i.source for i in blocks_seen] == [f"block {n}" for n in range(1, 6)]
    assert any(not i.included for i in blocks_seen)
    # continuing: the message being continued has a line of its own
    going_on = assemble(replace(ctx, generation_type=GenerationType.CONTINUE))
    assert "message being continued" in [i.source for i in _coded(going_on)["continued_message"]]


def test_a_text_summary_anchor_is_named_with_its_message() -> None:
    settings = SummarySettings(position=ExtensionPosition.BEFORE_PROMPT)
    ctx = seraphina(summary="They met.", summary_at="1", summary_settings=settings)
    [line] = _coded(assemble(ctx))["before_story_string_named"]
    assert line.source == "before story string: 1_memory (summary of message 1)"
    assert dict(line.source_params) == {"name": "1_memory", "summary": "1"}


def test_cache_layout_text_names_what_it_moved() -> None:
    note = AuthorsNote(prompt="AN TEXT", position=ExtensionPosition.IN_PROMPT)
    ctx = seraphina(metadata=ChatMetadata(authors_note=note), layout=CACHE)
    [line] = _coded(assemble(ctx))["moved_to_end"]
    assert line.source == "lorebook and extension prompts"


def test_a_chat_template_prompt_names_its_system_message_and_markers() -> None:
    from taverna.engine.textgen.chat_template import ChatTemplate

    template = ChatTemplate(
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    ctx = seraphina(
        messages=tuple(
            replace(m, speaker=Speaker.USER if i % 2 else m.speaker)
            for i, m in enumerate(long_chat(4))
        )
    )
    ctx = replace(
        ctx, text_completion=replace(ctx.text_completion, extras={"chat_template": template})
    )
    coded = _coded(assemble(ctx))
    assert [i.source for i in coded["system_message"]] == ["system message"]
    assert [i.source for i in coded["template"]] == ["template"]


def test_a_context_template_with_a_chat_start_names_it() -> None:
    coded = _coded(assemble(seraphina()))  # the default template starts the chat with ***
    assert [i.source for i in coded["context_template"]] == ["context template"]
    # the pieces counted apart cost a few tokens more or less than the text counted whole
    assert [i.source for i in coded["joins"]] == ["joins"]
    assert "context_template" not in _coded(assemble(chatml(seraphina())))


def test_merged_system_messages_name_each_part_by_its_code() -> None:
    """Squashed system messages keep the English joined by "+" and list each part's own
    code and values, so a page names every part in its language."""
    character = replace(context().characters[0], post_history_instructions="PHI")
    note = AuthorsNote(prompt="AN", depth=0, position=ExtensionPosition.IN_CHAT)
    prompt = build(
        context(
            character=character,
            messages=_long_cc_chat(2),
            metadata=ChatMetadata(authors_note=note),
            cc={"squash_system_messages": True},
        )
    )
    merged = _coded(prompt)["merged"]
    by_source = {i.source: i for i in merged}
    line = by_source["depth 0 system: authors_note+jailbreak:character"]
    assert json.loads(str(line.source_params["parts"])) == [
        {
            "source": "depth 0 system: authors_note",
            "code": "depth_injection",
            "params": {"depth": 0, "role": "system", "names": "authors_note"},
        },
        {"source": "jailbreak:character"},
    ]
    # the slots before the chat merge too, three and more into one list
    [head] = [i for i in merged if i.source.startswith("main+")]
    pieces = json.loads(str(head.source_params["parts"]))
    assert len(pieces) >= 3 and "+".join(p["source"] for p in pieces) == head.source
    assert all("code" not in p for p in pieces)
