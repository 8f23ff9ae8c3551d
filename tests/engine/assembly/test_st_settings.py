"""SillyTavern's settings.json read into what assembly needs (formats-presets.md §1)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import CharacterInfo, ChatMessage, Speaker
from taverna.engine.assembly.injections import AUTHORS_NOTE_KEY, authors_note_text, base_table
from taverna.errors import FormatError
from taverna.formats.st_settings import read_settings, read_world_info_settings
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.lorebook import DEFAULT_WORLD_INFO, CharacterStrategy
from taverna.model.persona import PersonaPosition
from taverna.model.presets import NamesBehavior, default_prompt_order
from taverna.services.turns.inputs import assembly_context


def _settings(oracle_cases: Path, case: str) -> bytes:
    return (oracle_cases / case / "settings.json").read_bytes()


def test_fresh_install_settings(oracle_cases: Path) -> None:
    settings = read_settings(_settings(oracle_cases, "01_seraphina_basic"))
    cc = settings.chat_completion
    assert (cc.source, cc.model, cc.max_context, cc.max_tokens) == (
        "openai",
        "gpt-4-turbo",
        4095,
        300,
    )
    assert cc.names_behavior is NamesBehavior.DEFAULT
    # §1.3: the global list (100001) is the one used, with personaDescription.
    assert [e.identifier for e in cc.order] == [e.identifier for e in default_prompt_order()]
    assert cc.slot("main") is not None and "{{char}}" in cc.slot("main").content  # type: ignore[union-attr]
    assert settings.persona.name == "User"
    assert settings.world_info.global_select == ()
    assert settings.text_completion.context.chat_start == "***"
    assert cc.sampling["temperature"] == 1 and cc.sampling["stream"] is True


def test_global_lorebooks_and_persona_at_depth(oracle_cases: Path) -> None:
    assert read_settings(
        _settings(oracle_cases, "03_world_info_features")
    ).world_info.global_select == ("OracleWorld",)
    persona = read_settings(_settings(oracle_cases, "09b_persona_at_depth_user")).persona
    assert persona.position is PersonaPosition.AT_DEPTH
    assert (persona.depth, persona.role) == (2, InjectionRole.USER)


def test_missing_global_order_uses_the_default() -> None:
    doc = {"oai_settings": {"prompt_order": [{"character_id": 100000, "order": []}]}}
    settings = read_settings(json.dumps(doc))
    assert settings.chat_completion.order == default_prompt_order()


def test_missing_impersonation_prefill_copies_the_prefill() -> None:
    """formats-presets.md §1.1: `assistant_impersonation` missing → copied from `assistant_prefill`."""
    settings = read_settings(json.dumps({"oai_settings": {"assistant_prefill": "Sure:"}}))
    assert settings.chat_completion.assistant_impersonation == "Sure:"


def test_names_in_completion_migrates() -> None:
    """formats-presets.md §1.1: `names_in_completion: true` without `names_behavior` → 1."""
    settings = read_settings(json.dumps({"oai_settings": {"names_in_completion": True}}))
    assert settings.chat_completion.names_behavior is NamesBehavior.COMPLETION


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"oai_settings": {"prompts": {"a": 1}}}, "oai_settings.prompts"),
        ({"oai_settings": {"openai_max_context": "lots"}}, "oai_settings.openai_max_context"),
        ({"oai_settings": {"prompts": [{"identifier": 5}]}}, "oai_settings.prompts[0].identifier"),
        ({"power_user": {"pin_examples": "yes"}}, "power_user.pin_examples"),
        (
            {"world_info_settings": {"world_info": {"globalSelect": "Eldoria"}}},
            "world_info_settings.world_info.globalSelect",
        ),
    ],
)
def test_bad_values_name_their_field(doc: dict, field: str) -> None:
    with pytest.raises(FormatError) as caught:
        read_settings(json.dumps(doc), file="settings.json")
    assert caught.value.field == field
    assert "settings.json" in str(caught.value)


def test_not_json_is_a_format_error() -> None:
    with pytest.raises(FormatError):
        read_settings(b"{oops", file="settings.json")
    with pytest.raises(FormatError):
        read_settings(b"[1, 2]", file="settings.json")


def test_regex_scripts_global_and_allowed_character() -> None:
    """formats-extensions.md §1.1: global scripts run; a card's own only when its file is allowed."""
    rule = {"scriptName": "g", "findRegex": "a", "replaceString": "b", "placement": [2]}
    doc = {"extension_settings": {"regex": [rule], "character_allowed_regex": ["Aria.png"]}}
    settings = read_settings(json.dumps(doc))
    assert [s.script_name for s in settings.regex_scripts] == ["g"]
    assert settings.regex_allowed == ("Aria.png",)
    off = read_settings(
        json.dumps({"extension_settings": {"regex": [rule], "disabledExtensions": ["regex"]}})
    )
    assert off.regex_scripts == ()
    with pytest.raises(FormatError) as caught:
        read_settings(json.dumps({"extension_settings": {"regex": [{"placement": "x"}]}}))
    assert caught.value.field == "extension_settings.regex[0]"


