"""Regex scripts as SillyTavern 1.12.6 ran them, replayed through taverna's own code.

Each case under `st126/regex/` was recorded from a real SillyTavern 1.12.6 (see
`st126/MACROS_REGEX.md`): the case's scripts as the global scripts
(`extension_settings.regex`), then `getRegexedString(input, placement, {isMarkdown,
isPrompt, depth})` in its page, with the chat of `chat.jsonl` open and the persona
"Rowan". Here the scripts are read as the product reads a settings file and run by
`regexed`, the function every moment of the product uses, at the moment the flags name:
`isMarkdown` is a message being shown, `isPrompt` the prompt being built (with the
turn's macros), neither a message being stored (with the macros the stored-message
rewrite uses). Known disagreements: `st126/known_differences_macro_regex.json`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.assembly.macros_bridge import substitute_for
from taverna.engine.assembly.regex_scripts import RegexUse, regexed
from taverna.formats.card_json import read_card_json
from taverna.formats.st_chat import read_chat
from taverna.formats.st_settings import SillyTavernSettings, read_settings
from taverna.model.chat import CharacterRef, Chat
from taverna.model.regex_script import RegexPlacement
from taverna.services.scripts import message_regex
from taverna.services.turns.inputs import assembly_context, character_info, chat_messages

ROOT = Path(__file__).parent / "st126"
BASE = ROOT / "_base_macro"
CASES = ROOT / "regex"
KNOWN_FILE = ROOT / "known_differences_macro_regex.json"
PERSONA = "Rowan"  # the persona selected in SillyTavern's page (`_base_macro/settings.json`)
KNOWN: dict[str, str] = json.loads(KNOWN_FILE.read_text()) if KNOWN_FILE.exists() else {}


def _params() -> list[Any]:
    if not CASES.is_dir():
        return []
    out = []
    for folder in sorted(p for p in CASES.iterdir() if (p / "expected.json").exists()):
        key = f"regex/{folder.name}"
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[key])] if key in KNOWN else []
        out.append(pytest.param(folder.name, marks=marks, id=folder.name))
    return out


def _settings(scripts: list[Any]) -> SillyTavernSettings:
    raw = json.loads((BASE / "settings.json").read_text(encoding="utf-8"))
    raw.setdefault("extension_settings", {})["regex"] = scripts
    return read_settings(json.dumps(raw).encode(), file="settings.json")


def _turn_macros(settings: SillyTavernSettings, chat_file: Path) -> Callable[[str], str]:
    """The macros the prompt of a turn in this chat runs (persona, card, chat)."""
    card = read_card_json((BASE / "Mara.json").read_bytes(), file="Mara.json")
    chat = read_chat(chat_file.read_bytes(), source=str(chat_file))
    context = assembly_context(
        settings,
        [character_info(card, avatar="Mara.png")],
        dict(chat.metadata.fields),
        chat_messages(chat.messages),
        {},
    )
    macros = substitute_for(context)
    return lambda text: macros(text, {})


def _stored_macros() -> Callable[[str], str]:
    """The macros a message's storage and display scripts run with in this chat."""
    # The page spoke as its selected persona (Rowan) whatever the chat file's user_name;
    # taverna keeps a persona per chat, so the chat here speaks as Rowan.
    chat = Chat(id="chat", title="chat", characters=(CharacterRef("Mara"),), user_name=PERSONA)
    return message_regex._macros(message_regex._substitute(chat, "Mara"))


@pytest.mark.parametrize("name", _params())
def test_regex_case(name: str) -> None:
    folder = CASES / name
    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    scripts = json.loads((folder / case["regex_scripts"]).read_text(encoding="utf-8"))
    settings = _settings(scripts)
    params = case["params"]
    chat_file = folder / case["chat"]
    if params.get("isPrompt"):
        use, substitute = RegexUse.PROMPT, _turn_macros(settings, chat_file)
    elif params.get("isMarkdown"):
        use, substitute = RegexUse.DISPLAY, _stored_macros()
    else:
        use, substitute = RegexUse.STORE, _stored_macros()
    got = regexed(
        case["input"],
        RegexPlacement(case["placement"]),
        settings.regex_scripts,
        substitute,
        use,
        depth=params.get("depth"),
    )
    assert expected["result"]["error"] is None
    assert got == expected["result"]["output"]
