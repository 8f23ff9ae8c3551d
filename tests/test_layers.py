"""The layer contract (ARCHITECTURE.md §2): `formats` and `model` import nothing above them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "taverna"


def _imports(path: Path, root: Path = PACKAGE) -> set[str]:
    """Every taverna module a file imports, at any depth (functions included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(root.parent).parts[:-1])
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return {name for name in out if name == "taverna" or name.startswith("taverna.")}


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _files(layer: str) -> list[Path]:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, layer
    return files


@pytest.mark.parametrize("path", _files("formats"), ids=lambda p: p.name)
def test_formats_import_no_upper_layer(path: Path) -> None:
    upper = ("engine", "services", "store", "server", "cli")
    banned = tuple(f"taverna.{layer}" for layer in upper)
    assert sorted(n for n in _imports(path) if _under(n, banned)) == []


@pytest.mark.parametrize("path", _files("model"), ids=lambda p: p.name)
def test_model_imports_only_model_and_errors(path: Path) -> None:
    allowed = ("taverna.model", "taverna.errors")
    # `from taverna import errors` names the package itself, then the module
    bad = [n for n in _imports(path) if n != "taverna" and not _under(n, allowed)]
    assert sorted(bad) == []


def test_the_check_sees_nested_and_relative_imports(tmp_path: Path) -> None:
    """An import inside a function and a relative import are both found."""
    root = tmp_path / "taverna"
    (root / "formats").mkdir(parents=True)
    module = root / "formats" / "bad.py"
    module.write_text("def f():\n    from ..engine import assembly\n    import taverna.cli\n")
    found = _imports(module, root)
    assert {"taverna.engine", "taverna.engine.assembly", "taverna.cli"} <= found