def test_authors_note_extension_settings_reach_the_context() -> None:
    """formats-extensions.md: `extension_settings.note` gives a new chat's note, the
    lorebook's view of the notes (`allowWIScan`) and the per-character note."""
    note = {
        "default": "AN",
        "defaultPosition": 7,  # unknown: in the chat
        "defaultDepth": 3,
        "defaultRole": "user",
        "allowWIScan": True,
        "chara": [{"name": "Aria", "prompt": "CN", "useChara": True, "position": 1}],
    }
    settings = read_settings(json.dumps({"extension_settings": {"note": note}}))
    assert settings.allow_wi_scan is True
    context = assembly_context(
        settings, [CharacterInfo(name="Aria", avatar="Aria.png")], {}, [], {}
    )
    metadata = context.metadata
    assert context.allow_wi_scan is True
    assert (metadata.authors_note.prompt, metadata.authors_note.depth) == ("AN", 3)
    assert metadata.authors_note.extension_position is ExtensionPosition.IN_CHAT
    assert metadata.authors_note.injection_role is InjectionRole.USER
    assert (metadata.character_note, metadata.character_note_mode) == ("CN", "before")
    assert authors_note_text(context) == "CN\nAN"
    table = base_table(context, active=True)
    assert table.entries[AUTHORS_NOTE_KEY].scan is True
    # The chat's own note replaces the defaults, role and position included.
    chat = assembly_context(
        settings,
        [CharacterInfo(name="Aria", avatar="Aria.png")],
        {"note_prompt": "mine", "note_role": 2, "note_position": 0},
        [],
        {},
    ).metadata.authors_note
    assert (chat.prompt, chat.injection_role, chat.extension_position) == (
        "mine",
        InjectionRole.ASSISTANT,
        ExtensionPosition.IN_PROMPT,
    )


def test_world_info_settings() -> None:
    """algo-world-info.md §0: keys read, over-100 budgets become 25, an unknown strategy
    acts as evenly (§1 step 4); a key the object lacks keeps a new install's value."""
    settings = read_world_info_settings(
        {
            "world_info_depth": 4,
            "world_info_budget": 30,
            "world_info_recursive": False,
            "world_info_character_strategy": 7,
            "world_info": {"globalSelect": ["Eldoria"]},
        }
    )
    assert (settings.depth, settings.budget_percent, settings.recursive) == (4, 30, False)
    assert settings.character_strategy is CharacterStrategy.EVENLY
    assert settings.global_select == ("Eldoria",)
    assert settings.match_whole_words  # absent: a new install's
    assert read_world_info_settings({"world_info_budget": 300}).budget_percent == 25
    assert read_world_info_settings({}) == DEFAULT_WORLD_INFO
    assert read_settings(b"{}").world_info == DEFAULT_WORLD_INFO


