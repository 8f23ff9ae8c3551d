"""The JSON shapes of the HTTP API: what the page sends and what it gets back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

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


class SnippetPieceOut(BaseModel):
    text: str
    match: bool


class SearchHitOut(BaseModel):
    """A message a search found; `on_path`: on its chat's active path (else opening it
    switches the path to it)."""

    chat_id: str
    chat_title: str
    node_id: str
    parent_id: str | None
    role: str
    speaker: str
    position: int
    hidden: bool
    on_path: bool
    snippet: list[SnippetPieceOut]


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


class TokenCountIn(Strict):
    text: str = Field(default="", max_length=TEXT_MAX)
    connection: str | None = Field(
        default=None, max_length=NAME_MAX, description="count as for this connection's model"
    )


class TokenCountOut(BaseModel):
    tokens: int = Field(description="the tokens of `text`")
    prompt_tokens: int = Field(description="the tokens of the next prompt, as it stands")
    tokenizer: str


class RevisionIn(Strict):
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


class GenerateIn(Strict):
    kind: Literal["normal", "regenerate", "swipe", "continue", "impersonate"] = "normal"
    text: str | None = Field(default=None, max_length=TEXT_MAX)
    image: str | None = Field(
        default=None, max_length=200, description="a stored picture's URL, sent with the message"
    )
    revision: ChatRevision
    member: str | None = Field(
        default=None, max_length=NAME_MAX, description="in a group chat: the member who speaks"
    )
    connection: str | None = Field(
        default=None, max_length=NAME_MAX, description="the connection to use (else the default)"
    )


class MessageImageIn(Strict):
    image: str | None = Field(
        max_length=200, description="a stored picture's URL (from POST /api/images); null removes"
    )
    revision: ChatRevision


class ImageOut(BaseModel):
    url: str
    media_type: str
    width: int
    height: int
    size: int


class RoundOut(BaseModel):
    """A group round: who answers, in order, and the generation of each who has started."""

    id: str
    chat_id: str
    speakers: list[str]
    tasks: list[TaskOut]
    done: bool


class GenerationStarted(BaseModel):
    chat: ChatOut
    task: TaskOut
    round: RoundOut | None = Field(
        default=None, description="in a group chat: the round this reply begins"
    )


class ContextOut(BaseModel):
    """Where the model's view of the chat began, as recorded with the last reply."""

    reply_id: str | None = Field(description="the last generated reply on the path with a record")
    first_message_in_context: str | None = Field(
        description="the oldest message that reply was sent, when older ones were cut"
    )


class PromptOut(BaseModel):
    prompt: dict[str, Any]
    request: dict[str, Any] | None = None
    first_message_in_context: str | None = None
    included_message_ids: list[str] = []
    # True: a stored reply's prompt exactly as it was sent; False: built now.
    as_sent: bool = False


# ------------------------------------------------------------- connections

ApiName = Literal[
    "openai",
    "openai-compatible",
    "anthropic",
    "google",
    "mistral",
    "koboldcpp",
    "llamacpp",
    "openai-text",
    "local",
    # sources by name (taverna/providers/sources.py), each on one of the APIs above
    "claude",
    "openrouter",
    "deepseek",
    "xai",
    "groq",
    "mistralai",
    "makersuite",
    "perplexity",
    "cohere",
    "ai21",
    "01ai",
    "custom",
    "ooba",
    "ollama",
    "vllm",
    "aphrodite",
    "tabby",
    "togetherai",
    "mancer",
    "infermaticai",
    "dreamgen",
    "openrouter-text",
    "featherless",
    "huggingface",
]
PostProcessingName = Literal["none", "merge", "semi", "strict", "single", "claude"]


class ConnectionIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    api: ApiName
    url: str = Field(default="", max_length=2000)
    model: str = Field(
        default="", max_length=4096, description="the model's name; for `local`, a .gguf file"
    )
    key: str | None = Field(default=None, max_length=10_000)
    key_env: str | None = Field(default=None, max_length=NAME_MAX)
    default: bool = False
    post_processing: PostProcessingName = "none"


