"""Which SillyTavern file a blob of bytes is, and reading it as that kind.

`detect` looks at the bytes first (PNG and zip signatures, then the keys of the JSON
object) and at the file name only where the content leaves a choice. `read_any` reads
the file with the matching reader; the CLI's `inspect` and the import service use it.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import PurePath
from typing import Any, NamedTuple

from taverna.errors import FormatError, FormatWarning
from taverna.formats import json_text
from taverna.formats.png_chunks import PNG_SIGNATURE as PNG_SIGNATURE
from taverna.formats.settings_file import is_settings

# The readers and models are imported by the kind that needs them: a command that reads
# one card does not load every preset model.
ZIP_SIGNATURE = b"PK\x03\x04"


class FileKind(StrEnum):
    """The kinds of file taverna reads."""

    CARD_PNG = "card-png"
    CARD_JSON = "card-json"
    CARD_CHARX = "card-charx"
    WORLD_INFO = "world-info"
    LOREBOOK_V3 = "lorebook-v3"
    NOVELAI_LOREBOOK = "novelai-lorebook"
    AGNAI_MEMORY_BOOK = "agnai-memory-book"
    RISU_LOREBOOK = "risu-lorebook"
    CHARACTER_BOOK = "character-book"
    CHAT = "chat"
    GROUP = "group"
    CHAT_COMPLETION_PRESET = "chat-completion-preset"
    TEXT_COMPLETION_PRESET = "text-completion-preset"
    INSTRUCT_TEMPLATE = "instruct-template"
    CONTEXT_TEMPLATE = "context-template"
    SYSTEM_PROMPT = "system-prompt"
    REGEX_SCRIPT = "regex-script"
    QUICK_REPLY_SET = "quick-reply-set"
    REASONING_TEMPLATE = "reasoning-template"
    PERSONAS = "personas"
    SETTINGS = "settings"
    PROMPT_EXPORT = "prompt-manager-export"


LOREBOOK_KINDS = frozenset(
    {
        FileKind.WORLD_INFO,
        FileKind.LOREBOOK_V3,
        FileKind.NOVELAI_LOREBOOK,
        FileKind.AGNAI_MEMORY_BOOK,
        FileKind.RISU_LOREBOOK,
        FileKind.CHARACTER_BOOK,
    }
)
"""The kinds read as a lorebook: a world file, or a file SillyTavern converts into one."""

# The kinds SillyTavern converts into a world file, by their converter (foreign_lorebooks).
_CONVERTERS = {
    FileKind.NOVELAI_LOREBOOK: "novelai_to_lorebook",
    FileKind.AGNAI_MEMORY_BOOK: "agnai_to_lorebook",
    FileKind.RISU_LOREBOOK: "risu_to_lorebook",
    FileKind.CHARACTER_BOOK: "character_book_to_lorebook",
}


class DetectedFile(NamedTuple):
    """A file read as its kind: `value` is the model the kind's reader returns.

    `warnings` says which values were read otherwise than written (formats/coercion.py).
    `layout`: how a JSON file was laid out (indentation, line breaks, final newline), so
    it is written back the same way; None writes the kind's own layout.
    """

    kind: FileKind
    value: Any
    file: str | None = None
    warnings: tuple[FormatWarning, ...] = ()
    layout: json_text.TextLayout | None = None


_TEXTGEN_KEYS = {"temp", "rep_pen", "rep_pen_range", "top_k", "typical_p", "tfs", "sampler_order"}
_GROUP_KEYS = frozenset(
    {"chat_metadata", "disabled_members", "activation_strategy", "generation_mode"}
)
_CC_KEYS = {"prompts", "prompt_order", "chat_completion_source", "openai_max_context"}


def kind_of_json(doc: Any, file_name: str = "") -> FileKind | None:
    """The kind of a parsed JSON document, or None when it is none of ours."""
    if not isinstance(doc, dict):
        return None
    spec = doc.get("spec")
    if spec == "lorebook_v3":
        return FileKind.LOREBOOK_V3
    if "spec" in doc or "char_name" in doc:
        return FileKind.CARD_JSON
    if is_settings(doc):
        return FileKind.SETTINGS
    # SillyTavern's world-info import converts these three (formats-world-info.md §9)
    if "lorebookVersion" in doc:
        return FileKind.NOVELAI_LOREBOOK
    if doc.get("kind") == "memory":
        return FileKind.AGNAI_MEMORY_BOOK
    if doc.get("type") == "risu":
        return FileKind.RISU_LOREBOOK
    entries = doc.get("entries")
    if isinstance(entries, dict) or entries == []:
        return FileKind.WORLD_INFO
    if isinstance(entries, list):  # a card's `character_book` saved on its own
        return FileKind.CHARACTER_BOOK
    if "scriptName" in doc and "findRegex" in doc:
        return FileKind.REGEX_SCRIPT
    if "qrList" in doc or "quickReplySlots" in doc:
        return FileKind.QUICK_REPLY_SET
    if "personas" in doc and "persona_descriptions" in doc:
        return FileKind.PERSONAS
    data = doc.get("data")
    if isinstance(data, dict) and "prompts" in data and "version" in doc and "type" in doc:
        return FileKind.PROMPT_EXPORT
    if isinstance(doc.get("members"), list) and _GROUP_KEYS & doc.keys():
        return FileKind.GROUP
    if _CC_KEYS & doc.keys():
        return FileKind.CHAT_COMPLETION_PRESET
    if "input_sequence" in doc or "output_sequence" in doc:
        return FileKind.INSTRUCT_TEMPLATE
    if "story_string" in doc or isinstance(doc.get("storyString"), str):  # 1.9: storyString
        return FileKind.CONTEXT_TEMPLATE
    if all(isinstance(doc.get(key), str) for key in ("prefix", "suffix", "separator")):
        return FileKind.REASONING_TEMPLATE
    if len(_TEXTGEN_KEYS & doc.keys()) >= 2:
        return FileKind.TEXT_COMPLETION_PRESET
    if (
        "content" in doc
        and isinstance(doc.get("content"), str)
        and doc.keys()
        <= {
            "name",
            "content",
            "post_history",
        }
    ):
        return FileKind.SYSTEM_PROMPT
    if "name" in doc and ("first_mes" in doc or "description" in doc):
        return FileKind.CARD_JSON
    return None


def _looks_like_jsonl(data: bytes) -> bool:
    first, _, rest = data.lstrip(b"\xef\xbb\xbf \t\r\n").partition(b"\n")
    return first.rstrip().endswith(b"}") and rest.lstrip().startswith(b"{")


def detect(data: bytes, file_name: str = "") -> FileKind:
    """The kind of a file from its bytes and name; FormatError if it is none of ours."""
    suffix = PurePath(file_name).suffix.lower()
    if data.startswith(PNG_SIGNATURE):
        from taverna.formats.png_chunks import lorebook_chunk

        if lorebook_chunk(data, file=file_name or None) is not None:
            return FileKind.NOVELAI_LOREBOOK
        return FileKind.CARD_PNG
    if data.startswith(ZIP_SIGNATURE):
        return FileKind.CARD_CHARX
    if suffix == ".jsonl" or (suffix != ".json" and _looks_like_jsonl(data)):
        return FileKind.CHAT
    doc = json_text.loads(data, file=file_name or None)
    kind = kind_of_json(doc, file_name)
    if kind is None:
        raise FormatError(
            "not a SillyTavern file taverna knows",
            file=file_name or None,
            code="not_sillytavern_file_taverna_knows",
        )
    return kind


def read_any(data: bytes, file_name: str = "") -> DetectedFile:
    """Detect the kind of a file and read it with that kind's reader."""
    file = file_name or None
    kind = detect(data, file_name)
    stem = PurePath(file_name).stem or "Imported"
    found: list[FormatWarning] = []
    layout = None
    value: Any
    if kind is FileKind.CARD_PNG:
        from taverna.formats.png_card import read_png_card

        value = read_png_card(data, file=file, warnings=found)
    elif kind is FileKind.CARD_CHARX:
        from taverna.formats.charx import read_charx

        value = read_charx(data, file=file, warnings=found)
    elif kind is FileKind.NOVELAI_LOREBOOK and data.startswith(PNG_SIGNATURE):
        value = _read_novelai_png(data, stem, file, found)
    elif kind is FileKind.CHAT:
        from taverna.formats.st_chat import read_chat

        value = read_chat(data, source=file_name or "<chat>", warnings=found)
    else:
        doc = json_text.loads(data, file=file)
        value = _read_json_kind(kind, doc, stem, file, found)
        layout = json_text.layout_of(data)
    return DetectedFile(kind, value, file, tuple(found), layout)


