"""`taverna inspect` and `taverna convert`: look into SillyTavern files and rewrite them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Annotated, Any

import typer
from PIL import Image

from taverna.cli.main import app
from taverna.cli.notices import echo_warnings, printable
from taverna.errors import FormatError
from taverna.formats import json_text
from taverna.formats.card_json import card_to_json, with_spec, write_card_json
from taverna.formats.character_book import book_to_lorebook
from taverna.formats.charx import write_charx
from taverna.formats.detect import DetectedFile, FileKind, read_any
from taverna.formats.png_card import write_png_card
from taverna.formats.world_info import dump_world_info, world_info_to_json
from taverna.model.character import SPEC_V2, SPEC_V3, CardFile
from taverna.model.document import STDocument
from taverna.model.lorebook import Lorebook
from taverna.model.persona import PersonaSet
from taverna.model.presets import (
    ChatCompletionPreset,
    ContextTemplate,
    InstructTemplate,
    SystemPromptPreset,
)
from taverna.model.quick_reply import LegacyQuickReplySet, QuickReplySet
from taverna.model.regex_script import RegexScript

MAX_INPUT_BYTES = 512 * 1024 * 1024

CARD_KINDS = (FileKind.CARD_PNG, FileKind.CARD_JSON, FileKind.CARD_CHARX)


def read_file(path: Path) -> DetectedFile:
    """A file from disk, read as whatever kind it is."""
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise FormatError(f"file is {size:,} bytes, more than {MAX_INPUT_BYTES:,}", file=name)
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read the file: {exc.strerror or exc}", file=name) from None
    return read_any(data, name)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _filled(doc: dict[str, Any]) -> list[str]:
    return [k for k, v in doc.items() if v not in ("", None, [], {}, False)]


def _picture(image: bytes) -> str:
    """Dimensions and size of a picture; only the header is read, nothing is decoded."""
    try:
        with Image.open(io.BytesIO(image)) as picture:
            width, height = picture.size
            return f"{width}x{height} {picture.format}, {_size(len(image))}"
    except (OSError, ValueError, SyntaxError):
        return f"unreadable picture, {_size(len(image))}"


def _card_summary(card: CardFile) -> list[tuple[str, str]]:
    ch = card.character
    data = ch.data_json()
    text_fields = [
        k for k, v in data.items() if isinstance(v, str) and v and k not in ("name", "nickname")
    ]
    rows = [
        ("name", ch.name),
        ("spec", ch.spec or "V1 (no spec)"),
        ("fields filled", ", ".join(text_fields) or "(none)"),
        ("greetings", f"{len(ch.greetings)} ({len(ch.alternate_greetings)} alternate)"),
    ]
    if ch.group_only_greetings:
        rows.append(("group-only greetings", str(len(ch.group_only_greetings))))
    text_size = sum(len(v) for v in data.values() if isinstance(v, str))
    rows.append(("text", f"{text_size:,} characters"))
    if ch.tags:
        rows.append(("tags", ", ".join(ch.tags)))
    if ch.creator:
        rows.append(("creator", ch.creator))
    if ch.depth_prompt.prompt:
        dp = ch.depth_prompt
        rows.append(
            ("depth prompt", f"{len(dp.prompt)} characters at depth {dp.depth} as {dp.role}")
        )
    if ch.linked_world:
        rows.append(("linked lorebook", ch.linked_world))
    book = ch.character_book
    if book is not None:
        rows.append(
            ("embedded lorebook", f"{book.name or '(unnamed)'}: {len(book.entries)} entries")
        )
    if ch.regex_scripts:
        rows.append(("regex scripts", str(len(ch.regex_scripts))))
    extra = sorted(set(ch.extensions.extras))
    if extra:
        rows.append(("other extensions", ", ".join(extra)))
    if card.avatar is not None:
        rows.append(("picture", _picture(card.avatar)))
    if card.assets:
        rows.append(
            ("assets", f"{len(card.assets)} files, {_size(sum(map(len, card.assets.values())))}")
        )
    return rows


def _lorebook_summary(book: Lorebook) -> list[tuple[str, str]]:
    enabled = [e for e in book.entries if not e.disable]
    constant = [e for e in enabled if e.constant]
    at_depth = [e for e in enabled if e.position is not None and int(e.position) == 4]
    content = sum(len(e.content) for e in book.entries)
    return [
        ("name", book.name),
        ("entries", f"{len(book.entries)} ({len(enabled)} enabled, {len(constant)} constant, "
                    f"{len(at_depth)} at depth)"),
        ("keys", str(sum(len(e.key) for e in book.entries))),
        ("content", f"{content:,} characters"),
    ]  # fmt: skip


def _summary(document: DetectedFile, size: int) -> list[tuple[str, str]]:
    value = document.value
    rows: list[tuple[str, str]] = [("kind", document.kind.value), ("size", _size(size))]
    if isinstance(value, CardFile):
        return rows + _card_summary(value)
    if isinstance(value, Lorebook):
        return rows + _lorebook_summary(value)
    if document.kind is FileKind.CHAT:
        messages = value.messages
        names = sorted({str(m.fields.get("name")) for m in messages if m.fields.get("name")})
        swipes = sum(len(m.fields.get("swipes") or []) for m in messages)
        return [
            *rows,
            ("messages", str(len(messages))),
            ("speakers", ", ".join(names)),
            ("swipes", str(swipes)),
            ("group chat", "yes" if value.is_group else "no"),
        ]
    if isinstance(value, QuickReplySet | LegacyQuickReplySet):
        if isinstance(value, LegacyQuickReplySet):
            rows.append(("format", "version 1 (legacy)"))
            value = value.migrated()
        return [*rows, ("name", value.name), ("quick replies", str(len(value.qr_list)))]
    if isinstance(value, STDocument):
        doc = value.to_json()
        if "name" in doc:
            rows.append(("name", str(doc["name"])))
        if "scriptName" in doc:
            rows.append(("name", str(doc["scriptName"])))
        rows.extend(_details(value))
        filled = _filled(doc)
        rows.append(("fields filled", f"{len(filled)} of {len(doc)}"))
        return rows
    if isinstance(value, dict):
        if "name" in value:
            rows.append(("name", str(value["name"])))
        members = value.get("members")
        if isinstance(members, list):
            rows.append(("members", ", ".join(map(str, members))))
    return rows


def _details(value: STDocument) -> list[tuple[str, str]]:
    """The few fields that say what a preset, template or script does."""
    if isinstance(value, ChatCompletionPreset):
        order = value.order_for()
        enabled = sum(1 for item in order if item.enabled)
        model = getattr(value, f"{value.chat_completion_source}_model", None) or value.openai_model
        return [
            ("source", f"{value.chat_completion_source}, model {model or '(none)'}"),
            ("sampling", f"temperature {value.temperature}, top_p {value.top_p}"),
            ("context", f"{value.openai_max_context} tokens, reply {value.openai_max_tokens}"),
            (
                "prompts",
                f"{len(value.prompts)} defined, {enabled} of {len(order)} enabled in order",
            ),
        ]
    if isinstance(value, InstructTemplate):
        return [
            ("sequences", f"user {value.input_sequence!r}, assistant {value.output_sequence!r}"),
            ("names", value.effective_names_behavior.value),
            ("wrap", "yes" if value.wrap else "no"),
        ]
    if isinstance(value, ContextTemplate):
        return [("story string", f"{len(value.story_string):,} characters")]
    if isinstance(value, SystemPromptPreset):
        return [("content", f"{len(value.content):,} characters")]
    if isinstance(value, RegexScript):
        flags = [n for n, on in (("prompt only", value.prompt_only),
                                 ("display only", value.markdown_only),
                                 ("disabled", value.disabled)) if on]  # fmt: skip
        return [
            ("find", value.find_regex),
            ("placement", ", ".join(map(str, value.placement)) or "(none)"),
            ("flags", ", ".join(flags) or "(none)"),
        ]
    if isinstance(value, PersonaSet):
        return [
            ("personas", ", ".join(f"{p.name} ({p.avatar})" for p in value.items()) or "(none)")
        ]
    return []


def as_json(document: DetectedFile) -> Any:
    """The document as the project's model serializes it."""
    value = document.value
    if isinstance(value, CardFile):
        return {
            "character": value.character.model_dump(mode="json", by_alias=True, exclude_unset=True),
            "card": card_to_json(value.character),
            "avatar_bytes": None if value.avatar is None else len(value.avatar),
            "assets": {name: len(content) for name, content in value.assets.items()},
        }
    if isinstance(value, Lorebook):
        return {"name": value.name, **world_info_to_json(value)}
    if isinstance(value, STDocument):
        return value.to_json()
    if document.kind is FileKind.CHAT:
        header = value.header.fields if value.header is not None else None
        return {"header": header, "messages": [m.fields for m in value.messages]}
    return value


