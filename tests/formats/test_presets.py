"""Presets, templates, personas, regex scripts and quick replies: what the models mean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taverna.errors import FormatError
from taverna.formats.detect import FileKind, detect, read_any
from taverna.formats.personas import (
    read_personas,
    write_persona_backup,
    write_personas_into_settings,
)
from taverna.formats.presets import (
    named_on_import,
    read_chat_completion_preset,
    read_context_template,
    read_instruct_template,
    read_system_prompt,
    read_text_completion_preset,
)
from taverna.formats.quick_replies import read_quick_reply_set, write_quick_reply_set
from taverna.formats.regex_scripts import export_file_name, read_regex_script
from taverna.model.persona import PersonaPosition
from taverna.model.presets import DEFAULT_PROMPT_ORDER, InstructNames
from taverna.model.quick_reply import LegacyQuickReplySet, QuickReplySet


def test_chat_completion_preset(st_fixtures: Path) -> None:
    preset = read_chat_completion_preset(
        (st_fixtures / "presets" / "openai" / "Default.json").read_bytes()
    )
    assert preset.temperature == 1 and preset.openai_max_context == 4095
    assert preset.stream_openai is True
    main = preset.prompt("main")
    assert main is not None and main.content and "{{char}}" in main.content
    order = preset.order_for()
    assert order[0].identifier == "main"
    assert "personaDescription" in [item.identifier for item in order]
    legacy = preset.order_for(100000)
    assert "personaDescription" not in [item.identifier for item in legacy]
    chat_history = preset.prompt("chatHistory")
    assert chat_history is not None and chat_history.marker


def test_absent_order_falls_back_to_the_default() -> None:
    preset = read_chat_completion_preset(b'{"temperature": 0.7}')
    assert [(i.identifier, i.enabled) for i in preset.order_for()] == list(DEFAULT_PROMPT_ORDER)
    assert preset.wi_format == "{0}"  # code default, though absent from the file
    assert preset.to_json() == {"temperature": 0.7}


def test_instruct_templates(st_fixtures: Path) -> None:
    chatml = read_instruct_template(
        (st_fixtures / "presets" / "instruct" / "ChatML.json").read_bytes()
    )
    assert chatml.name == "ChatML"
    assert chatml.input_suffix == "<|im_end|>\n"
    assert chatml.effective_names_behavior is InstructNames.ALWAYS
    mistral = read_instruct_template(
        (st_fixtures / "presets" / "instruct" / "Mistral V3-Tekken.json").read_bytes()
    )
    assert mistral.user_alignment_message


def test_legacy_instruct_fields() -> None:
    old = read_instruct_template(
        b'{"names": false, "names_force_groups": true, "separator_sequence": "\\n"}'
    )
    assert old.effective_names_behavior is InstructNames.FORCE
    assert old.effective_output_suffix == "\n"
    assert (
        read_instruct_template(b'{"names": true}').effective_names_behavior is InstructNames.ALWAYS
    )
    # §2.1: without `names`, a false `names_force_groups` still migrates, to none.
    alone = read_instruct_template(b'{"names_force_groups": false}')
    assert alone.effective_names_behavior is InstructNames.NONE
    assert alone.migrated().names_behavior == "none"


def test_migrated_instruct_template_moves_only_the_legacy_keys() -> None:
    old = read_instruct_template(b'{"names": true, "separator_sequence": "\\n", "wrap": false}')
    migrated = old.migrated()
    assert (migrated.names_behavior, migrated.output_suffix, migrated.wrap) == (
        "always",
        "\n",
        False,
    )
    current = read_instruct_template(b'{"names_behavior": "none", "names": true}')
    assert current.migrated() is current  # nothing legacy applies


def test_context_and_system_prompt(st_fixtures: Path) -> None:
    context = read_context_template(
        (st_fixtures / "presets" / "context" / "ChatML.json").read_bytes()
    )
    assert "{{trim}}" in context.story_string and context.use_stop_strings is False
    actor = read_system_prompt((st_fixtures / "presets" / "sysprompt" / "Actor.json").read_bytes())
    assert actor.name == "Actor" and actor.content


def test_text_completion_preset_keeps_loose_keys(st_fixtures: Path) -> None:
    data = (st_fixtures / "presets" / "textgen" / "Default.json").read_bytes()
    preset = read_text_completion_preset(data)
    assert isinstance(preset.extras["dry_sequence_breakers"], str)
    assert preset.to_json() == json.loads(data)


def test_named_on_import() -> None:
    template = read_instruct_template(b'{"input_sequence": "U:"}')
    assert named_on_import(template, "My Template.settings.json").name == "My Template"
    named = read_instruct_template(b'{"name": "Kept"}')
    assert named_on_import(named, "other.json").name == "Kept"


def test_regex_scripts(st_fixtures: Path) -> None:
    script = read_regex_script(
        (st_fixtures / "handmade" / "exports" / "strip_ooc_notes.json").read_bytes()
    )
    assert script.script_name == "Strip OOC notes"
    assert script.placement == [1, 2] and script.prompt_only
    assert script.min_depth is None
    assert export_file_name(script) == "strip_ooc_notes.json"
    highlight = read_regex_script(
        (st_fixtures / "handmade" / "exports" / "highlight_character_name.json").read_bytes()
    )
    assert highlight.substitution_mode == 1
    with pytest.raises(FormatError, match="scriptName"):
        read_regex_script(b'{"findRegex": "/x/"}', file="r.json")


def test_quick_reply_sets(st_fixtures: Path) -> None:
    data = (
        st_fixtures / "handmade" / "user-data" / "QuickReplies" / "Glade Tools.json"
    ).read_bytes()
    qr_set = read_quick_reply_set(data)
    assert isinstance(qr_set, QuickReplySet)
    assert [qr.id for qr in qr_set.qr_list] == [1, 3] and qr_set.id_index == 4
    assert qr_set.qr_list[1].automation_id == "roll-d20"
    assert qr_set.qr_list[1].context_list[0].set == "Glade Tools"
    assert write_quick_reply_set(qr_set) == data


def test_legacy_quick_reply_set_migrates(st_fixtures: Path) -> None:
    legacy = read_quick_reply_set(
        (st_fixtures / "presets" / "quick-replies" / "Default.json").read_bytes()
    )
    assert isinstance(legacy, LegacyQuickReplySet)
    migrated = legacy.migrated()
    assert migrated.version == 2
    assert [(qr.id, qr.label, qr.message) for qr in migrated.qr_list][:2] == [
        (1, "HELP", "/?"),
        (2, "New Chat", "/newchat"),
    ]
    assert migrated.to_json()["qrList"][0]["preventAutoExecute"] is True


SETTINGS = {
    "firstRun": False,
    "power_user": {
        "theme": "Dark",
        "personas": {"traveler.png": "Traveler", "bard.png": "Bard"},
        "persona_descriptions": {
            "traveler.png": {
                "description": "A tired traveler.",
                "position": 0,
                "depth": 2,
                "role": 0,
            },
            "bard.png": {
                "description": "A bard.",
                "position": 4,
                "depth": 1,
                "role": 1,
                "x_new": 1,
            },
        },
        "default_persona": "traveler.png",
    },
}


def test_personas_from_settings() -> None:
    data = json.dumps(SETTINGS).encode()
    # a settings file is a kind of its own; its personas are read from it
    assert detect(data, "settings.json") is FileKind.SETTINGS
    assert read_any(data, "settings.json").value == SETTINGS
    personas = read_personas(data, file="settings.json")
    items = personas.items()
    assert [(p.avatar, p.name, p.is_default) for p in items] == [
        ("traveler.png", "Traveler", True),
        ("bard.png", "Bard", False),
    ]
    assert items[1].descriptor.position == PersonaPosition.AT_DEPTH
    assert items[1].descriptor.extras == {"x_new": 1}
    # writing them back into the same settings changes nothing
    assert json.loads(write_personas_into_settings(data, personas)) == SETTINGS
    # a backup file round-trips too
    backup = write_persona_backup(personas)
    assert read_personas(backup).to_json() == personas.to_json()
    assert read_any(backup, "personas_20241001.json").kind is FileKind.PERSONAS


def test_personas_wrong_type_names_the_field() -> None:
    bad = {"power_user": {"personas": {"a.png": 5}}}
    with pytest.raises(FormatError) as info:
        read_personas(json.dumps(bad).encode(), file="settings.json")
    assert info.value.field == "power_user.personas.a.png"


def test_prompt_manager_export() -> None:
    doc = {"version": 1, "type": "full", "data": {
        "prompts": [{"identifier": "3f9c", "name": "Tone", "role": "system", "content": "Be brief.",
                     "system_prompt": False, "marker": False}],
        "prompt_order": [{"identifier": "main", "enabled": True}, {"identifier": "3f9c", "enabled": False}]}}  # fmt: skip
    document = read_any(json.dumps(doc).encode(), "st-prompts-10_01_2024.json")
    assert document.kind is FileKind.PROMPT_EXPORT
    assert document.value.data.prompts[0].content == "Be brief."
    assert document.value.to_json() == doc


def test_regex_legacy_placements_migrate() -> None:
    only_markdown = read_regex_script(b'{"scriptName": "a", "placement": [0]}').migrated()
    assert only_markdown.placement == [1, 2, 3, 5]
    assert only_markdown.markdown_only and only_markdown.prompt_only
    mixed = read_regex_script(b'{"scriptName": "b", "placement": [0, 2]}').migrated()
    assert mixed.placement == [2] and mixed.markdown_only and mixed.prompt_only
    send_as = read_regex_script(b'{"scriptName": "c", "placement": [4]}').migrated()
    assert send_as.placement == [3]
    current = read_regex_script(b'{"scriptName": "d", "placement": [1]}')
    assert current.migrated() is current


def test_python_names_in_a_file_stay_unknown_keys() -> None:
    script = read_regex_script(b'{"scriptName": "a", "script_name": "b"}')
    assert script.script_name == "a"
    assert script.to_json() == {"scriptName": "a", "script_name": "b"}
