"""STscript as SillyTavern 1.12.6 ran it, replayed through taverna's own script runner.

Each case under `st126/script/` was recorded from a real SillyTavern 1.12.6 (see
`st126/README.md`): the script ran in SillyTavern's page, in a chat with the card
`_base/Mara.json`, the persona "Rowan" (the chat file's `user_name` is "Sam"), the chat
`_base/chat.jsonl` and the global variables `_base/global_variables.json`. Here the same
script runs (the chat given the persona Rowan, as SillyTavern's page spoke as Rowan in
every chat) through `ScriptService.run` (what `taverna script run --chat` and the chat
input call) on that chat imported into a store, and its final pipe, whether it failed or
was aborted, the chat after it (as the export writes it) and the chat and global
variables are compared with the recording.

A case taverna does not agree with yet, or on purpose, is listed with its reason in
`st126/known_differences.json` and runs as a strict xfail: fixing it fails the run until
it leaves the list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.script import ScriptError
from taverna.errors import TavernaError
from taverna.services.chats.editing import set_chat_persona
from taverna.services.chats.service import ChatService
from taverna.services.interchange import InterchangeService
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.interchange.settings_import import import_settings
from taverna.services.library.editing import all_personas
from taverna.services.library.regex_library import RegexLayer, RegexLibrary
from taverna.services.library.service import LibraryService
from taverna.services.scripts.runner import ScriptService
from taverna.store.sql import SqlStore
from taverna.store.testing import temporary_store

ROOT = Path(__file__).parent / "st126"
CASES = ROOT / "script"
BASE = CASES / "_base"
KNOWN_FILE = ROOT / "known_differences.json"
KNOWN: dict[str, str] = json.loads(KNOWN_FILE.read_text()) if KNOWN_FILE.exists() else {}
AVATAR = "Mara.png"
PERSONA = "Rowan"


def _names() -> list[str]:
    if not CASES.is_dir():
        return []
    return sorted(p.name for p in CASES.iterdir() if (p / "expected.json").exists())


def _params() -> list[Any]:
    out = []
    for name in _names():
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlStore]:
    with temporary_store("sqlite", tmp_path_factory.mktemp("st126_scripts")) as opened:
        yield opened


@pytest.fixture(scope="module")
def character(store: SqlStore) -> str:
    """The account: SillyTavern's settings after the capture's set-up (the persona) and
    the card."""
    lib = LibraryService(store)
    import_settings(lib, (BASE / "settings.json").read_bytes(), file="settings.json")
    return lib.import_bytes((BASE / "Mara.json").read_bytes(), AVATAR).id


def _chat_rows(store: SqlStore, chat_id: str) -> list[dict[str, Any]]:
    """The chat's messages as the export writes them, in the shape the capture keeps."""
    lines = InterchangeService(store).export_jsonl(chat_id).splitlines()
    rows = [json.loads(line) for line in lines if line.strip()][1:]
    return [
        {
            "name": row.get("name"),
            "is_user": bool(row.get("is_user")),
            "is_system": bool(row.get("is_system")),
            "mes": row.get("mes"),
            "type": (row.get("extra") or {}).get("type"),
        }
        for row in rows
    ]


def _recorded_pipe(result: dict[str, Any]) -> str | None:
    """SillyTavern's final pipe; a script that ends on nothing (`undefined`) leaves ""."""
    if result["error"]:
        return None
    pipe = result["pipe"]
    return "" if pipe is None else str(pipe)


def replay(name: str, store: SqlStore, character: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What taverna did with case `name`, and what SillyTavern recorded, in one shape."""
    case = _read(CASES / name / "case.json")
    expected = _read(CASES / name / "expected.json")
    recorded, after = expected["result"], expected["after"]
    chats = ChatService(store)
    lib = LibraryService(store)
    chat_file = CASES / name / case["chat"]
    imported = LibraryImport(lib).import_chat(
        chat_file.read_bytes(), f"{name}.jsonl", character_id=character
    )
    chat_id = imported.chat.id
    # The page had the persona Rowan selected; taverna keeps a persona per chat (its
    # user_name), so this chat is given the persona the page spoke as.
    rowan = next(i for i, p in all_personas(lib) if p.name == PERSONA)
    set_chat_persona(chats, lib, chat_id, rowan, revision=imported.chat.revision)
    scripts = ScriptService(chats)
    scripts.write_global_variables(_read(CASES / name / case["global_variables"]))
    regex = _read(CASES / name / case["regex_scripts"]) if case.get("regex_scripts") else []
    RegexLibrary(store).save(RegexLayer.GLOBAL, regex)
    failed = False
    pipe: str | None = None
    aborted = False
    reason: str | None = None
    try:
        run = scripts.run(case["script"], chat_id=chat_id, typed=case.get("input", ""))
    except (ScriptError, TavernaError):
        failed = True
    else:
        pipe = run.result.pipe
        aborted = run.result.aborted
        reason = run.result.abort_reason if aborted else None
    got = {
        "error": failed,
        "pipe": pipe,
        "aborted": aborted,
        "abort_reason": reason,
        "chat": _chat_rows(store, chat_id),
        "chat_variables": scripts.chat_variables(chat_id),
        "global_variables": scripts.global_variables(),
    }
    want = {
        "error": recorded["error"],
        "pipe": _recorded_pipe(recorded),
        "aborted": recorded["aborted"],
        "abort_reason": recorded["abort_reason"],
        "chat": after["chat"],
        "chat_variables": after["chat_variables"],
        "global_variables": after["global_variables"],
    }
    return got, want


@pytest.mark.parametrize("name", _params())
def test_script_case(name: str, store: SqlStore, character: str) -> None:
    got, want = replay(name, store, character)
    assert got == want
