"""The Text Completion prompt, pinned rule by rule (algo-prompt-assembly.md §5.3, §6, §7.1)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import (
    AssemblyContext,
    CharacterInfo,
    ChatMessage,
    ChatMetadata,
    GenerationType,
    Speaker,
)
from taverna.engine.tokens import EstimateTokenizer
from taverna.model.character import DepthPrompt
from taverna.model.chat import AuthorsNote
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.persona import PersonaPosition
from taverna.model.presets import ContextTemplate, InstructTemplate
from taverna.model.settings import (
    DEFAULT_CONTEXT_TEMPLATE,
    PersonaInfo,
    PowerUserSettings,
    TextCompletionSettings,
)
from tests.support.cases import case_prompt_args

CHATML = InstructTemplate(
    name="ChatML",
    input_sequence="<|im_start|>user",
    output_sequence="<|im_start|>assistant",
    system_sequence="<|im_start|>system",
    stop_sequence="<|im_end|>",
    input_suffix="<|im_end|>\n",
    output_suffix="<|im_end|>\n",
    system_suffix="<|im_end|>\n",
    names_behavior="always",
)
CHATML_CONTEXT = ContextTemplate(
    name="ChatML",
    story_string=(
        "<|im_start|>system\n{{#if system}}{{system}}\n{{/if}}{{#if description}}{{description}}\n"
        "{{/if}}{{#if personality}}{{char}}'s personality: {{personality}}\n{{/if}}"
        "{{#if scenario}}Scenario: {{scenario}}\n{{/if}}{{#if persona}}{{persona}}\n{{/if}}"
        "{{trim}}<|im_end|>"
    ),
    example_separator="",
    chat_start="",
    use_stop_strings=False,
)
PLAIN_CONTEXT = DEFAULT_CONTEXT_TEMPLATE.model_copy(update={"use_stop_strings": False})


def message(i: int, speaker: Speaker, name: str, text: str, **kw: object) -> ChatMessage:
    return ChatMessage(str(i), speaker, name, text, **kw)  # type: ignore[arg-type]


def seraphina(**changes: object) -> AssemblyContext:
    """The spec's worked example (§3.8, §6.8)."""
    character = CharacterInfo(
        name="Seraphina",
        description="D",
        personality="P",
        scenario="S",
        mes_example="<START>\n{{user}}: Hey\n{{char}}: Hello there",
    )
    context = AssemblyContext(
        characters=(character,),
        messages=(
            message(0, Speaker.CHARACTER, "Seraphina", "Hi, I am Seraphina."),
            message(1, Speaker.USER, "Alex", "Hello!"),
        ),
        persona=PersonaInfo(name="Alex"),
        api="textgen",
        text_completion=TextCompletionSettings(context=PLAIN_CONTEXT),
        tokenizer="estimate",
    )
    return replace(context, **changes)  # type: ignore[arg-type]


def chatml(context: AssemblyContext, **settings: object) -> AssemblyContext:
    text = replace(
        context.text_completion,
        instruct=CHATML,
        instruct_enabled=True,
        context=CHATML_CONTEXT,
        **settings,
    )
    return replace(context, text_completion=text)


def test_worked_example_plain() -> None:
    """§6.8: Default context template, no instruct mode."""
    prompt = assemble(seraphina())
    assert prompt.kind == "text"
    assert prompt.text == (
        "Write Seraphina's next reply in a fictional chat between Seraphina and Alex.\n"
        "D\n"
        "Seraphina's personality: P\n"
        "Scenario: S\n"
        "***\n"
        "Alex: Hey\n"
        "Seraphina: Hello there\n"
        "***\n"
        "Seraphina: Hi, I am Seraphina.\n"
        "Alex: Hello!\n"
        "Seraphina:"
    )
    assert prompt.stop == ("\nAlex:",)