def test_global_variables_reach_the_macros() -> None:
    """`extension_settings.variables.global` is what `{{getglobalvar}}` reads; within a turn
    `{{addglobalvar}}` and `{{incglobalvar}}` build on it (algo-chat-ops.md §7)."""
    doc = {"extension_settings": {"variables": {"global": {"mood": "calm", "n": "1"}}}}
    settings = read_settings(json.dumps(doc))
    assert settings.global_variables == {"mood": "calm", "n": "1"}
    main = "Mood {{getglobalvar::mood}}.{{incglobalvar::n}}{{addglobalvar::mood::!}}"
    slots = tuple(
        replace(s, content=main) if s.identifier == "main" else s
        for s in settings.chat_completion.prompts
    )
    settings = replace(settings, chat_completion=replace(settings.chat_completion, prompts=slots))
    card = CharacterInfo(name="Aria", description="D", scenario="n={{getglobalvar::n}}")
    context = assembly_context(settings, [card], {}, [], {})
    assert context.global_variables == {"mood": "calm", "n": "1"}
    texts = [m.content for m in assemble(context, count_text=len).messages]
    assert texts[0] == "Mood calm.2"
    # Card fields are read before the prompts (getCharacterCardFields runs first in
    # Generate): the scenario holds the value the settings hold.
    assert "[Circumstances and context of the dialogue: n=1]" in texts
    # A turn's changes stay in the turn: the settings keep what they held.
    assert settings.global_variables == {"mood": "calm", "n": "1"}
    with pytest.raises(FormatError) as caught:
        read_settings(json.dumps({"extension_settings": {"variables": {"global": []}}}))
    assert caught.value.field == "extension_settings.variables.global"


def test_card_field_macros_run_once_per_generation() -> None:
    """A card field's macros are evaluated once per generation, where the prompt reads
    the field. SillyTavern evaluates every card field again inside each macro call it
    makes (getCharacterCardFields within substituteParams), a count that depends on
    its screen; taverna keeps the one evaluation Generate itself makes, so an
    `{{addvar}}` in a field adds once and `{{description}}` prints the evaluated field."""
    settings = read_settings(json.dumps({"extension_settings": {"variables": {"global": {}}}}))
    main = "[{{description}}|{{getglobalvar::n}}|{{getvar::m}}]"
    slots = tuple(
        replace(s, content=main) if s.identifier == "main" else s
        for s in settings.chat_completion.prompts
    )
    settings = replace(settings, chat_completion=replace(settings.chat_completion, prompts=slots))
    card = CharacterInfo(
        name="Aria", description="D{{addglobalvar::n::1}}{{addvar::m::1}}{{getglobalvar::n}}"
    )
    context = assembly_context(settings, [card], {"variables": {"m": 5}}, [], {})
    texts = [m.content for m in assemble(context, count_text=len).messages]
    # getvar and getglobalvar run before the add macros on a line (algo-chat-ops.md §7).
    assert "D" in texts
    assert texts[0] == "[D|1|6]"


@pytest.mark.parametrize("api", ["openai", "textgen"])
def test_a_cards_own_regex_scripts_run_when_its_file_is_allowed(api: str) -> None:
    """formats-extensions.md §1.1: a card's `regex_scripts` run after the global ones, only
    for a card file in `character_allowed_regex`, on the chat and the lorebook text alike,
    in Chat and Text Completion."""
    from taverna.formats.world_info import world_info_from_json
    from taverna.model.regex_script import RegexScript

    book = world_info_from_json(
        {
            "entries": {
                "0": {"uid": 0, "key": [], "content": "Gate red.", "constant": True, "position": 0}
            }
        },
        name="Book",
    )
    own = (
        RegexScript.from_json(
            {"scriptName": "c", "findRegex": "red", "replaceString": "blue", "placement": [5]}
        ),
        RegexScript.from_json(
            {"scriptName": "h", "findRegex": "hi", "replaceString": "HELLO",
             "placement": [1], "promptOnly": True}
        ),
    )  # fmt: skip
    glob = {"scriptName": "g", "findRegex": "blue", "replaceString": "navy", "placement": [5]}
    card = CharacterInfo(
        name="Aria", description="D", avatar="Aria.png", linked_lorebook="Book", regex_scripts=own
    )
    messages = chat_messages_from(("user", "hi there"))

    def text(allowed: list[str]) -> str:
        doc = {"extension_settings": {"regex": [glob], "character_allowed_regex": allowed}}
        settings = read_settings(json.dumps(doc))
        context = assembly_context(settings, [card], {}, messages, {"Book": book}, api=api)
        prompt = assemble(context, count_text=len)
        return prompt.text if api == "textgen" else "\n".join(m.content for m in prompt.messages)

    assert "Gate red." in text(["Other.png"]) and "hi there" in text(["Other.png"])
    allowed = text(["Aria.png"])
    # The global script runs first, so it never sees the card's "blue".
    assert "Gate blue." in allowed and "HELLO there" in allowed


