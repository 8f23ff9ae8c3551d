"""The character editor's flat fields, to and from the typed card (every other card field kept)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from taverna.model.character import Character
from taverna.server.schemas import NAME_MAX, TEXT_MAX, Strict

Text = Field(default="", max_length=TEXT_MAX)


class CharacterFields(Strict):
    """Every card field a person edits in the page."""

    name: str = Field(min_length=1, max_length=NAME_MAX)
    nickname: str | None = Field(default=None, max_length=NAME_MAX)
    description: str = Text
    personality: str = Text
    scenario: str = Text
    first_mes: str = Text
    alternate_greetings: list[str] = Field(default_factory=list, max_length=1000)
    group_only_greetings: list[str] = Field(default_factory=list, max_length=1000)
    mes_example: str = Text
    system_prompt: str = Text
    post_history_instructions: str = Text
    depth_prompt: str = Text
    depth_prompt_depth: int | None = Field(default=None, ge=0, le=10_000)
    depth_prompt_role: Literal["system", "user", "assistant"] = "system"
    talkativeness: float | None = Field(default=None, ge=0, le=1)
    creator_notes: str = Text
    creator: str = Field(default="", max_length=NAME_MAX)
    character_version: str = Field(default="", max_length=NAME_MAX)
    tags: list[str] = Field(default_factory=list, max_length=500)
    favorite: bool | None = Field(default=None, description="None keeps the mark as it is")
    lorebook_id: str | None = Field(default=None, max_length=100)


class CharacterIn(CharacterFields):
    revision: int | None = None


class CharacterOut(BaseModel):
    id: str
    revision: int
    name: str
    nickname: str | None
    description: str
    personality: str
    scenario: str
    first_mes: str
    alternate_greetings: list[str]
    group_only_greetings: list[str]
    mes_example: str
    system_prompt: str
    post_history_instructions: str
    depth_prompt: str
    depth_prompt_depth: int
    depth_prompt_role: str
    talkativeness: float
    creator_notes: str
    creator: str
    character_version: str
    tags: list[str]
    favorite: bool
    lorebook_id: str | None
    lorebook_name: str | None
    avatar_url: str | None
    has_embedded_lorebook: bool
    embedded_lorebook_entries: int = 0


class CharacterListItem(BaseModel):
    id: str
    name: str
    tags: list[str]
    favorite: bool
    creator: str
    avatar_url: str | None


def character_out(
    doc_id: str, revision: int, character: Character, *, lorebook_id: str | None
) -> CharacterOut:
    note = character.depth_prompt
    return CharacterOut(
        id=doc_id,
        revision=revision,
        name=character.name,
        nickname=character.nickname,
        description=character.description,
        personality=character.personality,
        scenario=character.scenario,
        first_mes=character.first_mes,
        alternate_greetings=list(character.alternate_greetings),
        group_only_greetings=list(character.group_only_greetings),
        mes_example=character.mes_example,
        system_prompt=character.system_prompt,
        post_history_instructions=character.post_history_instructions,
        depth_prompt=note.prompt,
        depth_prompt_depth=int(note.depth),
        depth_prompt_role=note.role,
        talkativeness=character.talkativeness,
        creator_notes=character.creator_notes,
        creator=character.creator,
        character_version=character.character_version,
        tags=list(character.tags),
        favorite=character.favorite,
        lorebook_id=lorebook_id,
        lorebook_name=character.linked_world,
        avatar_url=f"/api/characters/{doc_id}/avatar",
        has_embedded_lorebook=character.character_book is not None,
        embedded_lorebook_entries=len(character.character_book.entries)
        if character.character_book is not None
        else 0,
    )
