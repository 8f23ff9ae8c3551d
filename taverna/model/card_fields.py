"""The names a character card's layers use (formats-character-card.md §2), apart from the
model: readers that look at a card's JSON without validating it need them too."""

from __future__ import annotations

ENVELOPE_KEY = "_envelope"
"""Key of the envelope in `Character.to_json()`; no card field starts with `_`, so a card
whose `data` has an `envelope` key keeps it as an unknown field."""

SPEC_V2 = "chara_card_v2"
SPEC_V3 = "chara_card_v3"

V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")
"""The six fields of a V1 (TavernAI) card."""

V2_FIELDS = (
    *V1_FIELDS,
    "creator_notes",
    "system_prompt",
    "post_history_instructions",
    "alternate_greetings",
    "tags",
    "creator",
    "character_version",
    "extensions",
)
"""The `data` fields a V2 card must have (formats-character-card.md §12)."""
