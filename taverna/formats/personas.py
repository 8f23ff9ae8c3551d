"""Personas from SillyTavern's `settings.json` (`power_user`) or its persona backup file
(formats-presets.md §6)."""

from __future__ import annotations

from typing import Any

from taverna.errors import FormatError, FormatWarning
from taverna.formats import json_text
from taverna.formats.validation import validate
from taverna.model.persona import PersonaSet

PERSONA_KEYS = ("personas", "persona_descriptions", "default_persona")


def _persona_part(doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    power_user = doc.get("power_user")
    if isinstance(power_user, dict):
        return power_user, "power_user"
    if "personas" in doc or "persona_descriptions" in doc:
        return doc, ""
    raise FormatError(
        "no personas here (neither `power_user` nor `personas`)",
        code="no_personas_here_neither_power",
    )


def read_personas(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> PersonaSet:
    """The personas of a `settings.json` or of a `personas_*.json` backup."""
    doc = json_text.loads(data, file=file)
    if not isinstance(doc, dict):
        raise FormatError("expected a JSON object", file=file, code="expected_json_object")
    try:
        part, prefix = _persona_part(doc)
    except FormatError as exc:
        raise FormatError(exc.message, file=file, code=exc.code, params=exc.params) from None
    fields = {key: part[key] for key in PERSONA_KEYS if key in part}
    return validate(PersonaSet, fields, file=file, prefix=prefix or None, warnings=warnings)


def write_persona_backup(personas: PersonaSet) -> bytes:
    """A persona backup file as SillyTavern writes it (2-space indentation)."""
    return json_text.dumps(personas.to_json(), indent=2).encode("utf-8")


def write_personas_into_settings(settings: bytes, personas: PersonaSet) -> bytes:
    """`settings.json` with its persona keys replaced; every other key left as it was."""
    doc = json_text.loads(settings, file="settings.json")
    if not isinstance(doc, dict):
        raise FormatError(
            "expected a JSON object", file="settings.json", code="expected_json_object"
        )
    power_user = doc.get("power_user")
    if not isinstance(power_user, dict):
        power_user = {}
    power_user = {k: v for k, v in power_user.items() if k not in PERSONA_KEYS}
    power_user.update(personas.to_json())
    return json_text.dumps({**doc, "power_user": power_user}, indent=4).encode("utf-8")