def _read_novelai_png(data: bytes, stem: str, file: str | None, found: list[FormatWarning]) -> Any:
    from taverna.formats.foreign_lorebooks import novelai_to_lorebook
    from taverna.formats.png_chunks import LOREBOOK_KEYWORD, decode_chunk, lorebook_chunk

    payload = lorebook_chunk(data, file=file)
    assert payload is not None  # detected by it
    doc = decode_chunk(payload, file=file, field=LOREBOOK_KEYWORD)
    if not isinstance(doc, dict) or "lorebookVersion" not in doc:
        raise FormatError(
            "the PNG's lorebook chunk holds no NovelAI lorebook (no `lorebookVersion`)",
            file=file,
            field=LOREBOOK_KEYWORD,
            code="png_s_lorebook_chunk_holds",
        )
    prefix = f"{LOREBOOK_KEYWORD}:"
    return novelai_to_lorebook(doc, name=stem, file=file, warnings=found, prefix=prefix)


def _read_json_kind(
    kind: FileKind, doc: Any, stem: str, file: str | None, found: list[FormatWarning]
) -> Any:
    # the validation library is loaded by the kinds validated with a model: a world file,
    # a group or a settings file is read without it
    if kind in _CONVERTERS:
        from taverna.formats import foreign_lorebooks

        convert = getattr(foreign_lorebooks, _CONVERTERS[kind])
        return convert(doc, name=stem, file=file, warnings=found)
    if kind is FileKind.CARD_JSON:
        from taverna.formats.card_json import card_from_json
        from taverna.model.character import CardFile

        return CardFile(character=card_from_json(doc, file=file, warnings=found))
    if kind is FileKind.WORLD_INFO:
        from taverna.formats.world_info import world_info_from_json

        return world_info_from_json(doc, name=stem, file=file, warnings=found)
    if kind is FileKind.LOREBOOK_V3:
        from taverna.formats.character_book import book_to_lorebook
        from taverna.formats.validation import validate
        from taverna.model.character import CharacterBook

        book = validate(CharacterBook, doc.get("data"), file=file, prefix="data", warnings=found)
        return book_to_lorebook(book, card_name=stem, file=file, warnings=found, where="data")
    if kind is FileKind.QUICK_REPLY_SET:
        from taverna.formats.validation import validate
        from taverna.model.quick_reply import LegacyQuickReplySet, QuickReplySet

        if doc.get("version") == 2 or "qrList" in doc:
            return validate(QuickReplySet, doc, file=file, warnings=found)
        return validate(LegacyQuickReplySet, doc, file=file, warnings=found)
    if kind is FileKind.PERSONAS:
        from taverna.formats.validation import validate
        from taverna.model.persona import PersonaSet

        # a persona backup, every key kept
        return validate(PersonaSet, doc, file=file, warnings=found)
    if kind in (FileKind.GROUP, FileKind.SETTINGS):
        return doc  # kept whole; settings_file.py finds a settings file's parts
    from taverna.formats.validation import validate
    from taverna.model.presets import (
        ChatCompletionPreset,
        ContextTemplate,
        InstructTemplate,
        PromptManagerExport,
        ReasoningTemplate,
        SystemPromptPreset,
        TextCompletionPreset,
    )
    from taverna.model.regex_script import RegexScript

    models: dict[FileKind, type[Any]] = {
        FileKind.CHAT_COMPLETION_PRESET: ChatCompletionPreset,
        FileKind.TEXT_COMPLETION_PRESET: TextCompletionPreset,
        FileKind.INSTRUCT_TEMPLATE: InstructTemplate,
        FileKind.CONTEXT_TEMPLATE: ContextTemplate,
        FileKind.SYSTEM_PROMPT: SystemPromptPreset,
        FileKind.REASONING_TEMPLATE: ReasoningTemplate,
        FileKind.REGEX_SCRIPT: RegexScript,
        FileKind.PROMPT_EXPORT: PromptManagerExport,
    }
    return validate(models[kind], doc, file=file, warnings=found)


