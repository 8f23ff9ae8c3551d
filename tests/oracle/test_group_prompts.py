"""Group prompts by SillyTavern 1.12.6's rules (algo-chat-ops.md §5.3-5.4), through
`taverna prompt --group`: Swap, Join with and without muted members, a forced speaker,
and Text Completion. The expected texts are made here from the rules, from the cards'
own fields (`getGroupCharacterCards`: each field trimmed, `<FIELDNAME>` in the join
prefix and suffix, macros with `{{char}}` = that member, `\\n` around the value when
the instruct template wraps, the members' parts joined by `\\n`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from taverna.cli.main import _register, app

PREFIX = "[<FIELDNAME> of {{char}}]"
SUFFIX = "[/{{char}}]"
FIELDS = {
    "description": "Description",
    "personality": "Personality",
    "scenario": "Scenario",
}


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return CliRunner()


def _cards(st_fixtures: Path, oracle_cases: Path) -> dict[str, dict[str, Any]]:
    from taverna.formats.card_json import card_from_json
    from taverna.formats.png_card import read_png_card

    base = oracle_cases / "01_seraphina_basic"
    seraphina = read_png_card((base / "default_Seraphina.png").read_bytes()).character
    kael_data = json.loads((st_fixtures / "handmade" / "cards" / "Kael.v3.json").read_text())
    kael = card_from_json(kael_data)
    return {
        c.name: {"description": c.description, "personality": c.personality, "scenario": c.scenario}
        for c in (seraphina, kael)
    }


def _fill(text: str, char: str) -> str:
    # line ends as the solo oracle case 01 has them for the same card: CRLF becomes LF
    text = text.replace("\r\n", "\n")
    return text.replace("{{char}}", char).replace("{{user}}", "User")


def _joined(cards: dict[str, dict[str, Any]], field: str, members: list[str]) -> str:
    """One card field joined over `members` as the rules above say (wrap on: `\\n`)."""
    parts = []
    for name in members:
        value = cards[name][field].strip()
        if not value:
            continue
        prefix = _fill(PREFIX.replace("<FIELDNAME>", FIELDS[field]), name)
        suffix = _fill(SUFFIX.replace("<FIELDNAME>", FIELDS[field]), name)
        parts.append(f"{prefix}\n{_fill(value, name)}\n{suffix}")
    return "\n".join(parts)


def _run(
    runner: CliRunner,
    st_fixtures: Path,
    oracle_cases: Path,
    tmp_path: Path,
    *,
    mode: int = 0,
    muted: tuple[str, ...] = (),
    speaker: str | None = None,
    api: str = "openai",
) -> dict[str, Any]:
    base = oracle_cases / "01_seraphina_basic"
    data = st_fixtures / "handmade" / "user-data"
    group = json.loads((data / "groups" / "1727532000123.json").read_text())
    group.update(
        generation_mode=mode,
        disabled_members=[f"{m}.png" for m in muted],
        generation_mode_join_prefix=PREFIX,
        generation_mode_join_suffix=SUFFIX,
    )
    group_file = tmp_path / "group.json"
    group_file.write_text(json.dumps(group))
    args = [
        "prompt",
        "--settings",
        str(base / "settings.json"),
        "--card",
        str(base / "default_Seraphina.png"),
        "--card",
        str(st_fixtures / "handmade" / "cards" / "Kael.v3.json"),
        "--group",
        str(group_file),
        "--chat",
        str(data / "group chats" / "2024-09-28@15h00m00s.jsonl"),
        "--api",
        api,
        "--json",
    ]
    if speaker:
        args += ["--speaker", speaker]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def _text(body: dict[str, Any]) -> str:
    if "prompt" in body:
        return str(body["prompt"])
    return "\n".join(str(m["content"]) for m in body["messages"])


def test_swap_has_only_the_speakers_card(
    runner: CliRunner, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    cards = _cards(st_fixtures, oracle_cases)
    body = _run(runner, st_fixtures, oracle_cases, tmp_path, speaker="Kael")
    text = _text(body)
    assert _fill(cards["Kael"]["description"], "Kael") in text
    assert cards["Seraphina"]["description"].strip()[:80] not in text
    assert "[Description of" not in text  # no join prefix in Swap
    assert body["messages"][-1] == {
        "role": "system",
        "content": "[Write the next reply only as Kael.]",
    }


def test_join_has_every_card_with_prefix_and_suffix(
    runner: CliRunner, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    cards = _cards(st_fixtures, oracle_cases)
    body = _run(runner, st_fixtures, oracle_cases, tmp_path, mode=1, speaker="Kael")
    text = _text(body)
    for field in FIELDS:
        joined = _joined(cards, field, ["Seraphina", "Kael"])
        if joined:
            assert joined in text, field
    assert body["messages"][-1]["content"] == "[Write the next reply only as Kael.]"


def test_join_leaves_a_muted_member_out_unless_it_speaks(
    runner: CliRunner, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    cards = _cards(st_fixtures, oracle_cases)
    body = _run(
        runner, st_fixtures, oracle_cases, tmp_path, mode=1, muted=("Kael",), speaker="Seraphina"
    )
    text = _text(body)
    assert _joined(cards, "description", ["Seraphina"]) in text
    assert "[Description of Kael]" not in text
    # a muted member made to speak is joined in, in the group's order
    forced = _run(
        runner, st_fixtures, oracle_cases, tmp_path, mode=1, muted=("Kael",), speaker="Kael"
    )
    assert _joined(cards, "description", ["Seraphina", "Kael"]) in _text(forced)


def test_join_including_muted_has_every_card(
    runner: CliRunner, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    cards = _cards(st_fixtures, oracle_cases)
    body = _run(
        runner, st_fixtures, oracle_cases, tmp_path, mode=2, muted=("Kael",), speaker="Seraphina"
    )
    assert _joined(cards, "description", ["Seraphina", "Kael"]) in _text(body)
    assert body["messages"][-1]["content"] == "[Write the next reply only as Seraphina.]"


def test_text_completion_group_ends_with_the_speaker_and_stops_at_the_others(
    runner: CliRunner, st_fixtures: Path, oracle_cases: Path, tmp_path: Path
) -> None:
    body = _run(runner, st_fixtures, oracle_cases, tmp_path, speaker="Kael", api="textgen")
    prompt = str(body["prompt"])
    assert prompt.endswith("\nKael:")
    assert "\nSeraphina: " in prompt or prompt.startswith("Seraphina: ")
    stops = body.get("stopping_strings") or body.get("stop") or []
    assert "\nSeraphina:" in stops and "\nUser:" in stops
    assert "\nKael:" not in stops
