"""Quick Reply set files, version 2 and legacy version 1 (formats-extensions.md §2)."""

from __future__ import annotations

from taverna.errors import FormatError, FormatWarning
from taverna.formats import json_text
from taverna.formats.validation import validate, write_model
from taverna.model.quick_reply import LegacyQuickReplySet, QuickReplySet


def read_quick_reply_set(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> QuickReplySet | LegacyQuickReplySet:
    """A set file as stored: version 2, or a version-1 set (see `.migrated()`)."""
    doc = json_text.loads(data, file=file)
    if not isinstance(doc, dict):
        raise FormatError("expected a JSON object", file=file, code="expected_json_object")
    if doc.get("version") == 2 or "qrList" in doc:
        return validate(QuickReplySet, doc, file=file, warnings=warnings)
    if "quickReplySlots" in doc:
        return validate(LegacyQuickReplySet, doc, file=file, warnings=warnings)
    raise FormatError(
        "not a Quick Reply set (no `qrList` or `quickReplySlots`)",
        file=file,
        code="not_quick_reply_set_no",
    )


def write_quick_reply_set(qr_set: QuickReplySet | LegacyQuickReplySet) -> bytes:
    """The set as SillyTavern's server writes it (4-space indentation)."""
    return write_model(qr_set)
