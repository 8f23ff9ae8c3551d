"""Example dialogue in a Chat Completion prompt, in what the budget leaves (§3.4, §3.6)."""

from __future__ import annotations

from collections.abc import Mapping

from taverna.engine.assembly.chat_layout import Layout, Part, Slot
from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.turn import Turn


def _examples(context: AssemblyContext, turn: Turn) -> list[list[tuple[str, str]]]:
    """Example blocks as (name, content) turns (algo-prompt-assembly.md §3.4)."""
    if context.power_user.strip_examples:
        return []  # script.js: "strip examples" empties them once the story string is built
    user, char = context.persona.name, context.character.name
    blocks: list[list[tuple[str, str]]] = []
    for block in turn.example_blocks:
        text = _replace_first_ci(block, "<START>", "{Example Dialogue:}").replace("\r", "")
        lines = text.split("\n")
        turns: list[tuple[str, str]] = []
        current: list[str] = []
        in_user = in_bot = False

        def flush(name: str, label: str, turns: list[tuple[str, str]], current: list[str]) -> None:
            content = "\n".join(current).replace(name + ":", "", 1).strip()
            if context.is_group:
                content = f"{name}: {content}"
            turns.append((label, content))
            current.clear()

        # §3.4: the first line is the heading and is skipped.
        for line in lines[1:]:
            if line.startswith(user + ":"):
                if in_bot:
                    flush(char, "example_assistant", turns, current)
                in_user, in_bot = True, False
            elif line.startswith(char + ":"):
                if in_user:
                    flush(user, "example_user", turns, current)
                in_user, in_bot = False, True
            current.append(line)
        if in_user:
            flush(user, "example_user", turns, current)
        elif in_bot:
            flush(char, "example_assistant", turns, current)
        blocks.append(turns)
    return blocks


def _replace_first_ci(text: str, needle: str, replacement: str) -> str:
    index = text.lower().find(needle.lower())
    if index < 0:
        return text
    return text[:index] + replacement + text[index + len(needle) :]


def populate_examples(
    context: AssemblyContext,
    turn: Turn,
    by_id: Mapping[str, tuple[int, Slot]],
    layout: Layout,
) -> None:
    """SillyTavern `populateDialogueExamples` (algo-prompt-assembly.md §3.6)."""
    blocks = _examples(context, turn)
    if "dialogueExamples" not in by_id:
        return
    container: list[Part] = []
    layout.add("dialogueExamples", container, by_id["dialogueExamples"][0])
    if not blocks:
        return
    cc = context.chat_completion
    separator_text = (
        turn.substitute(cc.new_example_chat_prompt, {}) if cc.new_example_chat_prompt else ""
    )
    for number, block in enumerate(blocks):
        added = 0
        separator = layout.part("newChat", "system", separator_text, kind="separator")
        if layout.affordable(separator):
            layout.insert(separator, "dialogueExamples")
        for position, (name, content) in enumerate(block):
            part = layout.part(
                f"dialogueExamples {number}-{position}",
                "system",
                content,
                name,
                kind="example",
                source=f"block {number + 1} turn {position + 1}",
                source_code="example_block_turn",
                source_params={"block": number + 1, "turn": position + 1},
            )
            if not layout.affordable(part):
                for rest in block[position:]:
                    layout.dropped.append(
                        (
                            layout.part("example", "system", rest[1], rest[0], kind="example"),
                            "examples_after_history",
                        )
                    )
                break
            layout.insert(part, "dialogueExamples")
            added += 1
        if added == 0 and container:
            # §3.6: SillyTavern pops the last message of the examples, whatever it is.
            removed = container.pop()
            layout.budget += removed.tokens