class ConnectionPatch(Strict):
    model: str | None = Field(default=None, max_length=NAME_MAX)
    url: str | None = Field(default=None, max_length=2000)
    key: str | None = Field(
        default=None,
        max_length=10_000,
        description='a new key (needed when the URL moves to another site); `""` removes it',
    )
    default: bool | None = None


class ConnectionOut(BaseModel):
    name: str
    api: str
    url: str
    model: str
    post_processing: str
    default: bool
    has_key: bool
    key: str = Field(description="where the key comes from, or its last characters; never the key")
    source: str = Field(default="", description="the source it was made from, by name")


class ModelOut(BaseModel):
    id: str
    context: int | None = Field(default=None, description="context size, where the API says it")


class SourceOut(BaseModel):
    """A service a connection is made from, as the connection form offers it."""

    name: str
    label: str
    family: str
    api: str
    url: str
    needs_url: bool
    key: str
    key_hint: str
    models: bool
    stop_limit: int | None
    reasoning: str
    post_processing: str
    notes: str
    gone: str


class ConnectionTestOut(BaseModel):
    ok: bool
    message: str
    latency_ms: int
    # Why it failed, in stable words a page translates (`message` is the English).
    cause: str | None = None
    code: str | None = None
    params: dict[str, str | int] = {}
    part: str | None = Field(
        default=None,
        description="which part failed: dns, tls, refused, network, auth, model, timeout, api",
    )


class DraftOut(BaseModel):
    id: str
    kind: str
    anchor_id: str | None
    text: str
    reason: str
    # Why the reply failed, as the model API's failure kind (`reason` is the English).
    cause: str | None = None
    # A finished reply (or a draft) the database could not take yet: it waits on the
    # server's disk and is stored as soon as the database answers ("saving…").
    saving: bool = False


class StopOut(BaseModel):
    outcome: str | None
    draft_id: str | None = None


class ResendIn(Strict):
    content: str = Field(max_length=TEXT_MAX)
    revision: ChatRevision


# ---------------------------------------------------------------- lorebooks


class LorebookIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)


class LorebookListItem(BaseModel):
    id: str
    name: str
    entry_count: int


class LorebookImported(LorebookListItem):
    warnings: list[ImportWarningOut] = Field(
        default_factory=list, description="values of the file read otherwise than written"
    )


class LorebookOut(BaseModel):
    id: str
    name: str
    revision: int
    entries: list[dict[str, Any]] = Field(
        description="SillyTavern world info entries, by SillyTavern's own field names"
    )


# ----------------------------------------------------------------- personas


class PersonaIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    description: str = Field(default="", max_length=TEXT_MAX)
    # SillyTavern's persona description positions: 0 in the prompt, 2 before and 3 after
    # the author's note, 4 in the chat at a depth, 9 nowhere.
    position: int = Field(default=0, ge=0, le=9)
    depth: int = Field(default=2, ge=0, le=10_000)
    role: int = Field(default=0, ge=0, le=2)
    is_default: bool = False


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
    """A script's outcome: the chat after it, its result and notices, and the reply it asked
    for (`trigger`, `continue`, `impersonate`, `swipe`), which the page starts next."""

    chat: ChatOut
    pipe: str
    notices: list[ScriptNoticeOut]
    follow_up: str | None = None
    aborted: bool = False


# ------------------------------------------------------------------ groups


class GroupMemberOut(BaseModel):
    """One member of a group: its card file name in the group, its character, muted or not."""

    file: str
    name: str
    character_id: str | None
    avatar_url: str | None
    muted: bool
    talkativeness: float
    connection: str | None = Field(default=None, description="the member's own connection")
    preset: str | None = Field(
        default=None, description="the member's own Chat Completion preset (an id)"
    )


class GroupOut(BaseModel):
    """A group: its members in order and how they take turns (SillyTavern's settings)."""

    id: str
    name: str
    revision: int
    members: list[GroupMemberOut]
    activation_strategy: Literal["natural", "list", "manual", "pooled"]
    generation_mode: Literal["swap", "join", "join_with_muted"]
    allow_self_responses: bool
    auto_mode_delay: float
    join_prefix: str
    join_suffix: str


class NewGroupIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    character_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        min_length=1, max_length=100, description="the members' characters, in speaking order"
    )
    activation_strategy: Literal["natural", "list", "manual", "pooled"] = "natural"
    generation_mode: Literal["swap", "join", "join_with_muted"] = "swap"
    allow_self_responses: bool = False


