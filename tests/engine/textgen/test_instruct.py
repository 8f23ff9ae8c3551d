"""Instruct template pieces (algo-prompt-assembly.md §6.4, §6.6, §6.9, §7.1; formats-presets.md §2)."""

from __future__ import annotations

from taverna.engine.textgen.examples import ExampleTurn, split_example_turns
from taverna.engine.textgen.instruct import InstructFormat, SequenceVariant
from taverna.model.presets import InstructTemplate

ALPACA = InstructTemplate(
    input_sequence="### Instruction:",
    output_sequence="### Response:",
    system_sequence="### System:",
    wrap=True,
    names_behavior="force",
)


def fmt(
    template: InstructTemplate = ALPACA, group: bool = False, separator: str = ""
) -> InstructFormat:
    def macros(text: str) -> str:
        return text.replace("{{user}}", "Alex").replace("{{char}}", "Aria")

    return InstructFormat(template, "Alex", "Aria", macros, group, separator)


def test_wrap_joins_with_newlines_and_an_empty_suffix_becomes_one() -> None:
    """§2.2 / §6.4 step 5-6."""
    assert fmt().message("Alex", "Hi", True, False) == "### Instruction:\nHi\n"
    unwrapped = fmt(ALPACA.model_copy(update={"wrap": False}))
    assert unwrapped.message("Alex", "Hi", True, False) == "### Instruction:Hi"


def test_names_behaviour() -> None:
    """§6.4 step 1: always / force (groups, forced avatars) / none; never for the narrator."""
    always = fmt(ALPACA.model_copy(update={"names_behavior": "always"}))
    assert always.message("Aria", "Yo", False, False) == "### Response:\nAria: Yo\n"
    assert always.message("", "Note", False, True) == "### System:\nNote\n"
    force = fmt()
    assert force.message("Aria", "Yo", False, False) == "### Response:\nYo\n"
    assert (
        force.message("Guard", "Halt", False, False, forced_avatar=True)
        == "### Response:\nGuard: Halt\n"
    )
    assert fmt(group=True).message("Bran", "Hey", False, False) == "### Response:\nBran: Hey\n"
    assert fmt(group=True).message("Alex", "Hey", True, False) == "### Instruction:\nHey\n"
    none = fmt(ALPACA.model_copy(update={"names_behavior": "none"}))
    assert none.message("Bran", "Hey", False, False, forced_avatar=True) == "### Response:\nHey\n"


def test_first_and_last_variants_fall_back_to_the_plain_sequence() -> None:
    template = ALPACA.model_copy(
        update={"first_input_sequence": "<FI>", "last_output_sequence": "<LO>"}
    )
    f = fmt(template)
    assert f.message("Alex", "a", True, False, variant=SequenceVariant.FIRST).startswith("<FI>\n")
    assert f.message("Alex", "a", True, False, variant=SequenceVariant.LAST).startswith(
        "### Instruction:\n"
    )
    assert f.message("Aria", "a", False, False, variant=SequenceVariant.LAST).startswith("<LO>\n")
    assert f.message("Aria", "a", False, False, variant=SequenceVariant.FIRST).startswith(
        "### Response:\n"
    )


def test_system_same_as_user_and_name_macro() -> None:
    template = ALPACA.model_copy(
        update={
            "system_same_as_user": True,
            "input_sequence": "<{{name}}>",
            "input_suffix": "</{{name}}>",
        }
    )
    f = fmt(template)
    assert f.message("", "Note", False, True) == "<System>\nNote</System>"
    assert f.message("Alex", "Hi", True, False) == "<Alex>\nHi</Alex>"
    raw = fmt(template.model_copy(update={"macro": False}))
    assert raw.message("Alex", "Hi", True, False) == "<{{name}}>\nHi</{{name}}>"


def test_final_line() -> None:
    """§6.6: sequence choice, names, bias, quiet."""
    f = fmt()
    assert f.final_line("Aria") == "\n### Response:\n"
    assert f.final_line("Alex", impersonate=True) == "\n### Instruction:\n"
    assert f.final_line("Aria", prompt_bias="  She smiled") == "\n### Response:\nShe smiled\n"
    always = fmt(ALPACA.model_copy(update={"names_behavior": "always"}))
    assert always.final_line("Aria") == "\n### Response:\nAria:"
    assert always.final_line("Aria", prompt_bias=" She") == "\n### Response:\nAria: She"
    quiet = fmt(ALPACA.model_copy(update={"last_system_sequence": "### Note:"}))
    assert quiet.final_line("System", quiet=True) == "### Note:\n"


def test_examples_are_parsed_into_turns_and_wrapped() -> None:
    """§6.9: separator item per block; with `force` the user's example turns keep the name."""
    blocks = ["***\nAlex: Hi there\nAria: Hello\nsecond line\n"]
    out = fmt(separator="***").examples(blocks)
    assert out == [
        "***\n",
        "### Instruction:\nAlex: Hi there\n",
        "### Response:\nHello\nsecond line\n",
    ]
    skipped = fmt(ALPACA.model_copy(update={"skip_examples": True}), separator="***").examples(
        ["<START>\nAlex: x\n"]
    )
    assert skipped == ["***\nAlex: x\n"]
    # A block with no speaker lines stays as written (with the separator heading).
    assert fmt(separator="---").examples(["<START>\njust text\n"]) == ["---\njust text\n"]


def test_example_suffix_default_needs_macro_on() -> None:
    """§6.9 quirk: without "macro" the empty suffix is not replaced by a newline."""
    f = fmt(ALPACA.model_copy(update={"macro": False}))
    assert f.examples(["<START>\nAria: Hi\n"]) == ["### Response:\nHi"]


def test_split_example_turns() -> None:
    """§3.4: the first line is skipped; other lines continue the current turn."""
    block = "<START>\nnarration first\nAlex: Hi\nAria: Hello\nmore\nAlex: Bye"
    assert split_example_turns(block, "Alex", "Aria") == (
        ExampleTurn("example_user", "narration first\n Hi"),  # only the ends are trimmed
        ExampleTurn("example_assistant", "Hello\nmore"),
        ExampleTurn("example_user", "Bye"),
    )
    assert split_example_turns(block, "Alex", "Aria", group=True)[1].content == "Aria: Hello\nmore"


def test_stop_sequences() -> None:
    """§7.1 step 2: each line once, whitespace-only lines skipped, newline-prefixed when wrapped."""
    template = ALPACA.model_copy(
        update={
            "stop_sequence": "</s>",
            "input_sequence": "### Instruction:\n{{name}}:",
            "output_sequence": " ",
            "last_system_sequence": "### Instruction:",
        }
    )
    assert fmt(template).stop_sequences() == [
        "\n</s>",
        "\n### Instruction:",
        "\nAlex:",
        "\n### System:",
    ]
    assert fmt(template.model_copy(update={"wrap": False})).stop_sequences()[0] == "</s>"


def test_system_prompt_prefix_and_suffix() -> None:
    template = ALPACA.model_copy(
        update={"system_sequence_prefix": "<<{{name}}>>", "system_sequence_suffix": "<</S>>"}
    )
    assert fmt(template).system_prompt("Be kind.") == "<<System>>\nBe kind.\n<</S>>"