@app.command()
def inspect(
    file: Annotated[
        Path, typer.Argument(help="A SillyTavern file: card, lorebook, preset, chat, ...")
    ],
    as_json_flag: Annotated[
        bool, typer.Option("--json", help="Print the parsed document as JSON.")
    ] = False,
) -> None:
    """Show what a SillyTavern file holds (the kind is detected from its content).

    Values SillyTavern reads loosely (a number written as text, a null list) are read the
    same way; each is named on stderr as a warning.
    """
    document = read_file(file)
    if as_json_flag:
        typer.echo(json_text.dumps(as_json(document), indent=2))
        echo_warnings(document.warnings)
        return
    rows = _summary(document, file.stat().st_size)
    if document.warnings:
        rows.append(("warnings", f"{len(document.warnings)} values read otherwise than written"))
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        typer.echo(f"{label.rjust(width)}  {printable(text)}")
    echo_warnings(document.warnings)


def _card(document: DetectedFile) -> CardFile:
    if isinstance(document.value, CardFile):
        return document.value
    raise FormatError(
        f"expected a character card, found a {document.kind.value} file", file=document.file
    )


@app.command()
def convert(
    source: Annotated[Path, typer.Argument(help="The file to convert.")],
    target: Annotated[
        Path,
        typer.Argument(
            help="Where to write; its extension picks the format (.png, .json, .charx)."
        ),
    ],
    spec: Annotated[str | None, typer.Option(help="Label a card as `v2` or `v3`.")] = None,
    book: Annotated[
        bool, typer.Option("--book", help="Write a card's embedded lorebook as a world info file.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite TARGET if it exists.")] = False,
) -> None:
    """Write a file as another kind: PNG card <-> JSON card <-> CHARX, V2 -> V3, card book -> world file."""
    if target.exists() and not force:
        raise FormatError("already exists (use --force to overwrite)", file=str(target))
    document = read_file(source)
    suffix = target.suffix.lower()
    out: bytes
    if book:
        card = _card(document)
        character_book = card.character.character_book
        if character_book is None:
            raise FormatError(
                "the card has no embedded lorebook", file=document.file, field="data.character_book"
            )
        lorebook = book_to_lorebook(
            character_book, card_name=card.character.name, file=document.file
        )
        out = dump_world_info(lorebook).encode("utf-8")
    elif document.kind in CARD_KINDS:
        card = _card(document)
        character = card.character
        if spec is not None:
            labels = {"v2": SPEC_V2, "v3": SPEC_V3}
            if spec.lower() not in labels:
                raise FormatError("--spec must be v2 or v3", field="spec")
            character = with_spec(character, labels[spec.lower()])
        out = _write_card(CardFile(character, card.avatar, card.assets), suffix, target)
    elif isinstance(document.value, Lorebook) and suffix == ".json":
        out = dump_world_info(document.value).encode("utf-8")
    elif isinstance(document.value, STDocument) and suffix == ".json":
        out = json_text.dumps(document.value.to_json(), indent=4).encode("utf-8")
    else:
        raise FormatError(
            f"cannot convert a {document.kind.value} file to {suffix or 'that'}", file=str(target)
        )
    try:
        target.write_bytes(out)
    except OSError as exc:
        raise FormatError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None
    typer.echo(f"wrote {target} ({_size(len(out))})")
    echo_warnings(document.warnings)


def _write_card(card: CardFile, suffix: str, target: Path) -> bytes:
    if suffix == ".png":
        return write_png_card(card.character, card.avatar, file=str(target))
    if suffix == ".json":
        return write_card_json(card.character)
    if suffix == ".charx":
        return write_charx(card)
    raise FormatError("a card can be written as .png, .json or .charx", file=str(target))
