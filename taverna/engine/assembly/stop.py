"""The person's own stop strings, sent with both Chat and Text Completion requests
(algo-prompt-assembly.md §7.1)."""

from __future__ import annotations

import json
from collections.abc import Callable

from taverna.model.settings import PowerUserSettings

Macros = Callable[[str], str]


def custom_stopping_strings(power_user: PowerUserSettings, macros: Macros) -> list[str]:
    """The user's own stop strings: a JSON array of strings in the settings.

    Anything that is not a JSON array yields none, as in SillyTavern; empty and
    non-string items are dropped.
    """
    raw = power_user.custom_stopping_strings
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    strings = [s for s in value if isinstance(s, str) and s]
    if power_user.custom_stopping_strings_macro:
        strings = [macros(s) for s in strings]
    return strings
