"""STscript conformance: scripts and what SillyTavern's documented behaviour gives for them.

Each `cases/*.toml` file holds `[[case]]` tables: `script`, and what is expected —
`pipe` (the final result), `contains` (parts of it), `local`/`global` (the variables
afterwards, as text), `log` (the chat effects, in order), `notices`, `aborted`, or
`error` (parts of the error message). `given_local`/`given_global` set variables before
the run, `quick_replies` maps `Set.Label` to a script.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.macros import MacroContext, Variables
from taverna.engine.script import ScriptContext, ScriptError, run_script
from taverna.engine.script.values import js_value_text
from tests.engine.script.host import RecordingHost

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Any]:
    found = []
    for path in sorted(CASES.glob("*.toml")):
        for index, case in enumerate(tomllib.loads(path.read_text("utf-8"))["case"]):
            name = case.get("name") or f"{path.stem}-{index}"
            found.append(pytest.param(case, id=f"{path.stem}:{name}"))
    return found


ALL_CASES = _cases()


def test_the_suite_is_large_enough() -> None:
    assert len(ALL_CASES) >= 150


def _texts(values: Any) -> dict[str, str]:
    return {key: js_value_text(value) for key, value in dict(values).items()}


@pytest.mark.parametrize("case", ALL_CASES)
def test_script(case: dict[str, Any]) -> None:
    host = RecordingHost(case.get("quick_replies"))
    context = ScriptContext(
        variables=Variables(
            local=dict(case.get("given_local", {})), global_=dict(case.get("given_global", {}))
        ),
        macros=MacroContext(user="Ann", char="Bob"),
        host=host,
        seed=case.get("seed", 1),
    )
    if "error" in case:
        with pytest.raises(ScriptError) as raised:
            run_script(case["script"], context)
        message = str(raised.value)
        for part in [case["error"]] if isinstance(case["error"], str) else case["error"]:
            assert part in message, message
        return
    result = run_script(case["script"], context)
    if "pipe" in case:
        assert result.pipe == case["pipe"]
    for part in case.get("contains", []):
        assert part in result.pipe
    if "local" in case:
        assert _texts(result.variables.local) == case["local"]
    if "global" in case:
        assert _texts(result.variables.global_) == case["global"]
    if "log" in case:
        assert host.log == case["log"]
    if "notices" in case:
        assert host.notices == case["notices"]
    assert result.aborted == case.get("aborted", False)
