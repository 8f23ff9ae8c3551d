"""Prompts as SillyTavern 1.12.6 sent them, for rules recorded here: replayed through
`taverna prompt` and compared line by line with the oracle's own comparer.

Each case under `st126/prompts/` (written by `make_prompt_cases.py`, recorded with the
capture harness's `capture.py`) holds SillyTavern's input files and the request body
1.12.6 sent: a Join group's character notes, a character's extra lorebooks under each
insertion strategy, a card's scoped regex scripts allowed or not. A case taverna does not
agree with is listed with its reason in `st126/known_differences_prompts.json` and runs as
a strict xfail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.oracle.test_oracle import check_case, compare_module

ROOT = Path(__file__).parent / "st126"
CASES = ROOT / "prompts"
KNOWN_FILE = ROOT / "known_differences_prompts.json"
KNOWN: dict[str, str] = json.loads(KNOWN_FILE.read_text()) if KNOWN_FILE.exists() else {}


def _params() -> list[Any]:
    names = sorted(p.name for p in CASES.iterdir() if (p / "expected.json").exists())
    return [
        pytest.param(
            name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else [],
            id=name,
        )
        for name in names
    ]


@pytest.mark.parametrize("name", _params())
def test_prompt_case(name: str, oracle_cases: Path) -> None:
    check_case(CASES / name, compare_module(oracle_cases))