class GroupChangesIn(Strict):
    """What to change in a group; what is left out stays as it is."""

    name: str | None = Field(default=None, min_length=1, max_length=NAME_MAX)
    character_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        default=None, min_length=1, max_length=100, description="the members, reordered"
    )
    muted: list[Annotated[str, Field(max_length=NAME_MAX)]] | None = Field(
        default=None, max_length=100, description="the names of the muted members"
    )
    activation_strategy: Literal["natural", "list", "manual", "pooled"] | None = None
    generation_mode: Literal["swap", "join", "join_with_muted"] | None = None
    allow_self_responses: bool | None = None
    auto_mode_delay: float | None = Field(default=None, ge=1, le=3600)
    join_prefix: str | None = Field(default=None, max_length=TEXT_MAX)
    join_suffix: str | None = Field(default=None, max_length=TEXT_MAX)
    connections: (
        dict[
            Annotated[str, Field(max_length=NAME_MAX)],
            Annotated[str, Field(max_length=NAME_MAX)] | None,
        ]
        | None
    ) = Field(
        default=None,
        max_length=100,
        description="a member's own connection by its name (null: the chat's connection)",
    )
    presets: (
        dict[
            Annotated[str, Field(max_length=NAME_MAX)],
            Annotated[str, Field(max_length=100)] | None,
        ]
        | None
    ) = Field(
        default=None,
        max_length=100,
        description="a member's own Chat Completion preset (an id) by its name (null: the chat's)",
    )
    revision: int = Field(ge=1, le=REVISION_MAX, description="the group's revision as read")


class NewGroupChatIn(Strict):
    title: str | None = Field(default=None, max_length=NAME_MAX)


class RoundIn(Strict):
    text: str | None = Field(default=None, max_length=TEXT_MAX)
    member: str | None = Field(
        default=None,
        max_length=NAME_MAX,
        description="the member who answers (else the group's turn order)",
    )
    auto: bool = Field(
        default=False,
        description="a round nobody typed for (auto mode): the person is not answered",
    )
    revision: ChatRevision


class RoundStarted(BaseModel):
    chat: ChatOut
    round: RoundOut
    task: TaskOut | None


VariableValue = Annotated[str, Field(max_length=TEXT_MAX)] | float | int | bool | None


class ChatVariablesIn(Strict):
    """The chat variables to hold from the active message on (they replace the old ones)."""

    local: dict[Annotated[str, Field(min_length=1, max_length=NAME_MAX)], VariableValue] = Field(
        max_length=10_000
    )
    revision: ChatRevision


class GlobalVariablesIn(Strict):
    """The global variables (every chat), replacing the old ones."""

    global_: dict[Annotated[str, Field(min_length=1, max_length=NAME_MAX)], VariableValue] = Field(
        alias="global", max_length=10_000
    )


class VariablesOut(BaseModel):
    """Chat variables at the active message (`node_id`) and the global ones."""

    model_config = ConfigDict(populate_by_name=True)

    local: dict[str, Any]
    global_: dict[str, Any] = Field(alias="global")
    node_id: str | None = None
    revision: int = 0


# ------------------------------------------------------------------ summaries


class SummaryItemOut(BaseModel):
    """One summary on the chat's path: its text, the message it belongs to, its number
    among the path's summaries (1 the oldest) and how many messages it covers."""

    text: str
    node_id: str | None
    number: int
    covers: int


class ChatSummariesOut(BaseModel):
    """The summary in force at the end of the path (None: none) and every summary on it.

    `hides`: with "hide what a summary covers" on, the path's first `hides` messages are
    left out of the prompt, covered by the summary in force."""

    current: SummaryItemOut | None
    along: list[SummaryItemOut]
    revision: int
    hides: int = 0


class SummaryIn(Strict):
    text: str = Field(min_length=1, max_length=TEXT_MAX)
    revision: ChatRevision


class SummaryMadeOut(ChatSummariesOut):
    """A summary just made: `cut` when the reply stopped at the summary's length limit."""

    made: str
    node_id: str | None
    cut: bool
    raw: bool
