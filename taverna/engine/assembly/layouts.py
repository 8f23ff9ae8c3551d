"""Prompt layouts: where the parts that change from turn to turn are placed.

A model server that keeps the computed prefix of the last prompt (llama.cpp's KV cache,
KoboldCpp's, a hosted API's prompt cache) reuses it only up to the first character that
differs. SillyTavern places lorebook text in the story string and the author's note,
summaries, recall and lorebook @depth entries a few messages above the newest one, so a
turn that activates another entry, or simply grows the chat (moving every at-depth
part), differs early and the whole chat after that point is computed again.

A layout is data: which of those parts leave their SillyTavern place and follow the
newest message. `SILLYTAVERN` keeps SillyTavern's places exactly; `CACHE` keeps the
system prompt, the card, the examples and the chat history as one stable prefix and puts
every volatile part after the newest message (still before the reply's own line), in
SillyTavern's relative order. Connections choose one by name (`prompt_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

from taverna.errors import TavernaError


@dataclass(frozen=True, slots=True)
class PromptLayout:
    """Which volatile parts follow the newest message instead of their SillyTavern place.

    `lore_after_chat`: the lorebook's before/after-story text and the extension prompts
    placed around the story string (an author's note or summary "in prompt") leave it.
    `injections_at_end`: every at-depth injection (author's note, character note, persona
    at depth, lorebook @depth, summaries, recall, `/inject`) goes at depth 0.
    `volatile_slots_last`: Chat Completion's prompt-manager slots whose text changes
    from turn to turn (world info, changing macros) follow the chat too.
    """

    name: str
    lore_after_chat: bool = False
    injections_at_end: bool = False
    volatile_slots_last: bool = False

    @property
    def moves_anything(self) -> bool:
        """Whether any part leaves its SillyTavern place."""
        return self.lore_after_chat or self.injections_at_end or self.volatile_slots_last


SILLYTAVERN = PromptLayout("sillytavern")
CACHE = PromptLayout(
    "cache", lore_after_chat=True, injections_at_end=True, volatile_slots_last=True
)

LAYOUTS: dict[str, PromptLayout] = {layout.name: layout for layout in (SILLYTAVERN, CACHE)}


def layout_named(name: str) -> PromptLayout:
    """The layout with this name (TavernaError naming the known ones otherwise)."""
    found = LAYOUTS.get(name.strip().lower())
    if found is None:
        raise TavernaError(
            f"no prompt layout is named {name!r}: choose one of {', '.join(LAYOUTS)}",
            field="prompt_layout",
            code="unknown_prompt_layout",
            params={"name": name, "layouts": ", ".join(LAYOUTS)},
        )
    return found
