"""`taverna prompt --api ... --post-processing ...` prints the body the transport would send."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import taverna.cli.prompt  # noqa: F401 - registers the command
from taverna.cli.main import app


def run(case: Path, *extra: str) -> dict[str, object]:
    card = json.loads((case / "case.json").read_text())["characters"][0]["file"]
    args = ["prompt", "--settings", str(case / "settings.json"), "--card", str(case / card)]
    result = CliRunner().invoke(app, [*args, "--chat", str(case / "chat.jsonl"), *extra, "--json"])
    assert result.exit_code == 0, result.output
    body: dict[str, object] = json.loads(result.output)
    return body


def test_post_processing_modes_reshape_the_printed_body(oracle_cases: Path) -> None:
    case = oracle_cases / "01_seraphina_basic"
    plain = run(case, "--api", "openai-compatible")
    strict = run(case, "--api", "openai-compatible", "--post-processing", "strict")
    single = run(case, "--api", "openai-compatible", "--post-processing", "single")
    roles = [m["role"] for m in strict["messages"]]  # type: ignore[union-attr]
    assert roles[0] == "system" and roles[1] == "user" and "system" not in roles[1:]
    assert len(plain["messages"]) > len(strict["messages"])  # type: ignore[arg-type]
    assert [m["role"] for m in single["messages"]] == ["user"]  # type: ignore[union-attr]


def test_anthropic_and_google_bodies_are_printed(oracle_cases: Path) -> None:
    case = oracle_cases / "01_seraphina_basic"
    claude = run(case, "--api", "anthropic")
    assert {m["role"] for m in claude["messages"]} <= {"user", "assistant"}  # type: ignore[union-attr]
    assert "max_tokens" in claude and "stop_sequences" in claude
    gemini = run(case, "--api", "google")
    assert "contents" in gemini and "safetySettings" in gemini


def test_llamacpp_body_agrees_with_what_sillytavern_sent(oracle_cases: Path) -> None:
    """Every field taverna sends to llama.cpp has the value SillyTavern sent for it."""
    from taverna.cli.prompt import GenerationKind, build_prompt
    from taverna.providers.builders import render_request_body

    case = oracle_cases / "07_text_completion_chatml"
    card = json.loads((case / "case.json").read_text())["characters"][0]["file"]
    prompt, *_ = build_prompt(
        case / "settings.json",
        [case / card],
        case / "chat.jsonl",
        [],
        "textgen",
        GenerationKind.NORMAL,
    )
    body = render_request_body(prompt, "llamacpp")
    expected = json.loads((case / "expected.json").read_text())
    # llama.cpp documents the breakers as an array; SillyTavern keeps its JSON string
    assert body.pop("dry_sequence_breakers") == json.loads(expected["dry_sequence_breakers"])
    # streaming is the connection's choice (this SillyTavern run did not stream)
    assert body.pop("stream") is True
    assert {k: expected[k] for k in body} == body
