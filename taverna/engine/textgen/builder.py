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
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from taverna.engine.assembly.context import (
    AssemblyContext,
    ChatMessage,
    ExtensionPosition,
    GenerationType,
    InjectionRole,
    PersonaPosition,
    Speaker,
)
from taverna.engine.assembly.injections import MAX_INJECTION_DEPTH, depth_blocks
from taverna.engine.assembly.turn import Turn, base_chat_replace, prompt_bias_text, turn_state
from taverna.engine.macros import has_macros
from taverna.engine.textgen.chat_template import ChatTemplate
from taverna.engine.textgen.instruct import InstructFormat, Position
from taverna.engine.textgen.stop import stopping_strings
from taverna.engine.textgen.story_string import render_story_template
from taverna.model.prompt import Ledger, LedgerItem, Prompt

CountText = Callable[[str], int]

_NEWLINES = re.compile(r"\n+")


@dataclass(frozen=True, slots=True)
class _Item:
    """A message of SillyTavern's `coreChat` as the Text Completion path sees it."""

    name: str
    text: str
    is_user: bool
    is_narrator: bool = False
    forced_avatar: bool = False
    injected: bool = False
    source: str = ""
    kind: str = "history"


class _History:
    """SillyTavern's `chat2`: the formatted messages, newest first, formatted on demand.

    Only the messages the context can hold are ever formatted, which keeps a long
    chat's turn cheap; the text of each is exactly what SillyTavern formats
    (§6.4 FIRST/LAST selection, §6.5 step 2 for the continued message).
    """

    def __init__(self, builder: _Builder, items: list[_Entry]) -> None:
        self.builder = builder
        # §6.5 step 1: regenerating the greeting leaves one empty message.
        self.items: list[_Entry] = items if items else [_Item("", "", False, kind="empty")]
        self.empty = not items
        self.count = len(self.items)
        self.offset = 0  # 1 once a continue has taken the newest message out
        self.last_user = -1
        for j in range(self.count - 1, -1, -1):
            if self.items[j].is_user:
                self.last_user = j
                break
        self._texts: dict[int, str] = {}

    def __len__(self) -> int:
        return self.count - self.offset

    def entry(self, index: int) -> _Entry | None:
        """The message at this position (0 = newest still in the history)."""
        if self.empty:
            return None
        return self.items[self.count - 1 - (index + self.offset)]

    def was_user(self, index: int) -> bool:
        """Whether SillyTavern counted this position as a user message.

        Its list of user positions is taken before a continue shifts the history,
        and excludes the continued message (§6.5 step 6 quirk kept for fidelity).
        """
        if index < 0 or index >= self.count or self.empty:
            return False
        if index == 0 and self.builder.is_continue:
            return False
        return self.items[self.count - 1 - index].is_user

    def text(self, index: int) -> str:
        """The formatted message at this position."""
        i = index + self.offset
        found = self._texts.get(i)
        if found is not None:
            return found
        if self.empty:
            return ""
        builder = self.builder
        j = self.count - 1 - i
        item = self.items[j]
        instruct = builder.instruct_on
        position = Position.MIDDLE
        if j == 0 and instruct:
            position = Position.FIRST
        if j == self.last_user and instruct:
            position = Position.LAST
        if i == 0 and builder.is_continue:
            if instruct:
                position = Position.LAST
            text = builder.format(item, position)
            cut = text.rfind(item.text)
            text = text[: cut + len(item.text)] if cut >= 0 else text
        else:
            text = builder.format(item, position)
        self._texts[i] = text
        return text


@dataclass(slots=True)
class _Ledger:
    items: list[LedgerItem] = field(default_factory=list)

    def add(
        self,
        kind: str,
        source: str,
        text: str,
        tokens: int,
        included: bool = True,
        reason: str = "",
    ) -> None:
        self.items.append(LedgerItem(kind, source, tokens, included, reason, text))


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


