"""Reading a character card for a quick look, without the models.

`taverna inspect` is run once per file by scripts; validating a card with the character
model costs more than the rest of the command (the modelling library alone takes several
times an empty interpreter's start). This reader reads a JSON or PNG card by the rules
the card reader follows (formats/card_layout.py, SillyTavern's coercions in
formats/shapes.py) and checks its fields against the card models' description
(formats/card_shapes.py, generated from the models). Where it cannot be sure to read the
card as the models would, and for every other kind of file or any error, it answers
None: the caller reads the file with `detect.read_any`, which says what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from taverna.errors import FormatError, FormatWarning
from taverna.formats import json_text, shapes
from taverna.formats.card_layout import laid_out, mirrored, read_card_object
from taverna.formats.card_shapes import CHARACTER, MODELS
from taverna.formats.detect import (
    PNG_SIGNATURE,
    ZIP_SIGNATURE,
    DetectedFile,
    FileKind,
    kind_of_json,
)
from taverna.model.card_fields import ENVELOPE_KEY

if TYPE_CHECKING:
    from taverna.model.character import CardFile


class CardView(NamedTuple):
    """A card as plain JSON: what `taverna inspect` shows of a card, from either reader.

    `data` is the character's `data` object and `envelope` the keys around it (as
    `Character.data_json()` and `Character.envelope`), `dump` the character as its model
    dumps it, `as_read` the mirrored values it was read with (None: no layout to keep).
    """

    data: dict[str, Any]
    envelope: dict[str, Any]
    dump: dict[str, Any]
    as_read: dict[str, Any] | None
    avatar: bytes | None = None
    assets: Mapping[str, bytes] = MappingProxyType({})

    @property
    def card(self) -> dict[str, Any]:
        """The card object as it is stored (`card_json.card_to_json`)."""
        return laid_out(self.data, self.envelope, self.as_read)


def view_of(card: CardFile) -> CardView:
    """A card read by the card reader, as a view."""
    character = card.character
    return CardView(
        data=character.data_json(),
        envelope=character.envelope,
        dump=character.model_dump(mode="json", by_alias=True, exclude_unset=True),
        as_read=character._mirror_as_read,
        avatar=card.avatar,
        assets=card.assets,
    )


def quick_read(data: bytes, file_name: str = "") -> DetectedFile | None:
    """A JSON or PNG card read as `read_any` reads it, its value a CardView; None for any
    other file, an error, or a card this reader cannot be sure of."""
    file = file_name or None
    found: list[FormatWarning] = []
    try:
        if data.startswith(PNG_SIGNATURE):
            from taverna.formats.png_chunks import card_payload, lorebook_chunk, strip_card

            if lorebook_chunk(data, file=file) is not None:
                return None
            doc, keyword = card_payload(data, file=file)
            view = _card(doc, file, keyword, found)
            view = CardView(view.data, view.envelope, view.dump, view.as_read,
                            avatar=strip_card(data, file=file))  # fmt: skip
            return DetectedFile(FileKind.CARD_PNG, view, file, tuple(found))
        suffix = PurePath(file_name).suffix.lower()
        if data.startswith(ZIP_SIGNATURE) or suffix != ".json":
            return None  # a CHARX, or perhaps a chat: read_any decides
        doc = json_text.loads(data, file=file)
        if kind_of_json(doc, file_name) is not FileKind.CARD_JSON:
            return None
        view = _card(doc, file, None, found)
        layout = json_text.layout_of(data)
        return DetectedFile(FileKind.CARD_JSON, view, file, tuple(found), layout)
    except (FormatError, shapes.Undecided):
        return None


def _card(doc: Any, file: str | None, where: str | None, found: list[FormatWarning]) -> CardView:
    def check(
        fields: dict[str, Any], prefix: str | None, notes: list[FormatWarning] | None
    ) -> shapes.Checked:
        value = shapes.coerce(
            MODELS.__getitem__, CHARACTER, fields, file=file, path=prefix or "", warnings=notes
        )
        return shapes.checked(MODELS.__getitem__, CHARACTER, value)

    checked, layout = read_card_object(doc, check, file=file, field=where, warnings=found)
    data = dict(checked.value)
    envelope = data.pop(ENVELOPE_KEY, {})
    return CardView(data, envelope, checked.dump, mirrored(data) if layout else None)
