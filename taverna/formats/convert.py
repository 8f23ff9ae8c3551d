"""One SillyTavern file written as another: PNG card ⇄ JSON card ⇄ CHARX, V1 → V2 → V3,
a card's embedded lorebook as a world file, and any file back as its own kind."""

from __future__ import annotations

from dataclasses import dataclass

from taverna.errors import FormatError
from taverna.formats.detect import DetectedFile, FileKind, write_document

CARD_KINDS = (FileKind.CARD_PNG, FileKind.CARD_JSON, FileKind.CARD_CHARX)
CARD_SUFFIXES = {
    ".png": FileKind.CARD_PNG,
    ".json": FileKind.CARD_JSON,
    ".charx": FileKind.CARD_CHARX,
}
SPECS = ("v2", "v3")


@dataclass(frozen=True)
class Converted:
    """A converted file's bytes, with what changed beyond the format (for the person)."""

    data: bytes
    notes: tuple[str, ...] = ()


def convert(
    document: DetectedFile,
    suffix: str,
    *,
    spec: str | None = None,
    book: bool = False,
    target: str | None = None,
) -> Converted:
    """`document` written as the kind of file `suffix` names.

    `spec` (`v2`, `v3`) relabels a card, upgrading a V1 card; `book` writes a card's
    embedded lorebook as a world file. A file written as its own kind comes back as it was.
    """
    suffix = suffix.lower()
    if book:
        return Converted(_book_of(document))
    if document.kind in CARD_KINDS:
        return _card(document, suffix, spec, target)
    if spec is not None:
        raise FormatError(
            "--spec applies to character cards",
            field="spec",
            code="spec_applies_to_character_cards",
        )
    if suffix == ".json" and document.kind is not FileKind.CHAT:
        return Converted(write_document(document))
    if suffix == ".jsonl" and document.kind is FileKind.CHAT:
        return Converted(write_document(document))
    raise FormatError(
        f"cannot convert a {document.kind.value} file to {suffix or 'that'}",
        file=target,
        code="cannot_convert_file_to",
        params={"value": str(document.kind.value), "value2": str(suffix or "that")},
    )


def _book_of(document: DetectedFile) -> bytes:
    from taverna.formats.character_book import book_to_lorebook
    from taverna.formats.world_info import dump_world_info

    if document.kind not in CARD_KINDS:
        raise FormatError(
            f"expected a character card, found a {document.kind.value} file",
            file=document.file,
            code="expected_character_card_found_file",
            params={"value": str(document.kind.value)},
        )
    character = document.value.character
    if character.character_book is None:
        raise FormatError(
            "the card has no embedded lorebook",
            file=document.file,
            field="data.character_book",
            code="card_has_no_embedded_lorebook",
        )
    lorebook = book_to_lorebook(
        character.character_book, card_name=character.name, file=document.file
    )
    return dump_world_info(lorebook).encode("utf-8")


def _card(document: DetectedFile, suffix: str, spec: str | None, target: str | None) -> Converted:
    from taverna.formats.card_json import is_v1_only, with_spec
    from taverna.model.character import SPEC_V2, SPEC_V3, CardFile

    kind = CARD_SUFFIXES.get(suffix)
    if kind is None:
        raise FormatError(
            "a card can be written as .png, .json or .charx",
            file=target,
            code="card_can_be_written_as",
        )
    card: CardFile = document.value
    character = card.character
    v1 = character.spec is None and "spec" not in character.envelope
    notes: list[str] = []
    if spec is not None:
        if spec.lower() not in SPECS:
            raise FormatError("--spec must be v2 or v3", field="spec", code="spec_must_be_v2_or")
        character = with_spec(character, SPEC_V3 if spec.lower() == "v3" else SPEC_V2)
        if v1:
            notes.append(f"the V1 card was upgraded to {spec.upper()}")
    elif v1 and kind is FileKind.CARD_CHARX:
        notes.append("the V1 card was upgraded to V3: a CHARX holds V3 cards")
    elif v1 and not is_v1_only(character):
        notes.append(
            "the V1 card was written as V2, as SillyTavern converts it: its old top-level "
            "fields moved into `data`"
        )
    # A JSON card keeps its text layout (indentation, line breaks, final newline).
    layout = document.layout if kind is document.kind else None
    out = DetectedFile(kind, CardFile(character, card.avatar, card.assets), target, layout=layout)
    return Converted(write_document(out), tuple(notes))
