"""Every kind of part a prompt ledger can name has the page's words for it (`part.<kind>`)
in English and Chinese: the inspector's part column never shows a raw kind."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = ROOT / "taverna" / "web" / "i18n"
# where ledger lines and the parts they are made from are written
PLACES = ("engine/assembly", "engine/textgen", "engine/assemble.py", "services/plugins")
# calls whose `kind=` is not a ledger part's kind (a prompt's, a sort's)
NOT_PARTS = {"Prompt", "argsort"}
# calls whose first value is the line's kind: a line, or the text ledger's `add(kind,
# source, text, tokens, ...)` (a layout's `add(slot, parts, at)` names a slot)
FIRST_IS_KIND = {"LedgerItem": 1, "add": 4}


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _kinds() -> dict[str, str]:
    """Each kind written in the code that makes ledger lines, with the file it is in."""
    found: dict[str, str] = {}
    paths: list[Path] = []
    for place in PLACES:
        path = ROOT / "taverna" / place
        paths.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            values: list[ast.expr] = []
            if isinstance(node, ast.Call) and _name(node.func) not in NOT_PARTS:
                values += [k.value for k in node.keywords if k.arg == "kind"]
                if len(node.args) >= FIRST_IS_KIND.get(_name(node.func), len(node.args) + 1):
                    values.append(node.args[0])
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.endswith("_KIND") for t in node.targets
            ):
                # a kind kept as a constant (RECALLED_KIND = "recalled_message")
                values.append(node.value)
            for value in values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.setdefault(value.value, path.name)
    return found


def test_the_scan_finds_the_kinds_it_should() -> None:
    kinds = _kinds()
    for kind in ("history", "example", "overhead", "recalled_message", "plugin", "anchor"):
        assert kind in kinds, kind


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_every_part_kind_has_the_pages_words(language: str) -> None:
    catalog = json.loads((CATALOGS / f"{language}.json").read_text(encoding="utf-8"))
    missing = sorted(
        (kind, where) for kind, where in _kinds().items() if not catalog.get(f"part.{kind}")
    )
    assert not missing, f"{language}: no part.* words for {missing}"
    if language == "zh-CN":
        english = [k for k in _kinds() if not re.search(r"[\u4e00-\u9fff]", catalog[f"part.{k}"])]
        assert not english, english
