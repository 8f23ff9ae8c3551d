"""The steps of SillyTavern's Text Completion prompt that both its layouts share.

Instruct or plain message formatting (§6.4), the system prompt (§6.1), in-chat injections
(§5.3), the anchors (§6.3), the story string (§6.2), the last line (§6.5 step 9) and the
continued text (§6.7); `builder` lays them out as SillyTavern does, `templated` in a
model's own chat template.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from taverna.engine.assembly.context import AssemblyContext, GenerationType
from taverna.engine.assembly.injections import MAX_INJECTION_DEPTH, Injection, depth_blocks
from taverna.engine.assembly.summary import depth_source, summary_of
from taverna.engine.assembly.turn import Turn, base_chat_replace, prompt_bias_text
from taverna.engine.macros import has_macros
from taverna.engine.textgen.history import Entry, Item, as_item
from taverna.engine.textgen.instruct import InstructFormat, SequenceVariant
from taverna.engine.textgen.ledger import TextLedger
from taverna.engine.textgen.story_string import render_story_template
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.prompt import ledger_source

CountText = Callable[[str], int]


class TextSteps:
    """One Text Completion build's settings, and the steps both of its layouts share."""

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
        self.instruct_on = self.settings.instruct_enabled
        self.wrap = self.settings.instruct.wrap
        self.instruct = InstructFormat(
            self.settings.instruct,
            self.user,
            self.char,
            self.macros,
            context.is_group,
            self.settings.context.example_separator,
        )
        self.ledger = TextLedger(self.tokens, collapse_newlines=self.power.collapse_newlines)
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

    def sampling(self) -> dict[str, Any]:
        """The sampler settings sent with the prompt, with its length limits."""
        return {
            **self.settings.sampling,
            "max_new_tokens": self.settings.amount_gen,
            "truncation_length": self.settings.max_context,
        }

    def format(self, entry: Entry, variant: SequenceVariant = SequenceVariant.MIDDLE) -> str:
        """SillyTavern `formatMessageHistoryItem` (§6.4)."""
        item = as_item(entry)
        item_name = item.name if item.is_user else (item.name or self.char)
        if self.instruct_on:
            return self.instruct.message(
                item_name, item.text, item.is_user, item.is_narrator, item.forced_avatar, variant
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
        if not self.settings.system_prompt_enabled:
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

    def core_items(self) -> list[Entry]:
        return list(self.turn.chat)

    def inject(self, items: list[Entry]) -> list[int]:
        """In-chat injections placed into the history (§5.3, `doChatInject`).

        Returns the positions of the injected messages counted from the newest, as
        SillyTavern records them (a depth past the oldest message is recorded where
        it was aimed, not where it landed).
        """
        blocks = depth_blocks(self.turn.injections, self.macros, chat_completion=False)
        names = {InjectionRole.SYSTEM: "", InjectionRole.USER: self.user}
        names[InjectionRole.ASSISTANT] = self.char
        newest_first: list[Entry] = list(reversed(items))
        injected: list[int] = []
        inserted = 0
        by_depth: dict[int, list[Entry]] = {}
        for block in blocks:
            source, params = depth_source(
                block.depth,
                block.role.chat_role,
                [
                    (s.key, summary_of(s)) if isinstance(s, Injection) else (s.identifier, "")
                    for s in block.sources
                ],
            )
            by_depth.setdefault(block.depth, []).append(
                Item(
                    names[block.role],
                    block.text,
                    is_user=block.role is InjectionRole.USER,
                    is_narrator=block.role is InjectionRole.SYSTEM,
                    injected=True,
                    source=source,
                    kind="injection",
                    source_code="depth_injection",
                    source_params=params,
                )
            )
        if self.context.layout.injections_at_end:
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

    def _volatile_at_end(self, by_depth: dict[int, list[Entry]]) -> dict[int, list[Entry]]:
        """Every depth injection (and the moved lorebook text) at depth 0, in prompt order.

        Beyond SillyTavern: what changes from turn to turn follows the newest message,
        so the prefix a provider caches (or llama.cpp's KV cache) stays the same.
        """
        oldest_first: list[Entry] = []
        if self._moved:
            oldest_first.append(
                Item(
                    "",
                    self._moved,
                    is_user=False,
                    is_narrator=True,
                    injected=True,
                    source=ledger_source("moved_to_end", {}),
                    kind="volatile",
                    source_code="moved_to_end",
                )
            )
        # At one depth SillyTavern's splice reverses the blocks; deeper ones come first.
        for depth in sorted(by_depth, reverse=True):
            oldest_first.extend(reversed(by_depth[depth]))
        return {0: list(reversed(oldest_first))} if oldest_first else {}

    def move_volatile(self, before_anchor: str, after_anchor: str) -> None:
        """Cache-friendly layout: the text to move after the chat (lorebook, anchors)."""
        world = self.turn.world
        parts = (before_anchor.strip(), world.before, world.after, after_anchor.strip())
        self._moved = "\n".join(p for p in parts if p)

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
