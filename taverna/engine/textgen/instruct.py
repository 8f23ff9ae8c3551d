"""Instruct templates: each message wrapped in its role's sequences, and the final line.

Re-implements SillyTavern 1.12.6's instruct mode (algo-prompt-assembly.md §6.1,
§6.4, §6.6, §6.9; formats-presets.md §2): prefixes and suffixes per role with the
first/last variants, names behaviour, `wrap`, `macro`, the system prompt's legacy
prefix/suffix, example dialogue formatting, and the stop strings the sequences give.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from taverna.engine.textgen.examples import split_example_turns
from taverna.model.presets import InstructTemplate

Macros = Callable[[str], str]

_NAME = re.compile(r"\{\{name\}\}", re.IGNORECASE)
_START = re.compile("<START>", re.IGNORECASE)
_START_LINE = re.compile("<START>\n", re.IGNORECASE)


class SequenceVariant(Enum):
    """Which variant of a role's sequence a message takes (SillyTavern `force_output_sequence`)."""

    MIDDLE = 0
    FIRST = 1
    LAST = 2


def _name_macro(text: str, name: str) -> str:
    return _NAME.sub(lambda _: name, text)


@dataclass(frozen=True, slots=True)
class InstructFormat:
    """An instruct template bound to one turn: the names and the macro engine.

    `macros` is the turn's macro substitution; `group` says whether this is a group
    chat (the `force` names behaviour depends on it).
    """

    template: InstructTemplate
    user: str
    char: str
    macros: Macros
    group: bool = False
    example_separator: str = ""

    @property
    def separator(self) -> str:
        """What joins prefix, text and suffix: a newline when `wrap` is on."""
        return "\n" if self.template.wrap else ""

    def system_prompt(self, text: str) -> str:
        """The system prompt wrapped in the legacy system prefix and suffix (§6.1)."""
        t = self.template
        if t.system_sequence_prefix:
            text = _name_macro(t.system_sequence_prefix, "System") + self.separator + text
        if t.system_sequence_suffix:
            text = text + self.separator + t.system_sequence_suffix
        return text

    def message(
        self,
        name: str,
        text: str,
        is_user: bool,
        is_narrator: bool,
        forced_avatar: bool = False,
        variant: SequenceVariant = SequenceVariant.MIDDLE,
    ) -> str:
        """One chat message in the template's sequences (§6.4, SillyTavern `formatInstructModeChat`)."""
        t = self.template
        include_names = False if is_narrator else t.names_behavior == "always"
        if (
            not is_narrator
            and t.names_behavior == "force"
            and ((self.group and name != self.user) or (forced_avatar and name != self.user))
        ):
            include_names = True

        if is_narrator:
            prefix = t.input_sequence if t.system_same_as_user else t.system_sequence
            suffix = t.input_suffix if t.system_same_as_user else t.system_suffix
        elif is_user:
            prefix = t.input_sequence
            if variant is SequenceVariant.FIRST:
                prefix = t.first_input_sequence or t.input_sequence
            elif variant is SequenceVariant.LAST:
                prefix = t.last_input_sequence or t.input_sequence
            suffix = t.input_suffix
        else:
            prefix = t.output_sequence
            if variant is SequenceVariant.FIRST:
                prefix = t.first_output_sequence or t.output_sequence
            elif variant is SequenceVariant.LAST:
                prefix = t.last_output_sequence or t.output_sequence
            suffix = t.output_suffix

        if t.macro:
            prefix = _name_macro(self.macros(prefix) if prefix else prefix, name or "System")
            suffix = _name_macro(self.macros(suffix) if suffix else suffix, name or "System")
        if not suffix and t.wrap:
            suffix = "\n"
        body = (f"{name}: {text}" if include_names and name else text) + suffix
        return self.separator.join(part for part in (prefix, body) if part)

    def examples(self, blocks: Sequence[str]) -> list[str]:
        """Example blocks in the template's sequences (§6.9, `formatInstructModeExamples`)."""
        t = self.template
        heading = self.macros(self.example_separator) + "\n" if self.example_separator else ""
        if t.skip_examples:
            return [_START_LINE.sub(lambda _: heading, block, count=1) for block in blocks]
        include_names = t.names_behavior == "always" or (self.group and t.names_behavior == "force")
        input_prefix, output_prefix = t.input_sequence, t.output_sequence
        input_suffix, output_suffix = t.input_suffix, t.output_suffix
        if t.macro:
            input_prefix = _name_macro(self.macros(input_prefix), self.user)
            output_prefix = _name_macro(self.macros(output_prefix), self.char)
            input_suffix = _name_macro(self.macros(input_suffix), self.user)
            output_suffix = _name_macro(self.macros(output_suffix), self.char)
            # §6.9 quirk: the default newline suffix only applies with "macro" on.
            if not input_suffix and t.wrap:
                input_suffix = "\n"
            if not output_suffix and t.wrap:
                output_suffix = "\n"
        formatted: list[str] = []
        for block in blocks:
            cleaned = _START.sub("{Example Dialogue:}", block, count=1).replace("\r", "")
            turns = split_example_turns(cleaned, self.user, self.char, self.group)
            if not turns:
                continue
            if heading:
                formatted.append(heading)
            for turn in turns:
                # With `force`, user example turns always carry the name.
                named = include_names or (t.names_behavior == "force" and turn.is_user)
                prefix = input_prefix if turn.is_user else output_prefix
                suffix = input_suffix if turn.is_user else output_suffix
                name = self.user if turn.is_user else self.char
                content = f"{name}: {turn.content}" if named else turn.content
                formatted.append(self.separator.join(p for p in (prefix, content + suffix) if p))
        if not formatted:
            return [_START_LINE.sub(lambda _: heading, block, count=1) for block in blocks]
        return formatted

    def final_line(
        self,
        name: str,
        impersonate: bool = False,
        prompt_bias: str = "",
        quiet: bool = False,
        quiet_to_loud: bool = False,
    ) -> str:
        """The line that opens the reply (§6.6, `formatInstructModePrompt`)."""
        t = self.template
        include_names = (
            bool(name)
            and (t.names_behavior == "always" or (self.group and t.names_behavior == "force"))
            and not (quiet and not quiet_to_loud)
        )
        if impersonate:
            sequence = t.input_sequence
        elif quiet and not quiet_to_loud:
            sequence = t.last_system_sequence or t.output_sequence
        else:
            sequence = t.last_output_sequence or t.output_sequence
        filler = ""
        # §6.6: Mistral's output sequence ends in a space its last output sequence lacks.
        if (
            include_names
            and t.last_output_sequence
            and t.output_sequence
            and sequence == t.last_output_sequence
            and t.output_sequence[-1:].isspace()
            and not t.last_output_sequence[-1:].isspace()
        ):
            filler = t.output_sequence[-1]
        if t.macro:
            sequence = _name_macro(
                self.macros(sequence) if sequence else sequence, name or "System"
            )
        sep = self.separator
        text = sep + sequence + sep + filler + f"{name}:" if include_names else sep + sequence
        if quiet and sep:
            text = text[len(sep) :]
        if not impersonate and prompt_bias:
            text += prompt_bias if include_names else sep + prompt_bias.lstrip()
        return (text.rstrip() if t.wrap else text) + ("" if include_names else sep)

    def stop_sequences(self, system_name: str = "System") -> list[str]:
        """The stop strings the sequences give (§7.1 step 2, `getInstructStoppingSequences`)."""
        t = self.template
        combined = "\n".join(
            (
                t.stop_sequence,
                _name_macro(t.input_sequence, self.user),
                _name_macro(t.output_sequence, self.char),
                _name_macro(t.first_output_sequence, self.char),
                _name_macro(t.last_output_sequence, self.char),
                _name_macro(t.system_sequence, system_name),
                _name_macro(t.last_system_sequence, system_name),
            )
        )
        out: list[str] = []
        seen: set[str] = set()
        for line in combined.split("\n"):
            if line in seen:
                continue
            seen.add(line)
            # Whitespace-only lines would stop every reply; SillyTavern skips them.
            if not line.strip():
                continue
            wrapped = "\n" + line if t.wrap else line
            out.append(self.macros(wrapped) if t.macro else wrapped)
        return out
