"""`taverna prompt`: the dry run that prints exactly what would be sent, from SillyTavern's files."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from taverna.cli.main import app
from taverna.cli.notices import echo_warnings
from taverna.engine.assemble import assemble
from taverna.engine.assembly.cache import CacheBreak, first_difference
from taverna.engine.assembly.context import CharacterInfo, ChatMessage, GenerationType
from taverna.engine.assembly.layouts import CACHE
from taverna.engine.assembly.ledger import render_ledger
from taverna.engine.textgen.chat_template import ChatTemplate
from taverna.errors import FormatError, FormatWarning, NotFound
from taverna.formats.st_settings import SillyTavernSettings, read_settings
from taverna.model.prompt import Prompt
from taverna.providers.request import Api
from taverna.services.chats.images import message_image, picture_file_reader, with_pictures
from taverna.services.turns.inputs import assembly_context, character_info, chat_messages, for_api

# the generation types `--type` accepts: the assembly's own
GenerationKind = GenerationType


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"{what} not found", file=str(path)) from None
    except OSError as error:
        raise FormatError(f"cannot read {what}: {error.strerror}", file=str(path)) from None


def _card(path: Path) -> CharacterInfo:
    from taverna.formats.card_json import read_card_json
    from taverna.formats.png_card import read_png_card

    data = _read(path, "card")
    found: list[FormatWarning] = []
    if data.startswith(b"\x89PNG"):
        character = read_png_card(data, file=str(path), warnings=found).character
    elif path.suffix.lower() == ".charx":
        from taverna.formats.charx import read_charx

        character = read_charx(data, file=str(path), warnings=found).character
    else:
        character = read_card_json(data, file=str(path), warnings=found)
    echo_warnings(found)
    # SillyTavern keys a character by its PNG file name.
    return character_info(character, avatar=path.with_suffix(".png").name)


def _world(path: Path) -> tuple[str, Any]:
    from taverna.formats.world_info import read_world_info

    found: list[FormatWarning] = []
    book = read_world_info(_read(path, "lorebook"), name=path.stem, file=str(path), warnings=found)
    echo_warnings(found)
    return path.stem, book


@dataclass(frozen=True)
class _Group:
    members: list[CharacterInfo]
    name: str
    mode: int
    prefix: str
    suffix: str
    muted: list[str]
    metadata: dict[str, Any]
    strategy: int = 0
    self_responses: bool = False


def _group(path: Path, cards: list[CharacterInfo]) -> _Group:
    """A SillyTavern group file, its members matched to the given cards."""
    from taverna.formats.json_text import loads

    doc = loads(_read(path, "group"), file=str(path))
    if not isinstance(doc, dict):
        raise FormatError("a group must be a JSON object", file=str(path))
    members = doc.get("members", [])
    if not isinstance(members, list):
        raise FormatError("expected a list of card file names", file=str(path), field="members")
    disabled = doc.get("disabled_members") or []
    unmatched = list(cards)
    ordered: list[CharacterInfo] = []
    muted: list[str] = []
    for member in members:
        stem = Path(str(member)).stem
        # A member is a card file name; the card may have been saved under another name.
        found = next((c for c in unmatched if Path(c.avatar).stem == stem), None)
        found = found or next((c for c in unmatched if c.name == stem), None)
        found = found or next((c for c in unmatched if stem.endswith(c.name)), None)
        found = found or (unmatched[0] if unmatched else None)
        if found is None:
            continue
        unmatched.remove(found)
        ordered.append(found)
        if member in disabled:
            muted.append(found.name)
    metadata = doc.get("chat_metadata")
    return _Group(
        members=ordered + unmatched,
        name=str(doc.get("name", "")),
        mode=int(doc.get("generation_mode", 0) or 0),
        prefix=str(doc.get("generation_mode_join_prefix", "") or ""),
        suffix=str(doc.get("generation_mode_join_suffix", "") or ""),
        muted=muted,
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
        strategy=int(doc.get("activation_strategy", 0) or 0),
        self_responses=bool(doc.get("allow_self_responses", False)),
    )


def _speaker(
    group: _Group, messages: Sequence[ChatMessage], kind: GenerationKind, wanted: str | None
) -> CharacterInfo:
    """Who speaks this turn (algo-chat-ops.md §5.1-5.2).

    The one asked for; on swipe, continue and quiet the author of the newest
    character message; with the list strategy the first enabled member; with the
    natural order the first member the last message mentions (never the one who
    just spoke, unless self-responses are allowed). SillyTavern then rolls dice on
    talkativeness; without a speaker given, the first chatty enabled member speaks.
    """
    by_name = {c.name: c for c in group.members}
    if wanted:
        if wanted not in by_name:
            raise NotFound(f"no group member named {wanted!r}")
        return by_name[wanted]
    enabled = [c for c in group.members if c.name not in group.muted] or group.members
    if kind in (GenerationKind.SWIPE, GenerationKind.CONTINUE, GenerationKind.QUIET):
        for message in reversed(messages):
            if message.is_user or message.hidden or message.speaker.value == "narrator":
                continue
            if message.name in by_name:
                return by_name[message.name]
            break
        return enabled[0]
    if kind is GenerationKind.IMPERSONATE or group.strategy == 1:
        return enabled[0]
    last = messages[-1] if messages else None
    banned = (
        last.name if last is not None and not last.is_user and not group.self_responses else None
    )
    text = last.text if last is not None and not last.hidden else ""
    for word in re.findall(r"\b\w+\b", text.lower(), flags=re.ASCII):
        for member in enabled:
            if member.name == banned:
                continue
            if word in re.findall(r"\b\w+\b", member.name.lower(), flags=re.ASCII):
                return member
    chatty = [c for c in enabled if c.name != banned and c.talkativeness > 0]
    return chatty[0] if chatty else enabled[0]


def _chat_template(path: Path) -> ChatTemplate:
    """A chat template from a `tokenizer_config.json` or a Jinja template file."""
    try:
        text = _read(path, "chat template").decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError("a chat template is UTF-8 text", file=str(path)) from None
    if path.suffix.lower() == ".json" or _is_json_object(text):
        return ChatTemplate.from_tokenizer_config(text, file=str(path))
    if not text.strip():
        raise FormatError("the chat template file is empty", file=str(path))
    return ChatTemplate(text, name=path.stem)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def build_prompt(
    settings_path: Path,
    cards: list[Path],
    chat_path: Path,
    worlds: list[Path],
    api: str,
    kind: GenerationKind,
    group: Path | None = None,
    speaker: str | None = None,
    cache_friendly: bool = False,
    drop_last: int = 0,
    dry_run: bool = False,
    chat_template: Path | None = None,
) -> tuple[Prompt, SillyTavernSettings, list[CharacterInfo], list[str]]:
    """The prompt SillyTavern would build from these files.

    As the request of a real generation: the chat's lorebook timers apply (nothing is
    written back). `dry_run` builds it as SillyTavern's previews do, without timers.
    `chat_template`: a model's Hugging Face chat template (its `tokenizer_config.json`
    or the template file itself) that formats a Text Completion prompt.
    """
    from taverna.formats.st_chat import read_chat

    settings = read_settings(_read(settings_path, "settings"), file=str(settings_path))
    # the model (and tokenizer) of the API asked for, from that API's own model setting
    settings = for_api(settings, Api.parse(api))
    characters = [_card(p) for p in cards]
    if not characters:
        raise FormatError("at least one --card is needed")
    chat = read_chat(_read(chat_path, "chat"), source=str(chat_path))
    echo_warnings(chat.warnings)
    messages = chat_messages(chat.messages)
    if drop_last:
        messages = messages[: len(messages) - drop_last]
    metadata = dict(chat.metadata.fields)
    members: list[str] = []
    found: _Group | None = None
    if group is not None:
        found = _group(group, characters)
        speaker_card = _speaker(found, messages, kind, speaker)
        characters = [speaker_card, *(c for c in found.members if c is not speaker_card)]
        members = [c.name for c in found.members]
        # A group's chat metadata lives in the group file.
        metadata = found.metadata | metadata
    books = dict(_world(p) for p in worlds)
    text_api = Api.parse(api).is_text_completion
    context = assembly_context(
        settings,
        characters,
        metadata,
        messages,
        books,
        api="textgen" if text_api else "openai",
        generation_type=kind,
        group_members=members,
        group_name=found.name if found else "",
        chat_id=chat_path.stem,  # SillyTavern's chat id is its file name
    )
    context = with_pictures(
        context,
        Api.parse(api),
        settings.chat_completion.model,
        [message_image({"extra": m.extra}) for m in chat.messages[: len(messages)]],
        picture_file_reader(chat_path.parent),
    )
    # The shell reads the clock, the engine does not: {{time}} and friends print now.
    context = replace(context, now=datetime.now().astimezone())
    if cache_friendly:
        context = replace(context, layout=CACHE)
    if dry_run:
        context = replace(context, dry_run=True)
    if chat_template is not None:
        if not text_api:
            raise FormatError(
                "a chat template formats Text Completion prompts: use --api textgen "
                "(or llamacpp, koboldcpp, openai-text)",
                file=str(chat_template),
            )
        settings_tc = context.text_completion
        extras = {**settings_tc.extras, "chat_template": _chat_template(chat_template)}
        context = replace(context, text_completion=replace(settings_tc, extras=extras))
    if found is not None:
        context = replace(
            context,
            group_generation_mode=found.mode,
            group_join_prefix=found.prefix,
            group_join_suffix=found.suffix,
            group_muted=tuple(found.muted),
        )
    return assemble(context), settings, characters, members


def request_body(
    prompt: Prompt,
    api: str,
    settings: SillyTavernSettings,
    characters: list[CharacterInfo],
    members: list[str],
    post_processing: str | None = None,
    impersonate: bool = False,
) -> dict[str, Any]:
    """The body the request to `api` would carry (`post_processing`: override the preset's)."""
    from taverna.providers.builders import render_request_body

    cc = settings.chat_completion
    if prompt.kind == "text":
        if "body" in prompt.sampling:
            return dict(prompt.sampling["body"])
        return render_request_body(prompt, api)
    extras = cc.extras
    return render_request_body(
        prompt,
        api,
        model=cc.model,
        user_name=settings.persona.name,
        char_name=characters[0].name,
        group_members=tuple(members),
        use_system_prompt=(
            bool(extras.get("claude_use_sysprompt")) if Api.parse(api) is Api.ANTHROPIC else None
        ),
        stream=bool(cc.sampling.get("stream", True)),
        post_processing=post_processing
        or str(extras.get("custom_prompt_post_processing", "") or "none"),
        extra={"impersonate": impersonate},
    )


def describe_break(found: CacheBreak) -> str:
    """One line saying where the prompt stops sharing the previous turn's prefix."""
    if found.identical:
        return f"identical to the previous turn's prompt ({found.shared} characters)"
    where = (
        f"message {found.message}, character {found.offset}"
        if found.message is not None
        else (f"character {found.offset}")
    )
    cause = (
        f"{found.cause.kind} {found.cause.source}".strip() if found.cause is not None else "the end"
    )
    was = (
        f" (the previous prompt had {found.was.kind} {found.was.source} there)" if found.was else ""
    )
    return (
        f"prefix shared: {found.shared} characters; the cache breaks at {where}: now {cause}{was}"
    )


# The options whose help needs more than a line, named once here so that the command's
# signature reads as the list of what it takes.
ApiOption = Annotated[
    str,
    typer.Option(
        "--api",
        help="openai | textgen | anthropic | google | openai-compatible | mistral | ...",
    ),
]
PostProcessingOption = Annotated[
    str | None,
    typer.Option(
        "--post-processing",
        help="none | merge | semi | strict | single | claude: reshape messages for a custom "
        "OpenAI-compatible endpoint (default: the preset's)",
    ),
]
CacheFriendlyOption = Annotated[
    bool,
    typer.Option(
        "--cache-friendly",
        help="place lorebook text, depth injections and changing macros after the stable prefix",
    ),
]
CacheCheckOption = Annotated[
    bool,
    typer.Option(
        "--cache-check",
        help="compare with the prompt of the chat before its last message: where a prefix cache breaks",
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="build it as SillyTavern's previews do: lorebook sticky, cooldown and delay off",
    ),
]
ChatTemplateOption = Annotated[
    Path | None,
    typer.Option(
        "--chat-template",
        help="a model's Hugging Face chat template (tokenizer_config.json or the Jinja "
        "file) that formats the Text Completion prompt instead of the instruct template",
    ),
]


@app.command()
def prompt(
    settings: Annotated[Path, typer.Option("--settings", help="SillyTavern's settings.json")],
    card: Annotated[
        list[Path], typer.Option("--card", help="a character card (PNG, JSON, CHARX); repeatable")
    ],
    chat: Annotated[Path, typer.Option("--chat", help="a SillyTavern chat (.jsonl)")],
    world: Annotated[
        list[Path] | None,
        typer.Option("--world", help="a lorebook, available under its file name without extension"),
    ] = None,
    group: Annotated[Path | None, typer.Option("--group", help="a SillyTavern group file")] = None,
    speaker: Annotated[
        str | None, typer.Option("--speaker", help="the group member who speaks")
    ] = None,
    api: ApiOption = "openai",
    kind: Annotated[
        GenerationKind, typer.Option("--type", help="the kind of generation")
    ] = GenerationKind.NORMAL,
    as_json: Annotated[bool, typer.Option("--json", help="print the request body as JSON")] = False,
    ledger: Annotated[
        bool, typer.Option("--ledger", help="print the ledger, readable by a person")
    ] = False,
    post_processing: PostProcessingOption = None,
    cache_friendly: CacheFriendlyOption = False,
    cache_check: CacheCheckOption = False,
    dry_run: DryRunOption = False,
    chat_template: ChatTemplateOption = None,
) -> None:
    """Print the exact request body SillyTavern's files would produce this turn (nothing is sent)."""

    def build(drop_last: int) -> tuple[Prompt, SillyTavernSettings, list[CharacterInfo], list[str]]:
        return build_prompt(
            settings,
            card,
            chat,
            world or [],
            api,
            kind,
            group,
            speaker,
            cache_friendly,
            drop_last,
            dry_run,
            chat_template,
        )

    built, loaded, characters, members = build(0)
    if cache_check:
        previous, *_ = build(1)
        typer.echo(describe_break(first_difference(previous, built)))
        return
    if ledger:
        typer.echo(render_ledger(built))
        return
    body = request_body(
        built,
        api,
        loaded,
        characters,
        members,
        post_processing,
        impersonate=kind is GenerationKind.IMPERSONATE,
    )
    indent = None if as_json else 2
    typer.echo(json.dumps(body, ensure_ascii=False, indent=indent))
