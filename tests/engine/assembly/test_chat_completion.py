"""Chat Completion assembly as SillyTavern 1.12.6 builds it (algo-prompt-assembly.md §3-4)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from taverna.engine.assembly.context import ChatMetadata, GenerationType
from taverna.engine.assembly.layouts import CACHE
from taverna.model.character import DepthPrompt
from taverna.model.chat import AuthorsNote
from taverna.model.injection import ExtensionPosition
from taverna.model.persona import PersonaPosition
from taverna.model.presets import NamesBehavior, PromptOrderItem, default_prompt_order
from taverna.model.settings import PromptSlot, default_prompts

from .helpers import SERAPHINA, build, chat, context, msg, pairs

MAIN = "Write Seraphina's next reply in a fictional chat between Seraphina and Alex."


def test_worked_example_section_3_8() -> None:
    """§3.8: the default preset's prompt, message by message."""
    assert pairs(build(context())) == [
        ("system", MAIN, None),
        ("system", "D", None),
        ("system", "[Seraphina's personality: P]", None),
        ("system", "[Circumstances and context of the dialogue: S]", None),
        ("system", "[Example Chat]", None),
        ("system", "Hey", "example_user"),
        ("system", "Hello there", "example_assistant"),
        ("system", "[Start a new Chat]", None),
        ("assistant", "Hi, I am Seraphina.", None),
        ("user", "Hello!", None),
    ]


def test_disabled_main_keeps_its_place_section_3_1() -> None:
    """§3.1: a disabled main prompt is present but empty, so relative inserts keep an anchor."""
    order = tuple(
        PromptOrderItem(identifier=e.identifier, enabled=e.enabled and e.identifier != "main")
        for e in default_prompt_order()
    )
    ctx = context(
        cc={"order": order},
        metadata=ChatMetadata(
            authors_note=AuthorsNote(prompt="NOTE", position=ExtensionPosition.BEFORE_PROMPT)
        ),
    )
    got = pairs(build(ctx))
    assert got[0] == ("system", "NOTE", None)
    assert all(content != MAIN for _, content, _ in got)


def test_marker_missing_from_the_order_goes_last_section_3_2() -> None:
    """§3.2: an old order without personaDescription puts the persona after everything."""
    order = tuple(e for e in default_prompt_order() if e.identifier != "personaDescription")
    ctx = context(cc={"order": order}, persona={"description": "I am {{user}}."})
    got = pairs(build(ctx))
    assert got[-1] == ("system", "I am Alex.", None)


def test_character_overrides_with_original_section_3_2() -> None:
    """§3.2: the card's system prompt replaces main, `{{original}}` is the preset's."""
    character = replace(
        SERAPHINA, system_prompt="Card rules. {{original}}", post_history_instructions="PHI"
    )
    got = pairs(build(context(character=character)))
    assert got[0] == ("system", f"Card rules. {MAIN}", None)
    assert got[-1] == ("system", "PHI", None)


def test_forbid_overrides_keeps_the_preset_prompt_section_3_2() -> None:
    """formats-presets.md §1.2: `forbid_overrides` ignores the card's prompt."""
    prompts = tuple(
        replace(p, forbid_overrides=True) if p.identifier == "main" else p
        for p in default_prompts()
    )
    character = replace(SERAPHINA, system_prompt="Card rules.")
    got = pairs(build(context(character=character, cc={"prompts": prompts})))
    assert got[0] == ("system", MAIN, None)


def test_example_parsing_section_3_4() -> None:
    """§3.4: blocks split on <START>, lines before a speaker join the first turn, first `Name:` removed."""
    character = replace(
        SERAPHINA,
        mes_example="{{user}}: one\nmore\n{{char}}: two\n<start>\n{{char}}: three Seraphina: kept",
    )
    got = [
        p for p in pairs(build(context(character=character))) if p[2] or p[1] == "[Example Chat]"
    ]
    assert got == [
        ("system", "[Example Chat]", None),
        ("system", "one\nmore", "example_user"),
        ("system", "two", "example_assistant"),
        ("system", "[Example Chat]", None),
        ("system", "three Seraphina: kept", "example_assistant"),
    ]


def _long_chat(n: int) -> tuple:
    return chat(*[(("user", "character")[i % 2], f"message number {i} here") for i in range(n)])


