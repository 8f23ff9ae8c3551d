"""The shape of the package: no import circles, and no module started by name from below.

The import contracts (`lint-imports`, pyproject.toml) keep every import pointing down:
shells over services, the domains inside services in their order, the engine's layers. Two
things they do not see are checked here: a circle of imports inside one layer, and a lower
layer naming a module of an upper one as text (`python -m taverna.server...`), which starts
it all the same.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grimp

import taverna

PACKAGE = Path(taverna.__file__).resolve().parent

# Top to bottom, as the contracts say; a layer may name only modules of its own or below.
LAYERS = ("cli", "server", "services", "engine formats providers store", "model", "errors")
DOMAINS = (
    "house",
    "turns",
    "scripts memory",
    "chats accounts",
    "interchange",
    "library connections plugins",
)
_DOTTED = re.compile(r"taverna(?:\.[A-Za-z_]\w*)+")


def _rank(names: tuple[str, ...], name: str) -> int | None:
    return next((i for i, layer in enumerate(names) if name in layer.split()), None)


def _place(module: str) -> tuple[int, int]:
    """(layer, domain) of a module: lower numbers are higher up; -1 when outside any."""
    parts = module.split(".")
    layer = _rank(LAYERS, parts[1]) if len(parts) > 1 else None
    domain = _rank(DOMAINS, parts[2]) if len(parts) > 2 and parts[1] == "services" else None
    return (-1 if layer is None else layer, -1 if domain is None else domain)


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # iterative depth-first search: the graph is deeper than Python's recursion limit likes
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_circles() -> None:
    """No module reaches itself through imports, type-checking ones included."""
    graph = grimp.build_graph("taverna")
    assert len(graph.modules) > 300  # the whole package was read
    assert _cycles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    """The check above can fail: a circle added to the graph is found."""
    graph = grimp.build_graph("taverna")
    graph.add_import(importer="taverna.model.chat", imported="taverna.services.house.workspace")
    assert any("taverna.model.chat" in group for group in _cycles(graph))


def names_above(path: Path) -> list[str]:
    """The module names a file's text gives (`"taverna.server.x"`) that sit above it."""
    module = "taverna." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    here = _place(module)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # docstrings and other bare strings only talk about modules
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if id(node) in prose:
            continue
        for name in _DOTTED.findall(node.value):
            there = _place(name)
            if there[0] < 0 or here[0] < 0:
                continue
            if there[0] < here[0] or (there[0] == here[0] == 2 and 0 <= there[1] < here[1]):
                found.append(f"{module}: {name}")
    return found


def test_no_module_starts_one_above_it_by_name() -> None:
    offenders = [
        found
        for path in sorted(PACKAGE.rglob("*.py"))
        if "migrations" not in path.parts
        for found in names_above(path)
    ]
    assert offenders == []


def test_a_name_from_below_is_found(tmp_path: Path) -> None:
    """A services module that names the server's module is caught."""
    services = PACKAGE / "services" / "chats"
    fake = services / "_shape_probe.py"
    fake.write_text('COMMAND = ["python", "-m", "taverna.server.app"]\n', encoding="utf-8")
    try:
        assert names_above(fake) == ["taverna.services.chats._shape_probe: taverna.server.app"]
    finally:
        fake.unlink()