def test_worked_example_chatml() -> None:
    """§6.8: ChatML instruct and context templates, names always, wrap on; {{trim}}."""
    prompt = assemble(chatml(seraphina()))
    assert prompt.text == (
        "<|im_start|>system\n"
        "Write Seraphina's next reply in a fictional chat between Seraphina and Alex.\n"
        "D\n"
        "Seraphina's personality: P\n"
        "Scenario: S<|im_end|>\n"
        "<|im_start|>user\n"
        "Alex: Hey<|im_end|>\n"
        "<|im_start|>assistant\n"
        "Seraphina: Hello there<|im_end|>\n"
        "<|im_start|>assistant\n"
        "Seraphina: Hi, I am Seraphina.<|im_end|>\n"
        "<|im_start|>user\n"
        "Alex: Hello!<|im_end|>\n"
        "<|im_start|>assistant\n"
        "Seraphina:"
    )
    # §7.1: names first, then each instruct sequence once, prefixed with a newline.
    assert prompt.stop == (
        "\nAlex:",
        "\n<|im_end|>",
        "\n<|im_start|>user",
        "\n<|im_start|>assistant",
        "\n<|im_start|>system",
    )


def long_chat(count: int) -> tuple[ChatMessage, ...]:
    out = []
    for i in range(count):
        user = i % 2 == 1
        name = "Alex" if user else "Seraphina"
        out.append(
            message(
                i, Speaker.USER if user else Speaker.CHARACTER, name, f"line {i:03d} " + "x" * 40
            )
        )
    return tuple(out)


def test_history_is_fitted_newest_first_without_holes() -> None:
    """§6.5 steps 3-5: newest to oldest while the total stays under the budget."""
    context = seraphina(messages=long_chat(60))
    text = replace(context.text_completion, max_context=700, amount_gen=100)
    prompt = assemble(replace(context, text_completion=text))
    kept = [i for i in range(60) if f"line {i:03d} " in prompt.text]
    assert kept and kept[-1] == 59
    assert kept == list(range(kept[0], 60))  # a contiguous newest run
    assert kept[0] > 0
    estimate = EstimateTokenizer()
    assert estimate.count(prompt.text) + 64 < 600 + 30  # about the budget, padding included
    dropped = [item for item in prompt.ledger.items if not item.included and item.kind == "history"]
    assert len(dropped) == 1 and dropped[0].reason.startswith("context full")
    assert f"{kept[0]} older message(s)" in dropped[0].reason
    # the page says it by its code: why, and how many
    assert dropped[0].code == "older_not_sent"
    assert dict(dropped[0].params) == {"why": "context_full", "n": kept[0]}
    assert dropped[0].source == f"0..{kept[0] - 1}"
    assert prompt.ledger.budget == 600


def test_examples_take_what_is_left_and_stop_at_the_first_miss() -> None:
    """§6.5 step 7: whole example blocks, in order, only while they fit."""
    blocks = "".join(f"<START>\n{{{{user}}}}: question {n} {'q' * 200}\n" for n in range(5))
    character = replace(seraphina().character, mes_example=blocks)
    context = seraphina(characters=(character,))
    text = replace(context.text_completion, max_context=500, amount_gen=100)
    prompt = assemble(replace(context, text_completion=text))
    present = [n for n in range(5) if f"question {n} " in prompt.text]
    assert present == list(range(len(present)))
    assert 0 < len(present) < 5
    assert "Hello!" in prompt.text  # history has priority over examples


def test_pinned_examples_always_go_in() -> None:
    blocks = "".join(f"<START>\n{{{{user}}}}: question {n} {'q' * 200}\n" for n in range(5))
    character = replace(seraphina().character, mes_example=blocks)
    context = seraphina(characters=(character,), power_user=PowerUserSettings(pin_examples=True))
    text = replace(context.text_completion, max_context=2000, amount_gen=100)
    prompt = assemble(replace(context, text_completion=text))
    assert all(f"question {n} " in prompt.text for n in range(5))