def test_history_fills_newest_first_without_holes_section_3_5() -> None:
    """§3.5 step 7: the first message that does not fit stops the history."""
    messages = _long_chat(40)
    messages = (*messages[:-3], replace(messages[-3], text="huge " * 400), *messages[-2:])
    prompt = build(context(messages=messages, cc={"max_context": 300, "max_tokens": 50}))
    history = [c for r, c, _ in pairs(prompt) if r in ("user", "assistant")]
    assert history == [m.text for m in messages[-2:]]
    cut = [i for i in prompt.ledger.items if not i.included and i.kind == "history"]
    # The message that did not fit, then everything older in one line.
    assert [i.source for i in cut] == [messages[-3].id, f"{len(messages) - 3} older messages"]
    assert cut[0].tokens > 0 and "did not fit" in cut[0].reason
    assert "stops at the first message" in cut[1].reason
    assert [i.code for i in cut] == ["history_did_not_fit", "history_stops"]


def test_history_before_examples_unless_pinned_section_3_3() -> None:
    """§3.3 step 7: history takes the budget first; pinned examples go first."""
    messages = _long_chat(60)
    budget = {"max_context": 260, "max_tokens": 50}
    unpinned = pairs(build(context(messages=messages, cc=budget)))
    assert not any(name for _, _, name in unpinned)
    pinned_ctx = context(messages=messages, cc=budget)
    pinned_ctx = replace(pinned_ctx, power_user=replace(pinned_ctx.power_user, pin_examples=True))
    pinned = pairs(build(pinned_ctx))
    assert [n for _, _, n in pinned if n] == ["example_user", "example_assistant"]
    assert len([1 for r, _, _ in pinned if r != "system"]) < len(
        [1 for r, _, _ in unpinned if r != "system"]
    )


def test_examples_partially_included_section_3_6() -> None:
    """§3.6: a block stops at its first unaffordable message; a later short block may still fit."""
    character = replace(
        SERAPHINA,
        mes_example="<START>\n{{user}}: hi\n{{char}}: " + "long " * 200 + "\n<START>\n{{user}}: yo",
        description="",
        personality="",
        scenario="",
    )
    ctx = context(
        character=character,
        messages=chat(("user", "Hello!")),
        cc={"max_context": 150, "max_tokens": 10},
    )
    names = [(c, n) for _, c, n in pairs(build(ctx)) if n or c == "[Example Chat]"]
    assert names == [
        ("[Example Chat]", None),
        ("hi", "example_user"),
        ("[Example Chat]", None),
        ("yo", "example_user"),
    ]


def test_required_part_over_budget_stops_assembly_section_3_3() -> None:
    """§3.3 step 2: an unaffordable fixed part aborts; the ledger says why."""
    character = replace(SERAPHINA, description="word " * 500)
    prompt = build(context(character=character, cc={"max_context": 100, "max_tokens": 10}))
    assert [c for _, c, _ in pairs(prompt)] == [MAIN]
    assert any(i.kind == "error" and "budget" in i.reason for i in prompt.ledger.items)


def test_continue_nudge_section_3_5() -> None:
    """§3.5 step 5 / §4: the continued message stays; the nudge quotes it, trimmed."""
    messages = chat(("user", "Go on"), ("character", "The path leads "))
    got = pairs(build(context(messages=messages, generation_type=GenerationType.CONTINUE)))
    assert got[-2] == ("assistant", "The path leads ", None)
    assert got[-1][1].endswith(": The path leads]")


def test_continue_prefill_moves_the_message_last_section_3_5() -> None:
    """§3.5 step 7: with continue prefill the continued message is the final assistant message."""
    messages = chat(("user", "Go on"), ("character", "The path leads"))
    ctx = context(
        messages=messages, generation_type=GenerationType.CONTINUE, cc={"continue_prefill": True}
    )
    character = replace(SERAPHINA, post_history_instructions="PHI")
    got = pairs(build(replace(ctx, characters=(character,))))
    assert got[-2:] == [("system", "PHI", None), ("assistant", "The path leads", None)]


def test_impersonate_prompt_last_section_4() -> None:
    """§4: the impersonation prompt is the very last message."""
    got = pairs(build(context(generation_type=GenerationType.IMPERSONATE)))
    assert got[-1][1].startswith("[Write your next reply from the point of view of Alex")


