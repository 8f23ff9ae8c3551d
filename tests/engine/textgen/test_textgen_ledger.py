"""The Text Completion ledger accounts for every token; cache-friendly text prompts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.cli.prompt import GenerationKind, build_prompt
from taverna.engine.assemble import assemble
from taverna.engine.assembly.cache import first_difference
from taverna.engine.assembly.context import ChatMetadata, GenerationType, Speaker
from taverna.engine.assembly.layouts import CACHE, SILLYTAVERN
from taverna.model.character import DepthPrompt
from taverna.model.chat import AuthorsNote
from taverna.model.prompt import Prompt
from taverna.model.settings import PowerUserSettings

from .test_textgen_prompt import chatml, message, seraphina


def _included(prompt: Prompt) -> int:
    return sum(i.tokens for i in prompt.ledger.items if i.included and i.kind != "lorebook_entry")


def _pieces(prompt: Prompt) -> str:
    placed = [i for i in prompt.ledger.items if i.included and i.position is not None]
    return "".join(i.text for i in sorted(placed, key=lambda i: i.position or 0))


def test_oracle_case_07_ledger_sums_to_the_total(oracle_cases: Path) -> None:
    """The ChatML case: every token of the prompt's total is on a ledger line."""
    case = oracle_cases / "07_text_completion_chatml"
    prompt, *_ = build_prompt(
        case / "settings.json",
        [case / "Aria.json"],
        case / "chat.jsonl",
        [],
        "textgen",
        GenerationKind.NORMAL,
    )
    assert prompt.ledger.total_tokens > 0
    assert _included(prompt) == prompt.ledger.total_tokens
    assert _pieces(prompt) == prompt.text
    padding = [i for i in prompt.ledger.items if i.source == "token padding"]
    assert [i.tokens for i in padding] == [64]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=0, max_size=30),
    st.integers(200, 1200),
    st.booleans(),
    st.sampled_from(list(GenerationType)),
    st.integers(0, 64),
    st.booleans(),
)
def test_included_items_sum_to_the_total(
    lengths: list[int],
    max_context: int,
    instruct: bool,
    kind: GenerationType,
    padding: int,
    friendly: bool,
) -> None:
    """Like the Chat Completion ledger: included items add up to the prompt's total, and
    the placed pieces, in position order, are the prompt text itself."""
    turns = tuple(
        message(i, Speaker.USER, "Alex", " ".join(["we"] * n))
        if i % 2
        else message(i, Speaker.CHARACTER, "Seraphina", " ".join(["ok"] * n))
        for i, n in enumerate(lengths)
    )
    character = replace(seraphina().character, depth_prompt=DepthPrompt(prompt="NOTE", depth=2))
    context = seraphina(
        messages=turns,
        characters=(character,),
        generation_type=kind,
        power_user=PowerUserSettings(token_padding=padding),
        metadata=ChatMetadata(authors_note=AuthorsNote(prompt="AN", position=0)),
        layout=CACHE if friendly else SILLYTAVERN,
    )
    context = replace(
        context,
        text_completion=replace(context.text_completion, max_context=max_context, amount_gen=100),
    )
    if instruct:
        context = chatml(context)
    prompt = assemble(context)
    assert _included(prompt) == prompt.ledger.total_tokens
    assert _pieces(prompt) == prompt.text


def _turns(count: int) -> tuple[object, ...]:
    return tuple(
        message(i, Speaker.USER, "Alex", f"user line {i}")
        if i % 2
        else message(i, Speaker.CHARACTER, "Seraphina", f"reply line {i}")
        for i in range(count)
    )


def test_cache_friendly_text_moves_depth_injections_after_the_chat() -> None:
    """Beyond ST: depth injections and the in-prompt author's note follow the newest message."""
    character = replace(seraphina().character, depth_prompt=DepthPrompt(prompt="NOTE", depth=4))
    note = AuthorsNote(prompt="AN TEXT", position=0)  # in prompt: after the story string
    context = seraphina(
        messages=_turns(10), characters=(character,), metadata=ChatMetadata(authors_note=note)
    )
    normal = assemble(context).text
    friendly = assemble(replace(context, layout=CACHE)).text
    assert normal.index("AN TEXT") < normal.index("reply line 0")
    assert normal.index("NOTE") < normal.index("user line 9")
    tail = friendly[friendly.index("user line 9") :]
    assert "AN TEXT" in tail and "NOTE" in tail
    assert tail.index("AN TEXT") < tail.index("NOTE")  # the story's part comes first
    assert friendly.endswith("Seraphina:")
    # Nothing lost, nothing doubled.
    assert sorted(normal.split()) == sorted(friendly.split())


def test_cache_friendly_text_keeps_the_prefix_across_turns() -> None:
    """The prefix shared with the previous turn reaches the new message."""
    character = replace(seraphina().character, depth_prompt=DepthPrompt(prompt="NOTE", depth=4))

    def at(count: int, friendly: bool) -> Prompt:
        return assemble(
            seraphina(
                messages=_turns(count),
                characters=(character,),
                layout=CACHE if friendly else SILLYTAVERN,
            )
        )

    plain = first_difference(at(9, False), at(10, False))
    friendly = first_difference(at(9, True), at(10, True))
    assert plain.cause is not None and friendly.cause is not None
    assert friendly.shared > plain.shared
    before = at(9, True)
    # The previous prompt's chat ends right before the break (its last line's tail differs).
    assert friendly.shared >= before.text.index("user line 7")


def test_first_difference_names_the_text_piece() -> None:
    """A changed chat message is named by the ledger line holding the offset."""
    turns = _turns(6)
    edited = (*turns[:3], replace(turns[3], text="user line 3, edited"), *turns[4:])  # type: ignore[type-var]
    old = assemble(chatml(seraphina(messages=turns)))
    new = assemble(chatml(seraphina(messages=edited)))
    found = first_difference(old, new)
    assert not found.identical and found.message is None
    assert found.cause is not None and found.cause.source == "3"
    assert new.text[: found.offset] == old.text[: found.offset]


def test_text_prompt_carries_the_turn_state() -> None:
    """Text Completion returns the turn's state like Chat Completion does."""
    prompt = assemble(seraphina())
    chat = assemble(replace(seraphina(), api="openai"))
    assert prompt.state == chat.state


def test_chat_template_ledger_sums_to_the_total() -> None:
    """In a model's chat template the template's own tokens have a line of their own."""
    from taverna.engine.textgen.chat_template import ChatTemplate

    template = ChatTemplate(
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    context = seraphina(messages=_turns(8))
    settings_tc = replace(context.text_completion, extras={"chat_template": template})
    prompt = assemble(replace(context, text_completion=settings_tc))
    assert prompt.text.startswith("<|system|>")
    assert _included(prompt) == prompt.ledger.total_tokens
    kinds = {i.source for i in prompt.ledger.items if i.kind in ("overhead", "story_string")}
    assert {"system message", "template", "token padding"} <= kinds


def test_a_moved_text_injection_is_named_as_what_was_there() -> None:
    """The depth-4 note moves every turn: the previous prompt had it where the break is."""
    character = replace(seraphina().character, depth_prompt=DepthPrompt(prompt="NOTE", depth=4))
    before = assemble(seraphina(messages=_turns(9), characters=(character,)))
    after = assemble(seraphina(messages=_turns(10), characters=(character,)))
    found = first_difference(before, after)
    assert found.was is not None and found.was.kind == "injection"
    assert found.cause is not None and found.cause.kind == "history"
