"""The Text Completion prompt, built as SillyTavern 1.12.6 builds it.

Input is the assembly context and the prepared turn (card fields, the chat as sent,
example blocks, the injection table after the lorebook scan); output is a `Prompt`
of kind "text" with its stop strings and a ledger. The steps and their order follow
SillyTavern's `Generate` (algo-prompt-assembly.md §5.3, §6, §7.1): in-chat
injections into the history, messages formatted per role (instruct or plain), the
story string, anchors, the context fitted newest-first with injections placed
first, examples in what is left, the last line, and the combination.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.injections import SUMMARY_KEY
from taverna.engine.assembly.summary import summary_of
from taverna.engine.assembly.turn import Turn, turn_state
from taverna.engine.textgen.chat_template import ChatTemplate
from taverna.engine.textgen.history import Entry, History, Item
from taverna.engine.textgen.instruct import SequenceVariant
from taverna.engine.textgen.steps import CountText, TextSteps
from taverna.engine.textgen.stop import stopping_strings
from taverna.engine.textgen.templated import build_with_chat_template
from taverna.model.injection import ExtensionPosition
from taverna.model.persona import PersonaPosition
from taverna.model.prompt import Ledger, Prompt

_NEWLINES = re.compile(r"\n+")


def build_text_completion(context: AssemblyContext, turn: Turn, count_text: CountText) -> Prompt:
    """The Text Completion prompt for this turn (algo-prompt-assembly.md §6).

    When the Text Completion settings carry a model's chat template (extras key
    `chat_template`: a `ChatTemplate` or the text of a `tokenizer_config.json`),
    that template formats the prompt instead of the instruct template.
    """
    template = context.text_completion.extras.get("chat_template")
    if isinstance(template, str) and template:
        template = ChatTemplate.from_tokenizer_config(template)
    if isinstance(template, ChatTemplate):
        return build_with_chat_template(context, turn, count_text, template)
    return _Builder(context, turn, count_text).build()


@dataclass(slots=True)
class _Layout:
    """The parts of the prompt as the steps settle them (SillyTavern's locals in `Generate`)."""

    prompt_bias: str
    force_name2: bool
    user_alignment: str
    before_anchor: str
    story: str
    after_anchor: str
    examples: list[str]
    pinned: str | None
    chat_start_line: str
    # The running strings and count of the fitting (§6.5).
    examples_string: str
    chat_string: str
    cycle_prompt: str = ""
    token_count: int = 0
    placed: dict[int, str] = field(default_factory=dict)
    last_added: int = -1
    stopped_at: int | None = None
    history_stopped: bool = False  # see Ledger.history_stopped
    kept: list[tuple[str, Entry | None]] = field(default_factory=list)
    example_count: int = 0


class _Builder(TextSteps):
    """The Text Completion prompt in SillyTavern's layout, one method a step of `Generate`."""

    def build(self) -> Prompt:
        if self.context.layout.lore_after_chat:
            # Beyond SillyTavern: anchors and lorebook text leave the story string.
            self.move_volatile(
                self.anchor(ExtensionPosition.BEFORE_PROMPT),
                self.anchor(ExtensionPosition.IN_PROMPT),
            )
        prompt_bias = self.prompt_bias()
        force_name2 = self.force_name2(prompt_bias)
        system = self.system_prompt()
        raw_examples, examples = self.example_blocks()
        items = self.core_items()
        injected = self.inject(items)
        self.add_jailbreak(items)
        # SillyTavern's `chat2`: formatted newest first, here on demand (§6.4, §6.5 step 2).
        history = History(
            items,
            format_message=self.format,
            instruct_on=self.instruct_on,
            is_continue=self.is_continue,
        )
        user_alignment = ""
        alignment_text = self.settings.instruct.user_alignment_message
        if self.instruct_on and alignment_text:
            user_alignment = self.format(
                Item(self.user, alignment_text, True), SequenceVariant.FIRST
            )
        layout = self.frame(
            prompt_bias, force_name2, user_alignment, system, raw_examples, examples
        )
        self.fit_history(layout, history, injected)
        self.align_user(layout, history)
        self.ledger.record_dropped(
            history, layout.placed, layout.stopped_at, self.context.earlier.visible
        )
        self.fit_examples(layout)
        sent, sources = self.chronological(layout)
        examples_text = self.fit_continue(layout, sent, sources)
        final, generated, text = self.combine(layout, sent, examples_text)
        self.record(layout, final, sources, generated)
        return self.prompt(text, layout.history_stopped)

    # --------------------------------------------------------------- steps

    def force_name2(self, prompt_bias: str) -> bool:
        """Whether the last line names the character (a prompt bias of its own, or always)."""
        return (
            (bool(prompt_bias) and prompt_bias != self.macros(self.power.user_prompt_bias))
            or self.power.always_force_name2
        ) and not self.is_impersonate

    def example_blocks(self) -> tuple[list[str], list[str]]:
        """Examples: the raw blocks, then formatted for instruct mode (§6.9)."""
        raw_examples = list(self.turn.example_blocks)
        examples = self.instruct.examples(raw_examples) if self.instruct_on else list(raw_examples)
        return raw_examples, examples

    def add_jailbreak(self, items: list[Entry]) -> None:
        """§6.7: the card's post-history instructions, when the context template allows."""
        jailbreak = self.turn.fields.jailbreak
        if (
            self.settings.context.allow_jailbreak
            and self.power.prefer_character_jailbreak
            and jailbreak
        ):
            jailbreak_item = Item(
                "",
                self.turn.macros(jailbreak, original=""),
                True,
                source="jailbreak",
                kind="jailbreak",
            )
            if self.is_continue:
                items.insert(len(items) - 1, jailbreak_item)
            else:
                items.append(jailbreak_item)

    def frame(
        self,
        prompt_bias: str,
        force_name2: bool,
        user_alignment: str,
        system: str,
        raw_examples: list[str],
        examples: list[str],
    ) -> _Layout:
        """The parts around the chat: anchors (§6.3), the story string (§6.2), the chat start."""
        context = self.context
        turn = self.turn
        fields = turn.fields
        friendly = context.layout.lore_after_chat
        if friendly:
            before_anchor = after_anchor = ""
        else:
            before_anchor = self.anchor(ExtensionPosition.BEFORE_PROMPT).lstrip()
            after_anchor = self.anchor(ExtensionPosition.IN_PROMPT)
        world_before = "" if friendly else turn.world.before
        world_after = "" if friendly else turn.world.after

        persona_here = context.persona.position in (
            PersonaPosition.IN_PROMPT,
            PersonaPosition.AFTER_CHAR,
        )
        values = {
            "description": fields.description,
            "personality": fields.personality,
            "persona": fields.persona if persona_here else "",
            "scenario": fields.scenario,
            "system": system,
            "char": self.char,
            "user": self.user,
            "wiBefore": world_before,
            "wiAfter": world_after,
            "loreBefore": world_before,
            "loreAfter": world_after,
            "mesExamples": "".join(examples),
            "mesExamplesRaw": "".join(raw_examples),
        }
        story = self.story_string(values)

        if self.power.strip_examples:
            examples = []

        chat_start = self.settings.context.chat_start
        chat_start_line = self.macros(chat_start + "\n") if chat_start else ""
        pinned = "".join(examples) if self.power.pin_examples else None
        return _Layout(
            prompt_bias,
            force_name2,
            user_alignment,
            before_anchor,
            story,
            after_anchor,
            examples,
            pinned,
            chat_start_line,
            examples_string=pinned or "",
            chat_string=chat_start_line,
        )

    def last_line(self, layout: _Layout, text: str) -> str:
        """`modify_last_line` with this prompt's bias and naming (§6.5 step 9)."""
        return self.modify_last_line(text, layout.prompt_bias, layout.force_name2)

    def base_tokens(self, layout: _Layout) -> int:
        """The tokens of everything but the chat messages placed (SillyTavern's recount)."""
        parts = (
            layout.before_anchor,
            layout.story,
            layout.after_anchor,
            layout.examples_string,
            layout.user_alignment,
            layout.chat_string,
            self.last_line(layout, ""),
            layout.cycle_prompt,
        )
        return self.tokens("".join(parts), self.power.token_padding)

    def fit_history(self, layout: _Layout, history: History, injected: list[int]) -> None:
        """§6.5 steps 3-5: injections first, then newest to oldest; stop at the first miss."""
        budget = self.turn.prompt_budget
        if self.is_continue and len(history) > 1:
            layout.cycle_prompt = history.text(0)
            history.offset = 1

        placed = layout.placed
        layout.token_count = self.base_tokens(layout)
        size = len(history)

        def place(index: int) -> bool:
            """Add history item `index` if it still fits; whether it did."""
            item_text = history.text(index)
            layout.token_count += self.tokens(item_text)
            if layout.token_count >= budget:
                return False
            layout.chat_string += item_text
            placed[index] = item_text
            layout.last_added = max(layout.last_added, index)
            return True

        for index in injected:
            # Recorded positions are not moved by a continue's shift (SillyTavern's own).
            if index < size and not place(index):
                break
        for i in range(size):
            if i not in placed and not place(i):
                layout.stopped_at = i
                break
        layout.history_stopped = layout.stopped_at is not None or len(placed) < size
        layout.kept = [(placed[i], history.entry(i)) for i in sorted(placed)]

    def align_user(self, layout: _Layout, history: History) -> None:
        """§6.5 step 6: a user alignment message when the oldest kept one is not the user's."""
        user_alignment = layout.user_alignment
        if user_alignment and not history.was_user(layout.last_added):
            alignment_text = self.settings.instruct.user_alignment_message
            layout.token_count += self.tokens(user_alignment)
            layout.chat_string = user_alignment + layout.chat_string
            layout.kept.append(
                (user_alignment, Item(self.user, alignment_text, True, kind="user_alignment"))
            )

    def fit_examples(self, layout: _Layout) -> None:
        """§6.5 step 7: unpinned examples in what is left, whole blocks, stop at the first miss."""
        budget = self.turn.prompt_budget
        fitting_examples = 0
        if not self.power.pin_examples and layout.examples:
            # The recount covers the whole fitted chat; it only decides the examples.
            layout.token_count = self.base_tokens(layout)
            for example in layout.examples:
                layout.token_count += self.tokens(example)
                layout.examples_string += example
                if layout.token_count < budget:
                    fitting_examples += 1
                else:
                    break
        layout.example_count = fitting_examples

    def chronological(self, layout: _Layout) -> tuple[list[list[str]], list[Entry | None]]:
        """§6.5 step 8: chronological order; the last message loses one trailing newline."""
        kept = layout.kept
        kept.reverse()
        sent: list[list[str]] = [[text] for text, _ in kept]
        sent_sources = [source for _, source in kept]
        if (
            sent
            and not self.is_continue
            and (not self.instruct_on or (self.wrap and not self.is_quiet))
        ):
            last = sent[-1][0]
            if last.endswith("\n"):
                sent[-1][0] = last[:-1]
        return sent, sent_sources

    def prompt_string(self, layout: _Layout, sent: list[list[str]]) -> str:
        """The examples that go in; the last line added to the newest message (§6.5 step 9)."""
        if layout.pinned is not None:
            exm = layout.pinned
        else:
            exm = "".join(layout.examples[: layout.example_count])
        if sent:
            sent[-1][0] = self.last_line(layout, sent[-1][0])
        return exm

    def fit_continue(
        self, layout: _Layout, sent: list[list[str]], sent_sources: list[Entry | None]
    ) -> str:
        """The examples' text, after a continue's re-check of the whole prompt (§6.5 step 10).

        A continue drops examples, then the oldest messages, while it is over the budget.
        """
        if not layout.cycle_prompt:
            return self.prompt_string(layout, sent)
        budget = self.turn.prompt_budget
        while True:
            examples_text = self.prompt_string(layout, sent)
            joint = "".join(m[0] for m in sent)
            whole = "".join(
                (
                    layout.before_anchor,
                    layout.story,
                    layout.after_anchor,
                    examples_text,
                    layout.chat_start_line + joint,
                    "\n",
                    self.last_line(layout, ""),
                    layout.cycle_prompt,
                )
            )
            if self.tokens(whole, self.power.token_padding) <= budget:
                break
            if layout.example_count > 0:
                layout.example_count -= 1
            elif sent:
                sent.pop(0)
                sent_sources.pop(0)
            else:
                break
        return examples_text

    def combine(
        self, layout: _Layout, sent: list[list[str]], examples_text: str
    ) -> tuple[list[str], str, str]:
        """§6.7: combine; the messages sent, the continued text and the prompt's text."""
        prompt_bias = layout.prompt_bias
        final = [m[0] for m in sent]
        if not self.instruct_on and not self.is_impersonate and prompt_bias.strip() and final:
            tail = final[-1]
            joiner = "" if tail[-1:].isspace() else " "
            final[-1] = tail + joiner + prompt_bias.lstrip()
        generated = layout.cycle_prompt
        if generated:
            generated = self.cleanup_continue(generated, prompt_bias)
        messages_string = layout.chat_start_line + "".join(final)
        text = (
            layout.before_anchor
            + layout.story
            + layout.after_anchor
            + examples_text
            + messages_string
            + generated
        )
        text = text.replace("\r", "")
        if self.power.collapse_newlines:
            text = _NEWLINES.sub("\n", text)
        return final, generated, text

    def _summary_anchor(self) -> tuple[ExtensionPosition, str, str] | None:
        """Which anchor holds the summary, its key and its message (`summary_of`)."""
        found = self.turn.injections.get(SUMMARY_KEY)
        if found is None or not found.text:
            return None
        return found.position, found.key, summary_of(found)

    def record(
        self, layout: _Layout, final: list[str], sources: list[Entry | None], generated: str
    ) -> None:
        """The ledger's lines in prompt order."""
        ledger = self.ledger
        ledger.record_parts(
            layout.before_anchor,
            layout.story,
            self.settings.context.name,
            layout.after_anchor,
            layout.examples,
            layout.example_count,
            layout.pinned,
            summary_at=self._summary_anchor(),
        )
        chat_start_line = layout.chat_start_line
        if chat_start_line:
            ledger.add(
                "chat_start",
                "",
                chat_start_line,
                self.tokens(chat_start_line),
                source_code="context_template",
            )
        ledger.items.extend(ledger.dropped)
        ledger.record_sent(final, sources)
        if generated:
            ledger.add(
                "continue", "", generated, self.tokens(generated), source_code="continued_message"
            )

    def prompt(self, text: str, history_stopped: bool) -> Prompt:
        """The prompt with its stop strings, sampling and ledger."""
        context = self.context
        padding = self.power.token_padding
        stop = stopping_strings(
            user=self.user,
            char=self.char,
            context=self.settings.context,
            power_user=self.power,
            instruct=self.instruct if self.instruct_on else None,
            macros=self.macros,
            impersonate=self.is_impersonate,
            continuing_user_message=self.is_continue
            and bool(context.messages)
            and context.messages[-1].is_user,
            other_members=tuple(m for m in context.group_members if m != self.char)
            if context.is_group
            else (),
        )
        sampling = self.sampling()
        total = self.tokens(text, padding)
        return Prompt(
            kind="text",
            text=text,
            stop=tuple(stop),
            sampling=sampling,
            ledger=Ledger(
                items=self.ledger.accounted(text, padding, pieces=True),
                total_tokens=total,
                budget=self.turn.prompt_budget,
                trace=tuple(self.turn.world.trace),
                history_stopped=history_stopped,
                scanned_books=self.turn.world.books,
            ),
            state=turn_state(self.turn),
        )
