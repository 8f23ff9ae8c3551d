"""Regex script export files: one script per file (formats-extensions.md §1.1)."""

from __future__ import annotations

import re

from taverna.errors import FormatError, FormatWarning
from taverna.formats.validation import read_model
from taverna.model.regex_script import RegexScript

_UNSAFE = re.compile(r'[\s.<>:"/\\|?*\x00-\x1f]')


def read_regex_script(
    data: bytes, *, file: str | None = None, warnings: list[FormatWarning] | None = None
) -> RegexScript:
    """A regex script file; SillyTavern refuses files without a `scriptName`."""
    script = read_model(RegexScript, data, file=file, warnings=warnings)
    if "script_name" not in script.model_fields_set:
        raise FormatError(
            "a regex script needs a `scriptName`",
            file=file,
            field="scriptName",
            code="regex_script_needs_scriptname",
        )
    return script


def export_file_name(script: RegexScript) -> str:
    """The file name SillyTavern exports a script under."""
    return _UNSAFE.sub("_", script.script_name).lower() + ".json"
