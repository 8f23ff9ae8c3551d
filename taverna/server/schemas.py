"""The JSON shapes several routes share: a chat as the page sees it, the tasks and rounds that
write it, and the rules every request body follows. A shape only one route module uses
lives beside that module."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field

from taverna.errors import FormatWarning

NAME_MAX = 200
TEXT_MAX = 1_000_000
# Revisions are 32-bit integers where they are stored.
REVISION_MAX = 2**31 - 1

# Every write to a chat names the revision it read: a chat that moved on since is a
# conflict (409), never a silent overwrite; a write without one is refused (422).
ChatRevision = Annotated[
    int,
    Field(ge=1, le=REVISION_MAX, description="the chat's revision as read (from its last answer)"),
]
# A DELETE names the revision it read in its query, as a write's body does.
QueryRevision = Annotated[
    int,
    Query(ge=1, le=REVISION_MAX, description="the chat's revision as read (from its last answer)"),
]


class ImportWarningOut(BaseModel):
    """A value of an imported file read otherwise than written, as SillyTavern reads it."""

    file: str | None
    field: str | None
    message: str
    code: str | None = Field(default=None, description="what was done, for a page to translate")
    params: dict[str, str | int] = {}

    @classmethod
    def of(cls, warnings: Iterable[FormatWarning]) -> list[ImportWarningOut]:
        return [
            cls(
                file=w.file,
                field=w.field,
                message=w.message,
                code=w.code or None,
                params=dict(w.params),
            )
            for w in warnings
        ]


class Strict(BaseModel):
    """A request body: unknown fields are refused, types are not coerced from strings."""

    model_config = ConfigDict(extra="forbid", strict=True)


# ------------------------------------------------------------------ chats


class ToolCallOut(BaseModel):
    """One function tool call of a tool step, with its result."""

    id: str
    name: str
    arguments: str
    result: str


class MessageOut(BaseModel):
    id: str
    parent_id: str | None
    role: str
    name: str
    content: str
    shown: str | None = Field(
        default=None,
        description="the text to show where display-only regex scripts change it "
        "(`content` stays the stored text)",
    )
    shown_reasoning: str | None = Field(
        default=None,
        description="the reasoning to show where display-only regex scripts of the reasoning "
        "placement change it (`generation.extras.reasoning` stays the stored text)",
    )
    hidden: bool
    position: int
    candidate_index: int = Field(description="1-based place among the candidates (`2` in `2/3`)")
    candidate_count: int
    created: str | None
    generated: bool
    avatar_url: str | None = None
    generation: dict[str, Any] | None = None
    image_url: str | None = Field(
        default=None, description="the picture attached to the message (shown, and sent inline)"
    )
    tool_calls: list[ToolCallOut] | None = Field(
        default=None, description="a tool step: the calls the model made here and their results"
    )


class ParticipantOut(BaseModel):
    id: str | None
    name: str
    avatar_url: str | None


class PersonaRef(BaseModel):
    id: str | None = None
    name: str
    avatar_url: str | None = None


class BranchOut(BaseModel):
    id: str
    name: str
    head_id: str | None
    length: int
    last_message: str | None
    active: bool


class TaskOut(BaseModel):
    id: str
    kind: str
    chat_id: str | None = None
    status: str = "running"


class WindowOut(BaseModel):
    """Where a chat's `messages` sit on its whole active path (`position`s count from 0)."""

    total: int = Field(description="live messages on the whole active path")
    start: int = Field(description="the position the messages begin at, also when there are none")
    has_older: bool = Field(description="older messages exist: ask `?before=` the first id")
    has_newer: bool = Field(description="newer messages exist: ask `?after=` the last id")
    changed_from: int | None = Field(
        default=None,
        description=(
            "on a write: the path may have changed from this position on (it equals "
            "`start`), and these messages replace the page's from there to the end. None: "
            "a read, or a write that reached further back than one window, whose "
            "messages are the path's last ones, to show instead of what the page held"
        ),
    )


class ChatConnectionOut(BaseModel):
    name: str
    model: str = Field(description="the model the chat asks for; empty: the connection's own")


class ChatOut(BaseModel):
    """A chat with one window of its active path: by default its last messages; a write
    answers with the messages it may have changed and those after them."""

    id: str
    title: str
    revision: int
    characters: list[ParticipantOut]
    persona: PersonaRef
    messages: list[MessageOut] = Field(description="the window's messages, in path order")
    window: WindowOut
    branches: list[BranchOut]
    lorebook: str | None = Field(default=None, description="the chat's own lorebook, by name")
    task: TaskOut | None = None
    group_id: str | None = Field(default=None, description="a group chat's group")
    connection: ChatConnectionOut | None = Field(
        default=None, description="the connection the chat chose (none: it follows the default)"
    )


class ChatSummaryOut(BaseModel):
    id: str
    title: str
    revision: int
    character_ids: list[str]
    character_names: list[str]
    message_count: int
    branch_count: int
    updated: str | None
    group_id: str | None = None


class RevisionIn(Strict):
    revision: ChatRevision


class RoundOut(BaseModel):
    """A group round: who answers, in order, and the generation of each who has started."""

    id: str
    chat_id: str
    speakers: list[str]
    tasks: list[TaskOut]
    done: bool


class PromptOut(BaseModel):
    prompt: dict[str, Any]
    request: dict[str, Any] | None = None
    first_message_in_context: str | None = None
    included_message_ids: list[str] = []
    # True: a stored reply's prompt exactly as it was sent; False: built now.
    as_sent: bool = False
    # A past reply's tokens as its API reported them: prompt, cached, new, written, reply.
    usage: dict[str, Any] | None = None
    # The prefix shared with the previous reply's prompt: reused tokens, first difference.
    reuse: dict[str, Any] | None = None


# ---------------------------------------------------------------- lorebooks


class LorebookOut(BaseModel):
    id: str
    name: str
    revision: int
    entries: list[dict[str, Any]] = Field(
        description="SillyTavern world info entries, by SillyTavern's own field names"
    )


# ------------------------------------------------------------------ variables

# Chat variables (a chat's route) and global ones (their own route) take the same values.
VariableValue = Annotated[str, Field(max_length=TEXT_MAX)] | float | int | bool | None
