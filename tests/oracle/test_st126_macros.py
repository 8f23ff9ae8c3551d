"""Macros as SillyTavern 1.12.6 printed them, replayed through taverna's own code.

Each case under `st126/macro/` was recorded from a real SillyTavern 1.12.6 (see
`st126/MACROS_REGEX.md`): the text, the chat it ran in (several messages, swipes on
the last, a hidden one, variables), the card `st126/_base_macro/Mara.json`, the
settings with the persona "Rowan" (the chat file's `user_name` is "Wren") and the
global variables. SillyTavern gave two results for each: `substituteParams(text)`
(what a prompt's texts go through) and `/pass text` (a script). They are replayed here
through the same code the product uses: the turn's macros (`assembly_context`, the card
fields, `substitute_for`) and `ScriptService.run` on the chat imported into a store.
Disagreements kept on purpose or not yet fixed are listed, with their reason, in
`st126/known_differences_macro_regex.json` and run as strict xfails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.assembly.macros_bridge import substitute_for
from taverna.engine.assembly.turn import card_fields
from taverna.engine.script import ScriptError
from taverna.formats.card_json import read_card_json
from taverna.formats.st_chat import read_chat
from taverna.formats.st_settings import read_settings
from taverna.services.chats.editing import set_chat_persona
from taverna.services.chats.service import ChatService
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.interchange.settings_import import import_settings
from taverna.services.library.editing import all_personas
from taverna.services.library.service import LibraryService
from taverna.services.scripts.runner import ScriptService
from taverna.services.turns.inputs import assembly_context, character_info, chat_messages
from taverna.store.sql import SqlStore
from taverna.store.testing import temporary_store

ROOT = Path(__file__).parent / "st126"
BASE = ROOT / "_base_macro"
CASES = ROOT / "macro"
KNOWN_FILE = ROOT / "known_differences_macro_regex.json"
KNOWN: dict[str, str] = json.loads(KNOWN_FILE.read_text()) if KNOWN_FILE.exists() else {}
AVATAR = "Mara.png"
TEXT_APIS = frozenset({"kobold", "koboldhorde", "textgenerationwebui", "novel"})
PERSONA = "Rowan"  # the persona selected in SillyTavern's page (`_base_macro/settings.json`)


def _names() -> list[str]:
    if not CASES.is_dir():
        return []
    return sorted(p.name for p in CASES.iterdir() if (p / "expected.json").exists())


def _params(mode: str) -> list[Any]:
    out = []
    for name in _names():
        key = f"macro/{name}/{mode}"
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[key])] if key in KNOWN else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def _case(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = CASES / name
    return (
        json.loads((folder / "case.json").read_text(encoding="utf-8")),
        json.loads((folder / "expected.json").read_text(encoding="utf-8")),
    )


def _settings_bytes(global_variables: dict[str, Any]) -> bytes:
    raw = json.loads((BASE / "settings.json").read_text(encoding="utf-8"))
    raw.setdefault("extension_settings", {}).setdefault("variables", {})["global"] = (
        global_variables
    )
    return json.dumps(raw).encode()


def _globals(case: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (CASES / case["name"] / case["global_variables"]).read_text(encoding="utf-8")
    )
    return data


def _agrees(case: dict[str, Any], got: str | None, recorded: str | None) -> bool:
    """Exact, or for the clock and random macros what the case says can be compared."""
    compare = case.get("compare", "exact")
    if compare == "nonempty":
        return bool(got) and bool(recorded)
    if compare.startswith("oneof:"):
        choices = compare.removeprefix("oneof:").split("|")
        return got in choices and recorded in choices
    return got == recorded


@pytest.mark.parametrize("name", _params("substitute"))
def test_macro_in_a_prompt_text(name: str) -> None:
    """`substituteParams(text)`: the macros of a turn, with the turn's context."""
    case, expected = _case(name)
    recorded = expected["substitute"]
    settings = read_settings(_settings_bytes(_globals(case)), file="settings.json")
    card = read_card_json((BASE / "Mara.json").read_bytes(), file="Mara.json")
    chat_file = CASES / name / case["chat"]
    chat = read_chat(chat_file.read_bytes(), source=str(chat_file))
    context = assembly_context(
        settings,
        [character_info(card, avatar=AVATAR)],
        dict(chat.metadata.fields),
        chat_messages(chat.messages),
        {},
        # The page had the Horde API selected (SillyTavern's default), a Text Completion one.
        api="textgen" if settings.main_api in TEXT_APIS else "openai",
        chat_id=f"c3_macro_{name}",
    )
    macros = substitute_for(context)
    macros.use_card_fields(card_fields(context, macros))
    got = macros(case["text"], {})
    assert _agrees(case, got, recorded["output"]), (got, recorded["output"])
    assert dict(macros.variables) == recorded["chat_variables"]
    globals_after = macros.changed_globals
    assert (
        dict(globals_after if globals_after is not None else context.global_variables)
        == (recorded["global_variables"])
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlStore]:
    with temporary_store("sqlite", tmp_path_factory.mktemp("st126_macros")) as opened:
        yield opened


@pytest.fixture(scope="module")
def library(store: SqlStore) -> tuple[ChatService, str]:
    """The library as an account that imported SillyTavern's settings and the card."""
    chats = ChatService(store)
    lib = LibraryService(store)
    import_settings(lib, _settings_bytes({}), file="settings.json")
    item = lib.import_bytes((BASE / "Mara.json").read_bytes(), AVATAR)
    return chats, item.id


@pytest.mark.parametrize("name", _params("pass"))
def test_macro_through_pass(name: str, library: tuple[ChatService, str]) -> None:
    """`/pass text` in the chat: the macros of a script, with the script's context."""
    case, expected = _case(name)
    recorded = expected["pass"]
    chats, character_id = library
    lib = LibraryService(chats.store)
    chat_file = CASES / name / case["chat"]
    imported = LibraryImport(lib).import_chat(
        chat_file.read_bytes(), f"{name}.jsonl", character_id=character_id
    )
    # The page had the persona Rowan selected in every chat; taverna keeps a persona per
    # chat (its user_name), so this chat is given the persona the page spoke as.
    rowan = next(i for i, p in all_personas(lib) if p.name == PERSONA)
    set_chat_persona(chats, lib, imported.chat.id, rowan, revision=imported.chat.revision)
    scripts = ScriptService(chats)
    scripts.write_global_variables(_globals(case))
    chat_id = imported.chat.id
    result = recorded["result"]
    try:
        run = scripts.run("/pass " + case["text"], chat_id=chat_id, typed=case.get("input", ""))
    except ScriptError:
        assert result["error"], "taverna failed where SillyTavern did not"
        return
    assert not result["error"], "SillyTavern failed here, taverna did not"
    assert _agrees(case, run.result.pipe, result["pipe"]), (run.result.pipe, result["pipe"])
    assert scripts.chat_variables(chat_id) == recorded["chat_variables"]
    assert scripts.global_variables() == recorded["global_variables"]
