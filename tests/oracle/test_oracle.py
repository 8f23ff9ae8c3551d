"""Every SillyTavern oracle case through `taverna prompt`, compared line by line.

The cases hold SillyTavern's own input files and the request body SillyTavern
sent; the comparison is the oracle's own (`compare.py`), run in-process.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from taverna.cli.main import _register, app


def compare_module(cases: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("oracle_compare", cases.parent / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _case_dirs() -> list[str]:
    from tests.conftest import shared_dir

    root = shared_dir() / "oracle" / "cases"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "case.json").exists())


def check_case(case_dir: Path, compare: ModuleType) -> None:
    """`taverna prompt` on a recorded case gives, line by line, the body SillyTavern sent."""
    case = json.loads((case_dir / "case.json").read_text())
    _register()
    runner = CliRunner()
    expected_files = sorted(case_dir.glob("expected*.json"))
    assert expected_files
    for generation, expected_file in enumerate(expected_files):
        command = compare.command_for(case_dir, case, ["taverna"], generation)[1:]
        result = runner.invoke(app, command, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        got = json.loads(result.stdout)
        expected = json.loads(expected_file.read_text())
        api = case.get("api", "cc")
        assert compare.lines_of(got, api) == compare.lines_of(expected, api)


@pytest.mark.parametrize("name", _case_dirs() or ["(no cases)"])
def test_oracle_case(name: str, oracle_cases: Path) -> None:
    check_case(oracle_cases / name, compare_module(oracle_cases))