class _Builder:
    def __init__(self, context: AssemblyContext, turn: Turn, count_text: CountText) -> None:
        self.context = context
        self.turn = turn
        self.count_text = count_text
        self.settings = context.text_completion
        self.power = context.power_user
        self.user = context.persona.name
        self.char = context.character.name
        self.kind = context.generation_type
        self.is_continue = self.kind is GenerationType.CONTINUE
        self.is_impersonate = self.kind is GenerationType.IMPERSONATE
        self.is_quiet = self.kind is GenerationType.QUIET
        # algo-prompt-assembly.md §1 step 3: the quiet prompt gets its macros first.
        self.quiet_prompt = turn.macros(context.quiet_prompt) if context.quiet_prompt else ""
        self.instruct_on = self.settings.instruct.enabled
        self.wrap = self.settings.instruct.wrap
        self.instruct = InstructFormat(
            self.settings.instruct,
            self.user,
            self.char,
            self.macros,
            context.is_group,
            self.settings.context.example_separator,
        )
        self.ledger = _Ledger()
        self._dropped: list[LedgerItem] = []
        self._history_stopped = False  # see Ledger.history_stopped
        # Cache-friendly layout: lorebook text and the extension prompts around the story
        # string, moved to the end of the chat (set before `inject` runs).
        self._moved = ""
        # Texts known to hold no macro (instruct sequences repeat on every message).
        self._plain: dict[str, bool] = {}

    # ------------------------------------------------------------- helpers

    def macros(self, text: str) -> str:
        if not text:
            return text
        plain = self._plain.get(text)
        if plain is None:
            plain = self._plain[text] = not has_macros(text)
        return text if plain else self.turn.macros(text)

    def tokens(self, text: str, padding: int = 0) -> int:
        # tokenizers.js getTokenCountAsync: an empty text costs nothing, padding included.
        text = text.replace("\r", "")
        return self.count_text(text) + padding if text else 0

    def format(self, entry: _Entry, position: Position = Position.MIDDLE) -> str:
        """SillyTavern `formatMessageHistoryItem` (§6.4)."""
        item = _as_item(entry)
        item_name = item.name if item.is_user else (item.name or self.char)
        if self.instruct_on:
            return self.instruct.message(
                item_name, item.text, item.is_user, item.is_narrator, item.forced_avatar, position
            )
        if item.name and not item.is_narrator:
            return f"{item_name}: {item.text}\n"
        return f"{item.text}\n"

    # --------------------------------------------------------------- steps

    def prompt_bias(self) -> str:
        """The prompt bias of this generation (§7.3, `getBiasStrings`)."""
        return self.macros(prompt_bias_text(self.context))

    def system_prompt(self) -> str:
        """`{{system}}` of the story string (§6.1)."""
        sysprompt = self.settings.system_prompt
        if not sysprompt.enabled:
            return ""
        fields = self.turn.fields
        if self.power.prefer_character_prompt and fields.system:
            system = fields.system
        else:
            system = base_chat_replace(
                sysprompt.content, self.turn.substitute, self.power.collapse_newlines
            )
        if self.instruct_on:
            system = self.instruct.system_prompt(
                self.turn.macros(system, original=sysprompt.content) if system else system
            )
        return system

    def core_items(self) -> list[_Entry]:
        return list(self.turn.chat)

    def inject(self, items: list[_Entry]) -> list[int]:
        """In-chat injections placed into the history (§5.3, `doChatInject`).

        Returns the positions of the injected messages counted from the newest, as
        SillyTavern records them (a depth past the oldest message is recorded where
        it was aimed, not where it landed).
        """
        blocks = depth_blocks(self.turn.injections, self.macros, chat_completion=False)
        names = {InjectionRole.SYSTEM: "", InjectionRole.USER: self.user}
        names[InjectionRole.ASSISTANT] = self.char
        newest_first: list[_Entry] = list(reversed(items))
        injected: list[int] = []
        inserted = 0
        by_depth: dict[int, list[_Entry]] = {}
        for block in blocks:
            source = ",".join(
                getattr(s, "key", getattr(s, "identifier", "")) for s in block.sources
            )
            by_depth.setdefault(block.depth, []).append(
                _Item(
                    names[block.role],
                    block.text,
                    is_user=block.role is InjectionRole.USER,
                    is_narrator=block.role is InjectionRole.SYSTEM,
                    injected=True,
                    source=f"depth {block.depth} {block.role.chat_role}: {source}",
                    kind="injection",
                )
            )
        if self.context.cache_friendly:
            by_depth = self._volatile_at_end(by_depth)
        for depth in range(MAX_INJECTION_DEPTH + 1):
            role_items = by_depth.get(depth)
            if not role_items:
                continue
            # §5.3: on continue, depth 0 goes before the message being continued.
            at = (1 if self.is_continue and depth == 0 else depth) + inserted
            newest_first[at:at] = role_items
            inserted += len(role_items)
            injected.extend(range(at, at + len(role_items)))
        items[:] = list(reversed(newest_first))
        return injected

    def _volatile_at_end(self, by_depth: dict[int, list[_Entry]]) -> dict[int, list[_Entry]]:
        """Every depth injection (and the moved lorebook text) at depth 0, in prompt order.

        Beyond SillyTavern: what changes from turn to turn follows the newest message,
        so the prefix a provider caches (or llama.cpp's KV cache) stays the same.
        """
        oldest_first: list[_Entry] = []
        if self._moved:
            oldest_first.append(
                _Item(
                    "",
                    self._moved,
                    is_user=False,
                    is_narrator=True,
                    injected=True,
                    source="lorebook and extension prompts",
                    kind="volatile",
                )
            )
        # At one depth SillyTavern's splice reverses the blocks; deeper ones come first.
        for depth in sorted(by_depth, reverse=True):
            oldest_first.extend(reversed(by_depth[depth]))
        return {0: list(reversed(oldest_first))} if oldest_first else {}

    def _move_volatile(self, before_anchor: str, after_anchor: str) -> None:
        """Cache-friendly layout: the text to move after the chat (lorebook, anchors)."""
        world = self.turn.world
        parts = (before_anchor.strip(), world.before, world.after, after_anchor.strip())
        self._moved = "\n".join(p for p in parts if p)

    def build(self) -> Prompt:
        context = self.context
        turn = self.turn
        fields = turn.fields
        friendly = context.cache_friendly
        if friendly:
            # Beyond SillyTavern: anchors and lorebook text leave the story string.
            self._move_volatile(
                self.anchor(ExtensionPosition.BEFORE_PROMPT),
                self.anchor(ExtensionPosition.IN_PROMPT),
            )
        budget = turn.prompt_budget
        padding = self.power.token_padding

        prompt_bias = self.prompt_bias()
        force_name2 = (
            (bool(prompt_bias) and prompt_bias != self.macros(self.power.user_prompt_bias))
            or self.power.always_force_name2
        ) and not self.is_impersonate

        system = self.system_prompt()

        # Examples: the raw blocks, then formatted for instruct mode (§6.9).
        raw_examples = list(turn.example_blocks)
        examples = self.instruct.examples(raw_examples) if self.instruct_on else list(raw_examples)

        items = self.core_items()
        injected = self.inject(items)

        # §6.7: the card's post-history instructions, when the context template allows.
        jailbreak = fields.jailbreak
        if (
            self.settings.context.allow_jailbreak
            and self.power.prefer_character_jailbreak
            and jailbreak
        ):
            jailbreak_item = _Item(
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

        # SillyTavern's `chat2`: formatted newest first, here on demand (§6.4, §6.5 step 2).
        history = _History(self, items)
        user_alignment = ""
        alignment_text = self.settings.instruct.user_alignment_message
        if self.instruct_on and alignment_text:
            user_alignment = self.format(_Item(self.user, alignment_text, True), Position.FIRST)

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
        examples_string = ""
        chat_string = chat_start_line
        cycle_prompt = ""

        def last_line(text: str) -> str:
            return self.modify_last_line(text, prompt_bias, force_name2)

        def base_tokens() -> int:
            parts = (
                before_anchor,
                story,
                after_anchor,
                examples_string,
                user_alignment,
                chat_string,
                last_line(""),
                cycle_prompt,
            )
            return self.tokens("".join(parts), padding)

        pinned: str | None = None
        if self.power.pin_examples:
            pinned = examples_string = "".join(examples)

        if self.is_continue and len(history) > 1:
            cycle_prompt = history.text(0)
            history.offset = 1

        # §6.5 steps 3-5: injections first, then newest to oldest; stop at the first miss.
        placed: dict[int, str] = {}
        token_count = base_tokens()
        last_added = -1
        stopped_at: int | None = None
        size = len(history)

        def place(index: int) -> bool:
            """Add history item `index` if it still fits; whether it did."""
            nonlocal token_count, chat_string, last_added
            item_text = history.text(index)
            token_count += self.tokens(item_text)
            if token_count >= budget:
                return False
            chat_string += item_text
            placed[index] = item_text
            last_added = max(last_added, index)
            return True

        for index in injected:
            # Recorded positions are not moved by a continue's shift (SillyTavern's own).
            if index < size and not place(index):
                break
        for i in range(size):
            if i not in placed and not place(i):
                stopped_at = i
                break
        self._history_stopped = stopped_at is not None or len(placed) < size

        kept: list[tuple[str, _Entry | None]] = [
            (placed[i], history.entry(i)) for i in sorted(placed)
        ]
        # §6.5 step 6: a user alignment message when the oldest kept one is not the user's.
        if user_alignment and not history.was_user(last_added):
            token_count += self.tokens(user_alignment)
            chat_string = user_alignment + chat_string
            kept.append(
                (user_alignment, _Item(self.user, alignment_text, True, kind="user_alignment"))
            )

        self.record_dropped(history, placed, stopped_at)

        # §6.5 step 7: unpinned examples in what is left, whole blocks, stop at the first miss.
        fitting_examples = 0
        if not self.power.pin_examples and examples:
            # The recount covers the whole fitted chat; it only decides the examples.
            token_count = base_tokens()
            for example in examples:
                token_count += self.tokens(example)
                examples_string += example
                if token_count < budget:
                    fitting_examples += 1
                else:
                    break

        # §6.5 step 8: chronological order; the last message loses one trailing newline.
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

        generated = cycle_prompt
        example_count = fitting_examples

        def set_prompt_string() -> str:
            exm = pinned if pinned is not None else "".join(examples[:example_count])
            if sent:
                sent[-1][0] = last_line(sent[-1][0])
            return exm

        if generated:
            # §6.5 step 10: a continue re-checks the whole prompt and drops examples,
            # then the oldest messages, while it is over the budget.
            while True:
                examples_text = set_prompt_string()
                joint = "".join(m[0] for m in sent)
                whole = "".join(
                    (
                        before_anchor,
                        story,
                        after_anchor,
                        examples_text,
                        chat_start_line + joint,
                        "\n",
                        last_line(""),
                        generated,
                    )
                )
                if self.tokens(whole, padding) <= budget:
                    break
                if example_count > 0:
                    example_count -= 1
                elif sent:
                    sent.pop(0)
                    sent_sources.pop(0)
                else:
                    break
        else:
            examples_text = set_prompt_string()

        # §6.7: combine.
        final = [m[0] for m in sent]
        if not self.instruct_on and not self.is_impersonate and prompt_bias.strip() and final:
            tail = final[-1]
            joiner = "" if tail[-1:].isspace() else " "
            final[-1] = tail + joiner + prompt_bias.lstrip()
        if generated:
            generated = self.cleanup_continue(generated, prompt_bias)
        messages_string = chat_start_line + "".join(final)
        text = before_anchor + story + after_anchor + examples_text + messages_string + generated
        text = text.replace("\r", "")
        if self.power.collapse_newlines:
            text = _NEWLINES.sub("\n", text)

        self.record_parts(before_anchor, story, after_anchor, examples, example_count, pinned)
        if chat_start_line:
            self.ledger.add(
                "chat_start", "context template", chat_start_line, self.tokens(chat_start_line)
            )
        self.ledger.items.extend(self._dropped)
        self.record_sent(final, sent_sources)
        if generated:
            self.ledger.add(
                "continue", "message being continued", generated, self.tokens(generated)
            )

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
        sampling = {
            **self.settings.sampling,
            "max_new_tokens": self.settings.amount_gen,
            "truncation_length": self.settings.max_context,
        }
        total = self.tokens(text, padding)
        return Prompt(
            kind="text",
            text=text,
            stop=tuple(stop),
            sampling=sampling,
            ledger=Ledger(
                items=self.accounted(text, padding, pieces=True),
                total_tokens=total,
                budget=budget,
                trace=tuple(turn.world.trace),
                history_stopped=self._history_stopped,
            ),
            state=turn_state(turn),
        )

    def build_chat_template(self, template: ChatTemplate) -> Prompt:
        context = self.context
        turn = self.turn
        budget = turn.prompt_budget
        padding = self.power.token_padding
        items = self.core_items()
        self.inject(items)
        fields = turn.fields
        values = {
            "description": fields.description,
            "personality": fields.personality,
            "persona": fields.persona
            if context.persona.position in (PersonaPosition.IN_PROMPT, PersonaPosition.AFTER_CHAR)
            else "",
            "scenario": fields.scenario,
            "system": self.system_prompt(),
            "char": self.char,
            "user": self.user,
            "wiBefore": turn.world.before,
            "wiAfter": turn.world.after,
            "loreBefore": turn.world.before,
            "loreAfter": turn.world.after,
            "mesExamples": "".join(turn.example_blocks),
            "mesExamplesRaw": "".join(turn.example_blocks),
        }
        story = self.story_string(values)
        examples = "" if self.power.strip_examples else "".join(turn.example_blocks)
        before = self.anchor(ExtensionPosition.BEFORE_PROMPT).lstrip()
        after = self.anchor(ExtensionPosition.IN_PROMPT)
        system_text = (before + story + after + examples).strip()
        system = [{"role": "system", "content": system_text}] if system_text else []

        def content(entry: _Entry) -> str:
            item = _as_item(entry)
            named = (
                bool(item.name)
                and not item.is_narrator
                and (
                    (context.is_group and item.name != self.user)
                    or (item.forced_avatar and item.name != self.user)
                )
            )
            return f"{item.name}: {item.text}" if named else item.text

        history = [{"role": _chat_role(item), "content": content(item)} for item in items]
        open_last = self.is_continue and bool(history)

        def render(start: int) -> str:
            kept = [dict(m) for m in history[start:]]
            if open_last and kept:
                tail = kept[-1]["content"]
                kept[-1]["content"] = tail + _CUT
                text = template.render_adapted(system + kept, add_generation_prompt=False)
                return text[: text.find(_CUT)] if _CUT in text else text
            return template.render_adapted(
                system + kept, add_generation_prompt=not self.is_impersonate
            )

        # The rendered cost only grows with more history: find the oldest start that fits.
        low, high = 0, len(history)
        while low < high:
            middle = (low + high) // 2
            if self.tokens(render(middle), padding) < budget:
                high = middle
            else:
                low = middle + 1
        text = render(low)
        if system_text:
            self.ledger.add("story_string", "system message", system_text, self.tokens(system_text))
        for index, item in enumerate(items):
            kept = index >= low
            self.ledger.add(
                item.kind if isinstance(item, _Item) else "history",
                _source(item),
                history[index]["content"],
                self.tokens(history[index]["content"]),
                included=kept,
                reason="" if kept else "context full",
            )
        stop = stopping_strings(
            user=self.user,
            char=self.char,
            context=self.settings.context,
            power_user=self.power,
            instruct=None,
            macros=self.macros,
            impersonate=self.is_impersonate,
        )
        if template.eos_token and template.eos_token not in stop:
            stop.append(template.eos_token)
        return Prompt(
            kind="text",
            text=text,
            stop=tuple(stop),
            sampling={
                **self.settings.sampling,
                "max_new_tokens": self.settings.amount_gen,
                "truncation_length": self.settings.max_context,
            },
            ledger=Ledger(
                items=self.accounted(text, padding, pieces=False),
                total_tokens=self.tokens(text, padding),
                budget=budget,
                trace=tuple(turn.world.trace),
                history_stopped=low > 0,
            ),
            state=turn_state(turn),
        )

    # -------------------------------------------------------- sub-steps

    def anchor(self, position: ExtensionPosition) -> str:
        """Extension prompts before or after the story string (§6.3)."""
        text = self.turn.injections.joined(position)
        return self.macros(text) if text else text

    def story_string(self, values: dict[str, str]) -> str:
        """The rendered story string (§6.2)."""
        template = self.settings.context.story_string
        output = render_story_template(template, values, self.macros)
        output = self.macros(output)
        output = output.lstrip("\n")
        if output and not output.endswith("\n") and (not self.instruct_on or self.wrap):
            output += "\n"
        return output

    def modify_last_line(self, text: str, prompt_bias: str, force_name2: bool) -> str:
        """What SillyTavern appends to the last message (§6.5 step 9, `modifyLastPromptLine`)."""
        quiet = self.quiet_prompt
        if quiet:
            if self.instruct_on:
                text += self.instruct.message(self.user, quiet, False, True)
            else:
                text += "\n" + quiet
                # Without instruct mode a quiet prompt ends the prompt (not quiet-to-loud).
                return text
        if self.instruct_on and not self.is_continue:
            if quiet and not self.is_impersonate:
                name = "System"
            else:
                name = self.user if self.is_impersonate else self.char
            text += self.instruct.final_line(
                name,
                self.is_impersonate,
                prompt_bias,
                quiet=bool(quiet) and self.is_quiet,
                quiet_to_loud=False,
            )
        if not self.instruct_on and self.is_impersonate and not self.is_continue:
            if not text.endswith("\n"):
                text += "\n"
            text += self.user + ":"
        continuing_greeting = (
            len(self.context.messages) == 1 and not self.context.earlier.count and self.is_continue
        )
        if not self.instruct_on and force_name2 and not continuing_greeting:
            if not text.endswith("\n"):
                text += "\n"
            messages = self.context.messages
            if not self.is_continue or not (messages and messages[-1].is_user):
                text += f"{self.char}:"
        return text

    def cleanup_continue(self, text: str, prompt_bias: str) -> str:
        """The continued text readied to follow the prompt (§6.7, `cleanupPromptCache`)."""
        prefix = f"{self.char}:"
        if text.lstrip().startswith(prefix):
            text = text.replace(prefix, "", 1).lstrip()
        if text.lstrip().startswith(prompt_bias):
            text = text.replace(prompt_bias, "", 1)
        if not re.match(r"\s", text) and not self.instruct_on:
            text = " " + text
        return text

    # ------------------------------------------------------------ ledger

    def accounted(self, text: str, padding: int, *, pieces: bool) -> tuple[LedgerItem, ...]:
        """The ledger's items, with what makes their tokens add up to the prompt's total.

        With `pieces`, the included items are the prompt text cut in order: each gets
        its position (the piece index), so `first_difference` can name the part where
        two text prompts part. Counted apart, pieces cost a few tokens more or less than
        counted together (byte-pair merges across a seam); a `joins` line holds that
        difference, and the token padding SillyTavern adds to every count has its own
        line, so the included items sum to exactly the prompt's total.
        """
        items: list[LedgerItem] = []
        position = 0
        for item in self.ledger.items:
            if pieces and item.included and item.text:
                piece = item.text.replace("\r", "")
                if self.power.collapse_newlines:
                    piece = _NEWLINES.sub("\n", piece)
                tokens = self.tokens(piece) if piece != item.text else item.tokens
                item = replace(item, text=piece, tokens=tokens, position=position)
                position += 1
            items.append(item)
        if not text:
            return tuple(items)
        counted = sum(i.tokens for i in items if i.included)
        if padding:
            items.append(
                LedgerItem(
                    "overhead",
                    "token padding",
                    padding,
                    True,
                    "added to every count to allow for a tokenizer's error (token_padding)",
                )
            )
        rest = self.tokens(text) - counted
        if rest:
            items.append(
                LedgerItem(
                    "overhead",
                    "joins" if pieces else "template",
                    rest,
                    True,
                    "tokens merged or split where the parts meet"
                    if pieces
                    else "the chat template's role markers and special tokens",
                )
            )
        return tuple(items)

    def record_dropped(
        self, history: _History, placed: dict[int, str], stopped_at: int | None
    ) -> None:
        """One ledger line for the history the context could not hold."""
        size = len(history)
        dropped = size - len(placed)
        if dropped <= 0:
            return
        newest_index = next(i for i in range(size) if i not in placed)
        oldest_index = next(i for i in range(size - 1, -1, -1) if i not in placed)
        oldest = history.entry(oldest_index)
        newest = history.entry(newest_index)
        span = f"{_source(oldest)}..{_source(newest)}" if dropped > 1 else _source(newest)
        first = history.text(newest_index)
        why = "context full" if stopped_at is not None else "not placed"
        self._dropped.append(
            LedgerItem(
                "history",
                span,
                self.tokens(first),
                included=False,
                reason=f"{why}: {dropped + self.context.earlier.visible} older message(s) not sent",
                text=first,
            )
        )

    def record_parts(
        self,
        before_anchor: str,
        story: str,
        after_anchor: str,
        examples: list[str],
        example_count: int,
        pinned: str | None,
    ) -> None:
        if before_anchor:
            self.ledger.add(
                "anchor", "before story string", before_anchor, self.tokens(before_anchor)
            )
        self.ledger.add("story_string", self.settings.context.name, story, self.tokens(story))
        if after_anchor:
            self.ledger.add("anchor", "after story string", after_anchor, self.tokens(after_anchor))
        for index, example in enumerate(examples):
            kept = pinned is not None or index < example_count
            self.ledger.add(
                "example",
                f"block {index + 1}",
                example,
                self.tokens(example),
                included=kept,
                reason="" if kept else "context full",
            )

    def record_sent(self, final: list[str], sources: list[_Entry | None]) -> None:
        for text, item in zip(final, sources, strict=True):
            kind = item.kind if isinstance(item, _Item) else "history"
            self.ledger.add(kind, _source(item), text, self.tokens(text))


_Entry = ChatMessage | _Item


def _as_item(entry: _Entry) -> _Item:
    if isinstance(entry, _Item):
        return entry
    message = entry
    return _Item(
        message.name,
        message.text,
        message.is_user,
        is_narrator=message.speaker is Speaker.NARRATOR,
        forced_avatar=message.forced_avatar,
        source=message.id,
    )


# ------------------------------------------------------------ chat templates

_CUT = "\u0000taverna-continue\u0000"


def build_with_chat_template(
    context: AssemblyContext, turn: Turn, count_text: CountText, template: ChatTemplate
) -> Prompt:
    """The Text Completion prompt in a model's own Hugging Face chat template.

    The story string (with the anchors and example dialogue) is the system
    message; the history, with the in-chat injections at their depths, follows in
    chat roles; as much history as fits is kept, newest first, without holes. On
    continue the last message is left open (no end-of-turn after it).
    """
    builder = _Builder(context, turn, count_text)
    builder.instruct_on = False
    return builder.build_chat_template(template)


def _chat_role(entry: _Entry) -> str:
    if _as_item(entry).is_narrator:
        return "system"
    return "user" if entry.is_user else "assistant"


def _source(entry: _Entry | None) -> str:
    if entry is None:
        return ""
    return entry.source if isinstance(entry, _Item) else entry.id