def test_swipe_drops_the_last_message_section_1() -> None:
    """§1 step 10: on swipe the message being swiped is not sent."""
    got = pairs(build(context(generation_type=GenerationType.SWIPE)))
    assert got[-1] == ("assistant", "Hi, I am Seraphina.", None)


def test_regenerate_deletes_a_last_reply_section_1() -> None:
    """§1 step 4: regenerate removes a last message that is not the user's."""
    messages = chat(("user", "Hello!"), ("character", "old reply"))
    got = pairs(build(context(messages=messages, generation_type=GenerationType.REGENERATE)))
    assert got[-1] == ("user", "Hello!", None)


def test_hidden_messages_are_not_sent_section_1() -> None:
    """§1 step 10: hidden (is_system) messages are left out."""
    messages = (
        msg(0, "user", "a"),
        msg(1, "character", "secret", hidden=True),
        msg(2, "user", "b"),
    )
    got = [c for r, c, _ in pairs(build(context(messages=messages))) if r != "system"]
    assert got == ["a", "b"]


@pytest.mark.parametrize(
    ("behavior", "expected"),
    [
        (NamesBehavior.NONE, ("Hi, I am Seraphina.", None)),
        (NamesBehavior.DEFAULT, ("Hi, I am Seraphina.", None)),
        (NamesBehavior.CONTENT, ("Seraphina: Hi, I am Seraphina.", None)),
        (NamesBehavior.COMPLETION, ("Hi, I am Seraphina.", "Seraphina")),
    ],
)
def test_names_behaviour_section_3_5(behavior: NamesBehavior, expected: tuple) -> None:
    """§3.5: none / default / message content / completion `name` field."""
    got = [
        (c, n)
        for r, c, n in pairs(build(context(cc={"names_behavior": behavior})))
        if r == "assistant"
    ]
    assert got == [expected]


def test_default_names_prefix_forced_avatars_section_3_5() -> None:
    """§3.5: default names prefix a non-user message sent under a forced avatar."""
    messages = (
        msg(0, "character", "as someone", name="Stranger", forced_avatar=True),
        msg(1, "user", "hi", forced_avatar=True),
    )
    got = [c for r, c, _ in pairs(build(context(messages=messages))) if r != "system"]
    assert got == ["Stranger: as someone", "hi"]


def test_completion_names_are_sanitised_section_3_5() -> None:
    """§3.5: COMPLETION names outside [A-Za-z0-9_] become `_`."""
    messages = (msg(0, "user", "hi", name="Ann Lee!"),)
    got = [
        n
        for r, _, n in pairs(
            build(context(messages=messages, cc={"names_behavior": NamesBehavior.COMPLETION}))
        )
        if r == "user"
    ]
    assert got == ["Ann_Lee_"]


def test_in_chat_prompt_manager_prompt_merges_first_section_5_2() -> None:
    """§5.2: a prompt-manager prompt at a depth comes before extension prompts of that role."""
    custom = PromptSlot(
        "custom1", "Mine", "system", "CUSTOM", injection_position=1, injection_depth=1
    )
    order = (*default_prompt_order(), PromptOrderItem(identifier="custom1"))
    ctx = context(
        cc={"prompts": (*default_prompts(), custom), "order": order},
        character=replace(
            SERAPHINA, depth_prompt=DepthPrompt(prompt="NOTE", depth=1, role="system")
        ),
    )
    got = pairs(build(ctx))
    assert ("system", "CUSTOM\nNOTE", None) in got
    assert got.index(("system", "CUSTOM\nNOTE", None)) == len(got) - 2


def test_relative_custom_prompt_keeps_its_place_section_3_1() -> None:
    """§3.1: a relative custom prompt sits at its place in the order, with its role."""
    custom = PromptSlot("custom1", "Mine", "user", "RULES for {{char}}")
    order = list(default_prompt_order())
    order.insert(1, PromptOrderItem(identifier="custom1"))
    got = pairs(build(context(cc={"prompts": (*default_prompts(), custom), "order": tuple(order)})))
    assert got[1] == ("user", "RULES for Seraphina", None)