def test_injections_go_at_their_depth_as_narrator_lines() -> None:
    """§5.2/§5.3: depth counts real messages; system injections have no name."""
    character = replace(seraphina().character, depth_prompt=DepthPrompt(prompt="NOTE", depth=1))
    note = AuthorsNote(prompt="AN", depth=0, position=ExtensionPosition.IN_CHAT)
    context = seraphina(characters=(character,), metadata=ChatMetadata(authors_note=note))
    prompt = assemble(context)
    assert prompt.text.endswith(
        "Seraphina: Hi, I am Seraphina.\nNOTE\nAlex: Hello!\nAN\nSeraphina:"
    )


def test_injections_in_instruct_use_the_system_sequence() -> None:
    note = AuthorsNote(prompt="AN", depth=0, role=InjectionRole.USER)
    prompt = assemble(chatml(seraphina(metadata=ChatMetadata(authors_note=note))))
    # A user-role injection speaks as the user (§5.3) and is the last user message (LAST input).
    assert prompt.text.endswith(
        "<|im_start|>user\nAlex: Hello!<|im_end|>\n"
        "<|im_start|>user\nAlex: AN<|im_end|>\n"
        "<|im_start|>assistant\nSeraphina:"
    )


def test_continue_moves_depth_zero_before_the_continued_message() -> None:
    """§5.3: on continue, depth-0 injections are placed at depth 1; §6.5 step 2."""
    chat = (
        message(0, Speaker.CHARACTER, "Seraphina", "Hi."),
        message(1, Speaker.USER, "Alex", "Hello!"),
        message(2, Speaker.CHARACTER, "Seraphina", "Well, I"),
    )
    note = AuthorsNote(prompt="AN", depth=0)
    context = seraphina(
        messages=chat,
        metadata=ChatMetadata(authors_note=note),
        generation_type=GenerationType.CONTINUE,
    )
    prompt = assemble(context)
    assert prompt.text.endswith("Alex: Hello!\nAN\nSeraphina: Well, I")
    instruct = assemble(chatml(context))
    assert instruct.text.endswith(
        "<|im_start|>system\nAN<|im_end|>\n<|im_start|>assistant\nSeraphina: Well, I"
    )


def test_impersonate_ends_with_the_user_turn() -> None:
    """§6.5 step 9 and §6.6: the reply is written as the user; stop on the character."""
    plain = assemble(seraphina(generation_type=GenerationType.IMPERSONATE))
    assert plain.text.endswith("Alex: Hello!\nAlex:")
    assert plain.stop[0] == "\nSeraphina:"
    instruct = assemble(chatml(seraphina(generation_type=GenerationType.IMPERSONATE)))
    assert instruct.text.endswith("Alex: Hello!<|im_end|>\n<|im_start|>user\nAlex:")


def test_system_prompt_prefers_the_character_and_keeps_original() -> None:
    """§6.1: the card's system prompt replaces the preset's; {{original}} is the preset's."""
    character = replace(seraphina().character, system_prompt="Card says: {{original}}")
    prompt = assemble(chatml(seraphina(characters=(character,))))
    assert prompt.text.startswith(
        "<|im_start|>system\nCard says: Write Seraphina's next reply in a fictional chat "
        "between Seraphina and Alex.\n"
    )
    off = replace(seraphina().text_completion, system_prompt_enabled=False)
    assert assemble(seraphina(text_completion=off)).text.startswith("D\n")


def test_legacy_system_prefix_and_suffix_wrap_the_system_prompt() -> None:
    instruct = CHATML.model_copy(
        update={"system_sequence_prefix": "[{{name}}]", "system_sequence_suffix": "[/S]"}
    )
    context = chatml(seraphina())
    text = replace(context.text_completion, instruct=instruct)
    prompt = assemble(replace(context, text_completion=text))
    assert "<|im_start|>system\n[System]\nWrite Seraphina's" in prompt.text
    assert "Alex.\n[/S]\nD\n" in prompt.text


