"""What `taverna inspect` says about a file: a few rows per kind, or the parsed document.

Each kind's models are imported when a file of that kind is shown; a card is shown from
its JSON (formats/quick_read.py's CardView), however it was read.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from taverna.formats.card_shapes import EXTENSIONS, MODELS
from taverna.formats.detect import LOREBOOK_KINDS, DetectedFile, FileKind
from taverna.formats.quick_read import CardView, view_of

if TYPE_CHECKING:
    from taverna.model.document import STDocument
    from taverna.model.lorebook import Lorebook

Rows = list[tuple[str, str]]

CARD_KINDS = (FileKind.CARD_PNG, FileKind.CARD_JSON, FileKind.CARD_CHARX)


def size_text(n: float) -> str:
    """A byte count for a person: `512 B`, `3.2 KiB`, `1.5 MiB`."""
    for unit in ("B", "KiB"):
        if n < 1024:
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} MiB"


def _filled(doc: dict[str, Any]) -> list[str]:
    return [k for k, v in doc.items() if v not in ("", None, [], {}, False)]


def _picture(image: bytes) -> str:
    """Dimensions and size of a picture; only the header is read, nothing is decoded.

    A plain PNG's header is read here; any other picture is opened with Pillow.
    """
    from taverna.formats.png_chunks import picture_size

    size = picture_size(image)
    if size is not None:
        return f"{size[0]}x{size[1]} PNG, {size_text(len(image))}"
    from PIL import Image

    try:
        with Image.open(io.BytesIO(image)) as picture:
            width, height = picture.size
            return f"{width}x{height} {picture.format}, {size_text(len(image))}"
    except (OSError, ValueError, SyntaxError):
        return f"unreadable picture, {size_text(len(image))}"


def _card_summary(card: CardView) -> Rows:
    data = card.data
    extensions = data.get("extensions", {})
    text_fields = [
        k for k, v in data.items() if isinstance(v, str) and v and k not in ("name", "nickname")
    ]
    first, alternate = data.get("first_mes", ""), data.get("alternate_greetings", [])
    spec = card.envelope.get("spec")
    rows = [
        ("name", data.get("name", "")),
        ("spec", spec if isinstance(spec, str) and spec else "V1 (no spec)"),
        ("fields filled", ", ".join(text_fields) or "(none)"),
        ("greetings", f"{len(alternate) + (1 if first else 0)} ({len(alternate)} alternate)"),
    ]
    if data.get("group_only_greetings"):
        rows.append(("group-only greetings", str(len(data["group_only_greetings"]))))
    text_size = sum(len(v) for v in data.values() if isinstance(v, str))
    rows.append(("text", f"{text_size:,} characters"))
    if data.get("tags"):
        rows.append(("tags", ", ".join(data["tags"])))
    if data.get("creator"):
        rows.append(("creator", data["creator"]))
    note = extensions.get("depth_prompt") or {}
    if note.get("prompt"):
        depth, role = note.get("depth", 4), note.get("role", "system")
        rows.append(
            ("depth prompt", f"{len(note['prompt'])} characters at depth {depth} as {role}")
        )
    if extensions.get("world"):
        rows.append(("linked lorebook", extensions["world"]))
    book = data.get("character_book")
    if book is not None:
        entries = book.get("entries", [])
        rows.append(
            ("embedded lorebook", f"{book.get('name') or '(unnamed)'}: {len(entries)} entries")
        )
    if extensions.get("regex_scripts"):
        rows.append(("regex scripts", str(len(extensions["regex_scripts"]))))
    known = {field.key for field in MODELS[EXTENSIONS].fields}
    extra = sorted(set(extensions) - known)
    if extra:
        rows.append(("other extensions", ", ".join(extra)))
    if card.avatar is not None:
        rows.append(("picture", _picture(card.avatar)))
    if card.assets:
        total = size_text(sum(map(len, card.assets.values())))
        rows.append(("assets", f"{len(card.assets)} files, {total}"))
    return rows


def _lorebook_summary(book: Lorebook) -> Rows:
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


def _settings_summary(doc: dict[str, Any]) -> Rows:
    """What a `settings.json` sets: the API and model, templates, personas, lorebooks."""
    from taverna.formats import settings_file as part
    from taverna.formats.chat_sources import model_of

    power = part.power_user_part(doc)
    oai = part.chat_completion_part(doc)
    source = str(oai.get("chat_completion_source") or "openai")
    rows = [("format", part.era(doc)), ("main API", str(doc.get("main_api") or "(none)"))]
    rows.append(("chat completion", f"{source}, model {model_of(oai) or '(none)'}"))
    for label, key, name in (
        ("instruct template", "instruct", "preset"),
        ("context template", "context", "preset"),
        ("system prompt", "sysprompt", "name"),
        ("reasoning template", "reasoning", "name"),
    ):
        template = power.get(key)
        if isinstance(template, dict):
            on = "" if template.get("enabled", True) is not False else " (off)"
            rows.append((label, f"{template.get(name) or '(unnamed)'}{on}"))
    personas = power.get("personas")
    if isinstance(personas, dict) and personas:
        rows.append(("personas", ", ".join(f"{n} ({a})" for a, n in personas.items())))
    user = doc.get("username")
    if isinstance(user, str):
        rows.append(("persona in use", f"{user} ({doc.get('user_avatar') or 'no avatar'})"))
    selection = part.world_info_part(doc).get("world_info")
    chosen = selection.get("globalSelect") if isinstance(selection, dict) else None
    if isinstance(chosen, list):
        rows.append(("global lorebooks", ", ".join(map(str, chosen)) or "(none)"))
    scripts = part.regex_scripts_part(doc)
    if scripts:
        rows.append(("regex scripts", str(len(scripts))))
    variables = part.global_variables(doc)
    if variables:
        rows.append(("global variables", ", ".join(sorted(variables))))
    return rows


def _chat_summary(value: Any) -> Rows:
    messages = value.messages
    names = sorted({str(m.fields.get("name")) for m in messages if m.fields.get("name")})
    swipes = sum(len(m.fields.get("swipes") or []) for m in messages)
    return [
        ("messages", str(len(messages))),
        ("speakers", ", ".join(names)),
        ("swipes", str(swipes)),
        ("group chat", "yes" if value.is_group else "no"),
    ]


def _view(value: Any) -> CardView:
    """A card read by either reader (formats/quick_read.py) as a view."""
    return value if isinstance(value, CardView) else view_of(value)


def summary(document: DetectedFile, size: int) -> Rows:
    """The rows `taverna inspect` prints for a file of `size` bytes."""
    value = document.value
    kind = document.kind
    rows: Rows = [("kind", kind.value), ("size", size_text(size))]
    if kind in CARD_KINDS:
        return rows + _card_summary(_view(value))
    if kind in LOREBOOK_KINDS:
        return rows + _lorebook_summary(value)
    if kind is FileKind.CHAT:
        return rows + _chat_summary(value)
    if kind is FileKind.QUICK_REPLY_SET:
        from taverna.model.quick_reply import LegacyQuickReplySet

        if isinstance(value, LegacyQuickReplySet):
            rows.append(("format", "version 1 (legacy)"))
            value = value.migrated()
        return [*rows, ("name", value.name), ("quick replies", str(len(value.qr_list)))]
    if kind is FileKind.SETTINGS:
        return rows + _settings_summary(value)
    if kind is FileKind.GROUP:
        if "name" in value:
            rows.append(("name", str(value["name"])))
        members = value.get("members")
        if isinstance(members, list):
            rows.append(("members", ", ".join(map(str, members))))
        return rows
    doc = value.to_json()
    if "name" in doc:
        rows.append(("name", str(doc["name"])))
    if "scriptName" in doc:
        rows.append(("name", str(doc["scriptName"])))
    rows.extend(_details(kind, value))
    filled = _filled(doc)
    rows.append(("fields filled", f"{len(filled)} of {len(doc)}"))
    return rows


def _details(kind: FileKind, value: Any) -> Rows:
    """The few fields that say what a preset, template or script does."""
    if kind is FileKind.CHAT_COMPLETION_PRESET:
        from taverna.formats.chat_sources import model_of

        order = value.order_for()
        enabled = sum(1 for item in order if item.enabled)
        model = model_of(value.to_json())
        return [
            ("source", f"{value.chat_completion_source}, model {model or '(none)'}"),
            ("sampling", f"temperature {value.temperature}, top_p {value.top_p}"),
            ("context", f"{value.openai_max_context} tokens, reply {value.openai_max_tokens}"),
            (
                "prompts",
                f"{len(value.prompts)} defined, {enabled} of {len(order)} enabled in order",
            ),
        ]
    if kind is FileKind.INSTRUCT_TEMPLATE:
        return [
            ("sequences", f"user {value.input_sequence!r}, assistant {value.output_sequence!r}"),
            ("names", value.effective_names_behavior.value),
            ("wrap", "yes" if value.wrap else "no"),
        ]
    if kind is FileKind.CONTEXT_TEMPLATE:
        if value.legacy:
            story = f"{len(value.effective_story_string):,} characters (SillyTavern 1.9's form)"
            return [("story string", story)]
        return [("story string", f"{len(value.story_string):,} characters")]
    if kind is FileKind.REASONING_TEMPLATE:
        return [
            ("marks", f"prefix {value.prefix!r}, suffix {value.suffix!r}"),
            ("separator", repr(value.separator)),
        ]
    if kind is FileKind.SYSTEM_PROMPT:
        return [("content", f"{len(value.content):,} characters")]
    if kind is FileKind.REGEX_SCRIPT:
        flags = [n for n, on in (("prompt only", value.prompt_only),
                                 ("display only", value.markdown_only),
                                 ("disabled", value.disabled)) if on]  # fmt: skip
        return [
            ("find", value.find_regex),
            ("placement", ", ".join(map(str, value.placement)) or "(none)"),
            ("flags", ", ".join(flags) or "(none)"),
        ]
    if kind is FileKind.PERSONAS:
        return [
            ("personas", ", ".join(f"{p.name} ({p.avatar})" for p in value.items()) or "(none)")
        ]
    return []


def as_json(document: DetectedFile) -> Any:
    """The document as the project's model serializes it."""
    value = document.value
    kind = document.kind
    if kind in CARD_KINDS:
        card = _view(value)
        return {
            "character": card.dump,
            "card": card.card,
            "avatar_bytes": None if card.avatar is None else len(card.avatar),
            "assets": {name: len(content) for name, content in card.assets.items()},
        }
    if kind in LOREBOOK_KINDS:
        from taverna.formats.world_info import world_info_to_json

        return {"name": value.name, **world_info_to_json(value)}
    if kind is FileKind.CHAT:
        header = value.header.fields if value.header is not None else None
        return {"header": header, "messages": [m.fields for m in value.messages]}
    if kind in (FileKind.GROUP, FileKind.SETTINGS):
        return value
    document_value: STDocument = value
    return document_value.to_json()
