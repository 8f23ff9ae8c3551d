"""Writes the prompt oracle inputs: one `prompts/NAME/` folder per case, each in the shape
of the capture harness's prompt cases (`case.json` beside SillyTavern's own input files).

The cases are recorded by SillyTavern 1.12.6 with the harness's `capture.py` (see
README.md); re-running this file rewrites the inputs (never the recorded `expected.json`,
`frontend_request.json`, `settings.json` or `meta.json`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "prompts"


def card(name: str, description: str, **extensions: Any) -> dict[str, Any]:
    return {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": name,
            "description": description,
            "personality": f"{name} is careful and speaks briefly.",
            "scenario": "A storm night at the lighthouse on Gull Point.",
            "first_mes": f"{name} looks up from the logbook.",
            "mes_example": "",
            "creator_notes": "",
            "system_prompt": "",
            "post_history_instructions": "",
            "alternate_greetings": [],
            "tags": [],
            "creator": "taverna",
            "character_version": "1",
            "extensions": {"talkativeness": "0.5", "fav": False, "world": "", **extensions},
        },
    }


def note(name: str, depth: int, role: str = "system") -> dict[str, Any]:
    return {
        "prompt": f"[{{{{char}}}} is {name}; {{{{user}}}} is the guest. Depth {depth}.]",
        "depth": depth,
        "role": role,
    }


def line(name: str, text: str, *, user: bool = False, minute: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "is_user": user,
        "is_system": False,
        "send_date": f"October 1, 2024 12:{minute:02d}pm",
        "mes": text,
        "extra": {},
    }


def header(character: str) -> dict[str, Any]:
    return {
        "user_name": "User",
        "character_name": character,
        "create_date": "2024-10-01@12h00m00s",
        "chat_metadata": {},
    }


def entry(
    uid: int, key: str, content: str, *, order: int = 100, position: int = 0
) -> dict[str, Any]:
    return {
        "uid": uid,
        "key": [key],
        "keysecondary": [],
        "comment": f"{key} entry",
        "content": content,
        "constant": False,
        "vectorized": False,
        "selective": True,
        "selectiveLogic": 0,
        "addMemo": True,
        "order": order,
        "position": position,
        "disable": False,
        "excludeRecursion": False,
        "preventRecursion": False,
        "delayUntilRecursion": False,
        "probability": 100,
        "useProbability": True,
        "depth": 4,
        "group": "",
        "groupOverride": False,
        "groupWeight": 100,
        "scanDepth": None,
        "caseSensitive": None,
        "matchWholeWords": None,
        "useGroupScoring": None,
        "automationId": "",
        "role": None,
        "sticky": 0,
        "cooldown": 0,
        "delay": 0,
        "displayIndex": uid,
    }


def book(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"entries": {str(e["uid"]): e for e in entries}}


def write(folder: Path, name: str, data: Any) -> None:
    path = folder / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data))
    else:
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def case(name: str, spec: dict[str, Any], files: dict[str, Any], about: str) -> None:
    folder = HERE / name
    folder.mkdir(parents=True, exist_ok=True)
    for file, data in files.items():
        write(folder, file, data)
    write(folder, "case.json", {**spec, "name": name})
    (folder / "case.md").write_text(about.strip() + "\n")


GROUP_CHAT = [
    line("Mara", "The lamp is lit. Close the door.", minute=0),
    line("User", "Any ships tonight?", user=True, minute=1),
    line("Ivo", "Two, and both late.", minute=2),
    line("User", "Then we wait together.", user=True, minute=3),
]


def join_group(name: str, api: str, mode: int, about: str) -> None:
    mara = card("Mara", "{{char}} keeps the lamp.", depth_prompt=note("Mara", 1))
    ivo = card("Ivo", "{{char}} rows the supply boat.", depth_prompt=note("Ivo", 2, "user"))
    group = {
        "name": "Keepers",
        "members": ["Mara.png", "Ivo.png"],
        "avatar_url": "",
        "allow_self_responses": False,
        "activation_strategy": 0,
        "generation_mode": mode,
        "disabled_members": [],
        "fav": False,
        "chat_metadata": {},
        "chat_id": f"{name}_chat",
        "chats": [f"{name}_chat"],
        "auto_mode_delay": 5,
        "generation_mode_join_prefix": "",
        "generation_mode_join_suffix": "",
    }
    case(
        name,
        {
            "api": api,
            "characters": [
                {
                    "file": "Mara.json",
                    "type": "json",
                    "avatar": "Mara.png",
                    "preserved_name": "Mara",
                },
                {"file": "Ivo.json", "type": "json", "avatar": "Ivo.png", "preserved_name": "Ivo"},
            ],
            "group": {"file": "group.json", "chat_file": "chat.jsonl"},
            "generations": [{"chat_file": "chat.jsonl", "speaker": "Ivo"}],
            "force_speaker": "Ivo.png",
        },
        {"Mara.json": mara, "Ivo.json": ivo, "group.json": group, "chat.jsonl": GROUP_CHAT},
        about,
    )


join_group(
    "join_group_char_notes",
    "cc",
    1,
    "A Join group (Mara and Ivo), Chat Completion, Ivo speaks: each member's character "
    "note goes in at its own depth and role with `{{char}}` read as that member.",
)
join_group(
    "join_group_char_notes_tc",
    "tc",
    1,
    "The same Join group through Text Completion (llama.cpp, ChatML): each member's "
    "character note with `{{char}}` read as that member.",
)
join_group(
    "swap_group_char_note",
    "cc",
    0,
    "A Swap group, Ivo speaks: only the speaker's character note goes in.",
)

SOLO_CHAT = [
    header("Mara"),
    line("Mara", "The lamp is lit. Close the door.", minute=0),
    line("User", "Tell me about the harbour and the old beacon.", user=True, minute=1),
    line("Mara", "The harbour freezes; the beacon is older than the town.", minute=2),
    line("User", "And the smugglers?", user=True, minute=3),
]


def extra_books(name: str, strategy: int, about: str) -> None:
    mara = card("Mara", "{{char}} keeps the lamp.", world="MaraOwn")
    own = book(entry(0, "harbour", "[Own book: the harbour freezes in January.]", order=50))
    extra = book(entry(0, "beacon", "[Extra book: the beacon was lit in 1802.]", order=60))
    world = book(entry(0, "smugglers", "[Global book: smugglers use the north cove.]", order=55))
    case(
        name,
        {
            "api": "cc",
            "characters": [
                {
                    "file": "Mara.json",
                    "type": "json",
                    "avatar": "Mara.png",
                    "preserved_name": "Mara",
                }
            ],
            "worlds": ["MaraOwn.json", "MaraExtra.json", "GlobalLore.json"],
            "chat": {"file": "chat.jsonl", "avatar": "Mara.png", "file_name": f"{name}"},
            "settings_patch": {
                "world_info_settings": {
                    "world_info": {
                        "globalSelect": ["GlobalLore"],
                        "charLore": [{"name": "Mara", "extraBooks": ["MaraExtra"]}],
                    },
                    "world_info_character_strategy": strategy,
                    # Room for two of the three entries: the strategy decides which.
                    "world_info_budget_cap": 40,
                }
            },
        },
        {
            "Mara.json": mara,
            "MaraOwn.json": own,
            "MaraExtra.json": extra,
            "GlobalLore.json": world,
            "chat.jsonl": SOLO_CHAT,
        },
        about,
    )


extra_books(
    "extra_books_character_first",
    1,
    "Character first, with room for two of three entries: the card's own book and its extra "
    "book are both character lore, so they are taken first and the global entry is left "
    "out (the entries then stand in the prompt by their orders).",
)
extra_books(
    "extra_books_global_first",
    2,
    "Global first, with room for two of three entries: the global entry, then the "
    "character's highest order (the extra book's), the own book's left out.",
)
extra_books(
    "extra_books_evenly",
    0,
    "Sorted evenly, with room for two of three entries: the two highest orders (the extra "
    "book's, then the global's), the own book's left out.",
)

REGEX_CHAT = [
    header("Mara"),
    line("Mara", "The lamp is lit. Close the door.", minute=0),
    line("User", "Is the lamp bright tonight?", user=True, minute=1),
    line("Mara", "The lamp burns like a small sun.", minute=2),
    line("User", "Keep the lamp lit, then.", user=True, minute=3),
]


def scoped_regex(name: str, allowed: bool, about: str) -> None:
    scripts = [
        {
            "id": "c6c3b0a2-1d3e-4a55-9a1f-000000000001",
            "scriptName": "lamp to lantern",
            "findRegex": "/lamp/gi",
            "replaceString": "lantern",
            "trimStrings": [],
            "placement": [1, 2],
            "disabled": False,
            "markdownOnly": False,
            "promptOnly": True,
            "runOnEdit": True,
            "substituteRegex": 0,
            "minDepth": None,
            "maxDepth": None,
        }
    ]
    mara = card("Mara", "{{char}} keeps the lamp.", regex_scripts=scripts)
    patch: dict[str, Any] = {
        "extension_settings": {"character_allowed_regex": ["Mara.png"] if allowed else []}
    }
    case(
        name,
        {
            "api": "cc",
            "characters": [
                {
                    "file": "Mara.json",
                    "type": "json",
                    "avatar": "Mara.png",
                    "preserved_name": "Mara",
                }
            ],
            "chat": {"file": "chat.jsonl", "avatar": "Mara.png", "file_name": f"{name}"},
            "settings_patch": patch,
        },
        {"Mara.json": mara, "chat.jsonl": REGEX_CHAT},
        about,
    )


scoped_regex(
    "scoped_regex_allowed",
    True,
    "A card's scoped regex script (prompt only, user input and AI output) that "
    "settings.json allows (`character_allowed_regex`) changes the chat's messages in the prompt.",
)
scoped_regex(
    "scoped_regex_not_allowed",
    False,
    "The same card's scoped script, not allowed: the prompt keeps the messages as written.",
)

if __name__ == "__main__":
    print(sorted(p.name for p in HERE.iterdir() if (p / "case.json").exists()))
