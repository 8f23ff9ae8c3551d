"""The chat routes' own request and response shapes: renaming, editing, branching,
checkpoints, the author's note, scripts and variables of one chat."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from taverna.server.schemas import (
    NAME_MAX,
    TEXT_MAX,
    ChatOut,
    ChatRevision,
    ImportWarningOut,
    Strict,
    VariableValue,
)


class ChatImported(BaseModel):
    id: str
    title: str
    messages: int
    already_imported: bool
    warnings: list[ImportWarningOut] = Field(
        default_factory=list, description="values of the file read otherwise than written"
    )


class NewChatIn(Strict):
    character_id: str = Field(min_length=1, max_length=100)
    title: str | None = Field(default=None, max_length=NAME_MAX)


class RenameChatIn(Strict):
    title: str = Field(min_length=1, max_length=NAME_MAX)
    revision: ChatRevision


class ChatPersonaIn(Strict):
    persona_id: str = Field(min_length=1, max_length=200)
    revision: ChatRevision


class ChatConnectionIn(Strict):
    connection: str | None = Field(
        max_length=NAME_MAX, description="the connection by name; null: follow the default"
    )
    model: str | None = Field(
        default=None,
        max_length=NAME_MAX,
        description="the model to ask for; null: the connection's",
    )
    revision: ChatRevision


class EditIn(Strict):
    content: str = Field(max_length=TEXT_MAX)
    revision: ChatRevision


class HiddenIn(Strict):
    hidden: bool
    revision: ChatRevision


class SelectIn(Strict):
    index: int = Field(ge=1, description="1-based candidate to show")
    revision: ChatRevision


class BranchIn(Strict):
    node_id: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1, max_length=NAME_MAX)
    revision: ChatRevision


class CheckpointIn(Strict):
    node_id: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1, max_length=NAME_MAX)
    revision: ChatRevision


class CheckpointOut(BaseModel):
    id: str
    name: str
    node_id: str
    created: str | None


class ChatLorebookIn(Strict):
    lorebook_id: str | None = Field(max_length=100)
    revision: ChatRevision


class MessageImageIn(Strict):
    image: str | None = Field(
        max_length=200, description="a stored picture's URL (from POST /api/images); null removes"
    )
    revision: ChatRevision


class ContextOut(BaseModel):
    """Where the model's view of the chat began, as recorded with the last reply."""

    reply_id: str | None = Field(description="the last generated reply on the path with a record")
    first_message_in_context: str | None = Field(
        description="the oldest message that reply was sent, when older ones were cut"
    )


class AuthorsNoteIn(Strict):
    """The chat's author's note (SillyTavern's numbers: position 0 after the main prompt,
    1 in the chat at `depth`, 2 before the main prompt; role 0 system, 1 user, 2 assistant)."""

    prompt: str = Field(default="", max_length=TEXT_MAX)
    interval: int = Field(default=1, ge=0, le=100_000)
    depth: int = Field(default=4, ge=0, le=100_000)
    position: int = Field(default=1, ge=0, le=2)
    role: int = Field(default=0, ge=0, le=2)
    revision: ChatRevision


class ChatSettingsOut(BaseModel):
    authors_note: dict[str, Any] | None
    lorebook: str | None
    revision: int | None = Field(default=None, description="the chat's revision as read")


class HideRangeIn(Strict):
    """`/hide start-end`: message positions on the path as shown (`#0` is the first)."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    hidden: bool = True
    revision: ChatRevision


class ScriptIn(Strict):
    """An STscript to run in the chat (what the chat input sends for a line starting `/`)."""

    text: str = Field(min_length=1, max_length=TEXT_MAX)
    revision: ChatRevision
    input: str = Field(
        default="", max_length=TEXT_MAX, description="what the chat input holds ({{input}})"
    )


class ScriptNoticeOut(BaseModel):
    """What `/echo` and friends showed: a notice for the person."""

    severity: str
    text: str


class ScriptOut(BaseModel):
    """A script's outcome: the chat after it, its result and notices, the reply it asked
    for (`trigger`, `continue`, `impersonate`, `swipe`), which the page starts next, and
    the text it put in the chat input box."""

    chat: ChatOut
    pipe: str
    notices: list[ScriptNoticeOut]
    follow_up: str | None = None
    aborted: bool = False
    input: str | None = None  # the chat input box's new text (`/setinput`), if it changed


class ChatVariablesIn(Strict):
    """The chat variables to hold from the active message on (they replace the old ones)."""

    local: dict[Annotated[str, Field(min_length=1, max_length=NAME_MAX)], VariableValue] = Field(
        max_length=10_000
    )
    revision: ChatRevision


class VariablesOut(BaseModel):
    """Chat variables at the active message (`node_id`) and the global ones."""

    model_config = ConfigDict(populate_by_name=True)

    local: dict[str, Any]
    global_: dict[str, Any] = Field(alias="global")
    node_id: str | None = None
    revision: int = 0
