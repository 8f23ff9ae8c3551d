"""The server and the command line are thin callers of services (STYLE.md, "The CLI mirrors
the server"): none of their modules reaches the store through an attribute.

The import-linter contract in pyproject.toml keeps them from importing `taverna.store`;
this test closes the other door, `ctx.store.list_chats(...)`, `folder.store.tree(...)`,
`lib.store.put_document(...)`: every such read or write is a service function with a name.

There is no exception: the workspace that opens the store and closes it
(`services/house/workspace.py`, `services/house/data.py`) is itself a service, and the shells open
and close it through `open_workspace`/`open_context` and `close()` without touching the
store. A shell that needs something new from the store needs a new service function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import taverna

PACKAGE = Path(taverna.__file__).parent
SHELLS = ("server", "cli")


def _store_reads(source: str, name: str) -> list[str]:
    """Each place in `source` that reads an attribute named `store`, as `name:line: code`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=name)):
        reach = isinstance(node, ast.Attribute) and node.attr == "store"
        # getattr(ctx, "store") is the same reach, spelled so that a search misses it.
        reach = reach or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "store"
        )
        if reach:
            found.append((getattr(node, "lineno", 0), ast.unparse(node)))
    return [f"{name}:{line}: {code}" for line, code in sorted(found)]


def _shell_modules() -> list[Path]:
    return sorted(p for shell in SHELLS for p in (PACKAGE / shell).rglob("*.py"))


def test_the_shells_are_found() -> None:
    names = {p.relative_to(PACKAGE).as_posix() for p in _shell_modules()}
    assert {"server/routes/chats.py", "server/context.py", "cli/chats.py"} <= names


def test_no_route_or_command_reaches_the_store() -> None:
    found = [
        line
        for path in _shell_modules()
        for line in _store_reads(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))
    ]
    assert not found, (
        "routes and commands call services, never the store; move these behind a "
        "service function:\n" + "\n".join(found)
    )


def test_the_check_sees_each_way_of_reaching_the_store() -> None:
    source = (
        "def f(ctx, folder, lib):\n"
        "    ctx.store.list_chats()\n"
        "    LibraryService(folder.store)\n"
        "    getattr(lib, 'store')\n"
        "    ctx.stores, ctx.chats.get_chat('x')\n"
    )
    assert [line.split(": ", 1)[1] for line in _store_reads(source, "sample.py")] == [
        "ctx.store",
        "folder.store",
        "getattr(lib, 'store')",
    ]