def chat_messages_from(*turns: tuple[str, str]) -> tuple[ChatMessage, ...]:
    return tuple(
        ChatMessage(str(i), Speaker(s), "Alex" if s == "user" else "Aria", t)
        for i, (s, t) in enumerate(turns)
    )


@pytest.mark.parametrize(
    ("strategy", "cap", "kept"),
    [
        # A cap of 45 (by characters here) holds two entries, 50 three.
        (0, 45, ["Chat", "Global"]),  # evenly, one order: global books come first
        (1, 45, ["Chat", "Primary"]),  # character first
        (2, 45, ["Chat", "Global"]),  # global first
        (0, 50, ["Chat", "Global", "Primary"]),
        (1, 50, ["Chat", "Primary", "Extra"]),  # the linked book, then the extra one
        (2, 50, ["Chat", "Global", "Primary"]),
    ],
)
def test_the_budget_goes_to_the_books_the_strategy_puts_first(
    strategy: int, cap: int, kept: list[str]
) -> None:
    """getSortedEntries orders the chat's book, then the character's books (linked, then
    extra from `world_info.charLore`) and the global ones as the strategy says; the
    lorebook budget is spent in that order, so what does not fit is left out."""
    from taverna.model.lorebook import Entry, Lorebook

    books = {
        name: Lorebook(
            name=name,
            entries=(Entry(uid=0, key=(), content=f"{name} lore.", constant=True, order=100),),
        )
        for name in ("Chat", "Primary", "Extra", "Global")
    }
    world = {
        "world_info": {
            "globalSelect": ["Global"],
            "charLore": [{"name": "Aria", "extraBooks": ["Extra"]}],
        },
        "world_info_character_strategy": strategy,
        "world_info_budget_cap": cap,
    }
    settings = read_settings(json.dumps({"world_info_settings": world}))
    card = CharacterInfo(name="Aria", description="D", avatar="Aria.png", linked_lorebook="Primary")
    context = assembly_context(settings, [card], {"world_info": "Chat"}, [], books)
    assert context.character.extra_lorebooks == ("Extra",)
    text = "\n".join(m.content for m in assemble(context, count_text=len).messages)
    assert [n for n in ("Chat", "Primary", "Extra", "Global") if f"{n} lore." in text] == sorted(
        kept, key=["Chat", "Primary", "Extra", "Global"].index
    )


def test_the_presets_own_regex_scripts_run_once_allowed() -> None:
    """regex/engine.js: the chosen preset's `extensions.regex_scripts` run only when its
    name is in `extension_settings.preset_allowed_regex.openai`."""
    script = {"scriptName": "p", "findRegex": "a", "replaceString": "b", "placement": [1]}
    doc: dict[str, Any] = {
        "oai_settings": {
            "preset_settings_openai": "Mine",
            "extensions": {"regex_scripts": [script]},
        },
        "extension_settings": {"preset_allowed_regex": {"openai": []}},
    }
    assert read_settings(json.dumps(doc)).preset_regex_scripts == ()
    doc["extension_settings"]["preset_allowed_regex"]["openai"] = ["Mine"]
    (found,) = read_settings(json.dumps(doc)).preset_regex_scripts
    assert found.script_name == "p"
    doc["extension_settings"]["preset_allowed_regex"]["openai"] = "Mine"
    with pytest.raises(FormatError) as caught:
        read_settings(json.dumps(doc), file="settings.json")
    assert caught.value.field == "extension_settings.preset_allowed_regex.openai"