def write_document(document: DetectedFile) -> bytes:
    """A document written back as the kind of file it was read from, in its layout.

    A stand-alone V3 lorebook and the lorebooks SillyTavern converts on import are read
    into a lorebook; they are written as a world file.
    """
    value = document.value
    kind = document.kind
    if kind is FileKind.CARD_PNG:
        from taverna.formats.png_card import write_png_card

        return write_png_card(value.character, value.avatar, file=document.file)
    if kind is FileKind.CARD_CHARX:
        from taverna.formats.charx import write_charx

        return write_charx(value)
    if kind is FileKind.CHAT:
        from taverna.formats.st_chat import write_chat

        return write_chat(value).encode("utf-8")
    layout = document.layout or _DEFAULT_LAYOUTS.get(kind, json_text.SILLYTAVERN_LAYOUT)
    return json_text.dump_as(_json_value(kind, value), layout)


# formats-presets.md §6: SillyTavern writes persona backups with 2-space indentation.
_DEFAULT_LAYOUTS = {FileKind.PERSONAS: json_text.TextLayout(indent="  ")}


def _json_value(kind: FileKind, value: Any) -> Any:
    """The JSON value a document of `kind` is written as."""
    if kind is FileKind.CARD_JSON:
        from taverna.formats.card_json import card_to_json

        return card_to_json(value.character)
    if kind in LOREBOOK_KINDS:
        from taverna.formats.world_info import world_info_to_json

        return world_info_to_json(value)
    from taverna.model.document import STDocument

    return value.to_json() if isinstance(value, STDocument) else value
