"""Personas: who the user plays, as stored in SillyTavern's `settings.json` (formats-presets.md §6)."""

from __future__ import annotations

from enum import IntEnum

from pydantic import Field

from taverna.model.document import JsonInt, STDocument


class PersonaPosition(IntEnum):
    """Where a persona description goes (`persona_description_position`, algo-prompt-assembly.md §2.1)."""

    IN_PROMPT = 0
    AFTER_CHAR = 1  # deprecated: SillyTavern migrates it to IN_PROMPT when its UI loads
    TOP_AN = 2  # at the top of the author's note
    BOTTOM_AN = 3  # at the bottom of the author's note
    AT_DEPTH = 4
    NONE = 9


class PersonaDescriptor(STDocument):
    """`power_user.persona_descriptions[<avatar>]`: the description and where it goes."""

    description: str = ""
    position: JsonInt = 0
    depth: JsonInt = 2
    role: JsonInt = 0


class Persona(STDocument):
    """One persona. `avatar` (the avatar file name) is its identity in SillyTavern."""

    avatar: str
    name: str = ""
    descriptor: PersonaDescriptor = Field(default_factory=PersonaDescriptor)
    is_default: bool = False


class PersonaSet(STDocument):
    """All personas of a user: SillyTavern's three keys, or its persona backup file."""

    personas: dict[str, str] = Field(default_factory=dict)
    persona_descriptions: dict[str, PersonaDescriptor] = Field(default_factory=dict)
    default_persona: str | None = None

    def items(self) -> list[Persona]:
        """Each persona with its descriptor, in `personas` order, then descriptor-only ones."""
        avatars = list(self.personas)
        avatars += [a for a in self.persona_descriptions if a not in self.personas]
        return [
            Persona(
                avatar=avatar,
                name=self.personas.get(avatar, ""),
                descriptor=self.persona_descriptions.get(avatar) or PersonaDescriptor(),
                is_default=avatar == self.default_persona,
            )
            for avatar in avatars
        ]