def test_a_custom_prompt_is_named_in_the_ledger_by_its_name() -> None:
    """Beyond ST: the inspector shows a custom slot by the name the person gave it, not by
    its identifier (a UUID in SillyTavern's files); built-in slots keep their identifier."""
    custom = PromptSlot("0f6c1d2e-7a4b-4c55-9d3e-2b1a0c9d8e7f", "House rules", "user", "RULES")
    order = list(default_prompt_order())
    order.insert(1, PromptOrderItem(identifier=custom.identifier))
    prompt = build(context(cc={"prompts": (*default_prompts(), custom), "order": tuple(order)}))
    sources = [item.source for item in prompt.ledger.items]
    assert "House rules" in sources and custom.identifier not in sources
    assert "main" in sources


def test_a_custom_prompt_in_the_chat_is_named_in_the_ledger_by_its_name() -> None:
    """Beyond ST: a custom slot placed in the chat at a depth is named as the person named
    it in its depth injection's ledger line; a built-in slot there keeps its identifier."""
    custom = PromptSlot(
        "0f6c1d2e-7a4b-4c55-9d3e-2b1a0c9d8e7f",
        "House rules",
        "user",
        "RULES",
        injection_position=1,
        injection_depth=1,
    )
    main = next(p for p in default_prompts() if p.identifier == "nsfw")
    placed = replace(main, injection_position=1, injection_depth=2, content="AUX")
    prompts = tuple(placed if p.identifier == "nsfw" else p for p in default_prompts())
    order = (*default_prompt_order(), PromptOrderItem(identifier=custom.identifier))
    prompt = build(context(cc={"prompts": (*prompts, custom), "order": order}))
    depth = {i.source_params.get("depth"): i for i in prompt.ledger.items if i.kind == "injection"}
    assert depth[1].source == "depth 1 user: House rules"
    assert depth[1].source_params["names"] == "House rules"
    assert depth[2].source == "depth 2 system: nsfw"


def test_authors_note_after_main_when_in_prompt_section_3_3() -> None:
    """§3.3 step 5: a relative author's note goes right after (IN_PROMPT) the main prompt."""
    ctx = context(
        metadata=ChatMetadata(
            authors_note=AuthorsNote(prompt="NOTE", position=ExtensionPosition.IN_PROMPT)
        )
    )
    got = pairs(build(ctx))
    assert got[:2] == [("system", MAIN, None), ("system", "NOTE", None)]


def test_persona_in_prompt_uses_its_marker_section_2_1() -> None:
    """§2.1: persona position IN_PROMPT fills the personaDescription marker (after WI before)."""
    got = pairs(
        build(
            context(
                persona={"description": "{{user}} is tall", "position": PersonaPosition.IN_PROMPT}
            )
        )
    )
    assert got[1] == ("system", "Alex is tall", None)


def test_squash_system_messages_section_3_3() -> None:
    """§3.3 step 9: runs of unnamed system messages merge; separators never do."""
    got = pairs(build(context(cc={"squash_system_messages": True})))
    assert got[0] == (
        "system",
        f"{MAIN}\nD\n[Seraphina's personality: P]\n[Circumstances and context of the dialogue: S]",
        None,
    )
    assert ("system", "[Example Chat]", None) in got
    assert ("system", "[Start a new Chat]", None) in got


def test_group_chat_nudge_and_names_section_3_5() -> None:
    """§3.5: in a group, other speakers are prefixed and the group nudge closes the history."""
    other = replace(SERAPHINA, name="Aria")
    messages = (msg(0, "character", "hello", name="Aria"), msg(1, "user", "hi"))
    ctx = context(messages=messages, group_members=("Seraphina", "Aria"))
    ctx = replace(ctx, characters=(SERAPHINA, other))
    got = pairs(build(ctx))
    assert ("assistant", "Aria: hello", None) in got
    assert got[-1] == ("system", "[Write the next reply only as Seraphina.]", None)
    assert ("system", "[Start a new group chat. Group members: Seraphina, Aria]", None) in got


def test_ledger_accounts_for_every_token() -> None:
    """The ledger's included parts sum to the prompt's total and list every message."""
    prompt = build(context())
    included = [i for i in prompt.ledger.items if i.included and i.kind != "lorebook_entry"]
    assert sum(i.tokens for i in included) == prompt.ledger.total_tokens
    assert [i.text for i in included if i.position is not None] == [
        m.content for m in prompt.messages
    ]
    assert prompt.ledger.budget == 4095 - 300