def test_names_force_only_in_groups_or_forced_avatars() -> None:
    """§6.4: `force` names only other speakers in a group or messages with a forced avatar."""
    forced = CHATML.model_copy(update={"names_behavior": "force"})
    chat = (
        message(0, Speaker.CHARACTER, "Seraphina", "Hi."),
        message(1, Speaker.USER, "Alex", "Hello!"),
        message(2, Speaker.CHARACTER, "Guard", "Halt!", forced_avatar=True),
    )
    context = chatml(seraphina(messages=chat))
    text = replace(context.text_completion, instruct=forced)
    prompt = assemble(replace(context, text_completion=text))
    assert "<|im_start|>assistant\nHi.<|im_end|>" in prompt.text
    assert "<|im_start|>user\nAlex: Hello!" not in prompt.text
    assert "<|im_start|>assistant\nGuard: Halt!" in prompt.text
    assert prompt.text.endswith("<|im_start|>assistant\n")


def test_first_and_last_sequences() -> None:
    """§6.4: the oldest message takes FIRST, the last user message LAST input."""
    instruct = CHATML.model_copy(
        update={
            "first_output_sequence": "<FIRST>",
            "last_input_sequence": "<LASTIN>",
            "last_output_sequence": "<LASTOUT>",
        }
    )
    context = chatml(seraphina())
    text = replace(context.text_completion, instruct=instruct)
    prompt = assemble(replace(context, text_completion=text))
    assert "<FIRST>\nSeraphina: Hi, I am Seraphina." in prompt.text
    assert "<LASTIN>\nAlex: Hello!" in prompt.text
    assert prompt.text.endswith("<LASTOUT>\nSeraphina:")


def test_mistral_filler_before_the_name() -> None:
    """§6.6: an output sequence ending in a space lends it to the last output sequence."""
    mistral = InstructTemplate(
        input_sequence="[INST] ",
        output_sequence="[/INST] ",
        last_output_sequence="[/INST]",
        wrap=False,
        names_behavior="always",
    )
    context = seraphina()
    text = replace(context.text_completion, instruct=mistral, instruct_enabled=True)
    prompt = assemble(replace(context, text_completion=text))
    assert prompt.text.endswith("[/INST] Seraphina:")


def test_user_alignment_message_when_history_starts_with_the_character() -> None:
    """§6.5 step 6."""
    instruct = CHATML.model_copy(update={"user_alignment_message": "Let's begin."})
    context = chatml(seraphina())
    text = replace(context.text_completion, instruct=instruct)
    prompt = assemble(replace(context, text_completion=text))
    assert (
        "<|im_start|>user\nAlex: Let's begin.<|im_end|>\n<|im_start|>assistant\nSeraphina: Hi,"
        in prompt.text
    )


def test_persona_goes_in_the_story_string_only_in_prompt_position() -> None:
    """§2.1 / §6.2: `{{persona}}` is empty unless the persona position is "in prompt"."""
    persona = PersonaInfo(name="Alex", description="Alex is a knight.")
    assert "Alex is a knight.\n" in assemble(seraphina(persona=persona)).text
    at_depth = replace(persona, position=PersonaPosition.AT_DEPTH, depth=0)
    text = assemble(seraphina(persona=at_depth)).text
    assert text.endswith("Alex: Hello!\nAlex is a knight.\nSeraphina:")


def test_story_string_without_trailing_newline_when_instruct_does_not_wrap() -> None:
    """§6.2 step 4."""
    instruct = CHATML.model_copy(update={"wrap": False})
    context = chatml(seraphina())
    text = replace(
        context.text_completion,
        instruct=instruct,
        context=CHATML_CONTEXT.model_copy(update={"story_string": "\n\n{{description}}"}),
    )
    prompt = assemble(replace(context, text_completion=text))
    assert prompt.text.startswith("D<|im_start|>user")