def test_cache_friendly_puts_volatile_parts_after_history() -> None:
    """Beyond ST: depth injections move after the chat so the prefix stays stable."""
    ctx = context(
        messages=_long_chat(8),
        character=replace(
            SERAPHINA, depth_prompt=DepthPrompt(prompt="NOTE", depth=4, role="system")
        ),
    )
    normal = pairs(build(ctx))
    friendly = pairs(build(replace(ctx, layout=CACHE)))
    assert normal.index(("system", "NOTE", None)) < len(normal) - 4
    assert friendly[-1] == ("system", "NOTE", None)
    assert sorted(normal) == sorted(friendly)


def test_prompt_bias_after_the_ordered_prompts_section_7_3() -> None:
    """§7.3 / §3.3 step 4: the bias is a system message after every ordered prompt."""
    messages = (msg(0, "character", "Hi."), msg(1, "user", "Hello!", bias="{{char}} smiles"))
    character = replace(SERAPHINA, post_history_instructions="PHI")
    got = pairs(build(context(messages=messages, character=character)))
    assert got[-2:] == [("system", "PHI", None), ("system", "Seraphina smiles", None)]
    swiped = pairs(
        build(
            context(
                messages=(*messages, msg(2, "character", "Hey")),
                generation_type=GenerationType.SWIPE,
            )
        )
    )
    assert ("system", "Seraphina smiles", None) in swiped
    continued = pairs(build(context(messages=messages, generation_type=GenerationType.CONTINUE)))
    assert ("system", "Seraphina smiles", None) not in continued


def test_strip_examples_leaves_no_example_messages() -> None:
    """power_user.strip_examples: examples are dropped before Chat Completion sees them."""
    ctx = context()
    ctx = replace(ctx, power_user=replace(ctx.power_user, strip_examples=True))
    got = pairs(build(ctx))
    assert not any(name for _, _, name in got)
    assert ("system", "[Example Chat]", None) not in got


def test_completion_names_count_utf16_units_section_3_5() -> None:
    """§3.5: a character outside the BMP is two JavaScript code units, so two `_`."""
    messages = (msg(0, "user", "hi", name="Ann🌙"),)
    got = [
        n
        for r, _, n in pairs(
            build(context(messages=messages, cc={"names_behavior": NamesBehavior.COMPLETION}))
        )
        if r == "user"
    ]
    assert got == ["Ann__"]


def test_cache_friendly_moves_slots_with_changing_macros() -> None:
    """Beyond ST: a prompt with {{random}} or {{time}} goes after the stable prefix."""
    clock = PromptSlot("clock", "Clock", "system", "It is {{time}}.")
    order = list(default_prompt_order())
    order.insert(1, PromptOrderItem(identifier="clock"))
    ctx = context(cc={"prompts": (*default_prompts(), clock), "order": tuple(order)})
    normal = pairs(build(ctx))
    friendly = pairs(build(replace(ctx, layout=CACHE)))
    assert normal[1][1].startswith("It is ")
    assert friendly[-1][1].startswith("It is ")


def test_card_fields_are_trimmed_for_their_formats_section_2() -> None:
    """§2: card fields are trimmed and `\\r`-free, also where a format prints them."""
    character = replace(SERAPHINA, scenario="  S\r\n", personality="P \n")
    got = pairs(build(context(character=character)))
    assert ("system", "[Circumstances and context of the dialogue: S]", None) in got
    assert ("system", "[Seraphina's personality: P]", None) in got


def test_custom_stop_strings_section_7_1() -> None:
    """§7.1: Chat Completion carries only the custom stop strings, macro'd; the provider
    applies its limit (openai.js: 4 for OpenAI, none for Claude)."""
    ctx = context()
    strings = '["{{user}}:", "A", "B", "C", "D"]'
    ctx = replace(ctx, power_user=replace(ctx.power_user, custom_stopping_strings=strings))
    assert build(ctx).stop == ("Alex:", "A", "B", "C", "D")
    assert build(context()).stop == ()


def test_the_prompt_carries_the_solo_new_chat_separator_with_its_macros() -> None:
    """Gemini's stop list takes the preset's new-chat prompt, macros done (algo-providers.md
    §4.8)."""
    prompt = build(context(cc={"new_chat_prompt": "[Start a new chat with {{char}}]"}))
    assert prompt.new_chat_prompt == "[Start a new chat with Seraphina]"
    assert build(context(cc={"new_chat_prompt": ""})).new_chat_prompt == ""