def test_quiet_prompt_in_instruct_mode() -> None:
    """§6.5 step 9: the quiet prompt as a system turn, then the system reply line."""
    context = chatml(
        seraphina(generation_type=GenerationType.QUIET, quiet_prompt="Summarize {{char}}.")
    )
    prompt = assemble(context)
    assert prompt.text.endswith(
        "Alex: Hello!<|im_end|>\n<|im_start|>system\nSummarize Seraphina.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_stop_strings_follow_the_settings() -> None:
    """§7.1: names, sequences, template separators, custom strings, single line first."""
    power = PowerUserSettings(
        custom_stopping_strings='["END", "{{char}} stops", "", 3]', single_line=True
    )
    context = chatml(seraphina(power_user=power))
    template = CHATML_CONTEXT.model_copy(
        update={"use_stop_strings": True, "chat_start": "###", "example_separator": "---"}
    )
    text = replace(context.text_completion, context=template)
    prompt = assemble(replace(context, text_completion=text))
    assert prompt.stop == (
        "\n",
        "\nAlex:",
        "\n<|im_end|>",
        "\n<|im_start|>user",
        "\n<|im_start|>assistant",
        "\n<|im_start|>system",
        "\n###",
        "\n---",
        "END",
        "Seraphina stops",
    )
    unnamed = template.model_copy(update={"names_as_stop_strings": False})
    prompt = assemble(replace(context, text_completion=replace(text, context=unnamed)))
    assert "\nAlex:" not in prompt.stop


def test_allow_jailbreak_adds_the_post_history_instructions_as_user_turn() -> None:
    """§6.7: only when the context template allows it."""
    character = replace(seraphina().character, post_history_instructions="Stay in character.")
    context = chatml(seraphina(characters=(character,)))
    assert "Stay in character." not in assemble(context).text
    template = CHATML_CONTEXT.model_copy(update={"allow_jailbreak": True})
    text = replace(context.text_completion, context=template)
    prompt = assemble(replace(context, text_completion=text))
    assert prompt.text.endswith(
        "<|im_start|>user\nStay in character.<|im_end|>\n<|im_start|>assistant\nSeraphina:"
    )


def test_oracle_case_07_prompt_and_stop(oracle_cases: Path) -> None:
    """The ChatML case SillyTavern recorded, through `taverna prompt --api textgen`."""
    case = oracle_cases / "07_text_completion_chatml"
    expected = json.loads((case / "expected.json").read_text())
    command = [
        sys.executable,
        "-c",
        "from taverna.cli.main import main; main()",
        *case_prompt_args(case, "--api", "textgen"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["prompt"] == expected["prompt"]
    assert body["stop"] == expected["stop"]


def _sized_chat(count: int) -> tuple[ChatMessage, ...]:
    # Each formatted line ("Name: text\n") is 67 characters: exactly 20 estimated tokens.
    out = []
    for i in range(count):
        if i % 2:
            out.append(message(i, Speaker.USER, "Alex", f"{i:02d}" + "u" * 58))
        else:
            out.append(message(i, Speaker.CHARACTER, "Seraphina", f"{i:02d}" + "c" * 53))
    return tuple(out)


def _kept(prompt_text: str, count: int) -> list[int]:
    return [i for i in range(count) if f"\n{i:02d}" in prompt_text or f": {i:02d}" in prompt_text]


def test_fitting_counts_exactly_like_sillytavern() -> None:
    """§6.5: base = story + chat start + last line (+ padding), each message added while the
    running total stays strictly under max_context - amount_gen."""
    character = CharacterInfo(name="Seraphina", description="D")
    no_system = replace(seraphina().text_completion, system_prompt_enabled=False, amount_gen=50)
    # Base text "D\n" + "***\n" + "\nSeraphina:" = 17 characters = 6 tokens.
    for max_context, padding, kept in ((150, 0, 4), (136, 0, 3), (137, 0, 4), (200, 64, 3)):
        context = seraphina(
            characters=(character,),
            messages=_sized_chat(10),
            text_completion=replace(no_system, max_context=max_context),
            power_user=PowerUserSettings(token_padding=padding),
        )
        prompt = assemble(context)
        assert _kept(prompt.text, 10) == list(range(10 - kept, 10)), (max_context, padding)
