"""Every error status a route can answer is listed in its OpenAPI schema.

Walks the app's routes. For each, the project's errors it can raise are found in the
source: `raise` statements in its endpoint and its dependencies, and in every function
they call, followed through the package (a call by a bare name to a function of the same
module, `self.name(...)` to a method of the same class, any other call to the one
function or method of that name in the package, when there is exactly one and the name
is not also a builtin's or a builtin type's method). What a background task raises
(`asyncio.create_task(...)`) reaches the route's event stream, not its answer. Each
error's status (`taverna.server.errors.STATUS`) must be among the operation's declared
responses."""

from __future__ import annotations

import ast
import builtins
import inspect
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from taverna.errors import TavernaError
from taverna.server.errors import STATUS

SOURCE = Path(__file__).resolve().parents[2] / "taverna"
SHELL = SOURCE / "cli"
Key = tuple[str, str]  # (file, qualified name)
COMMON = frozenset(
    set(dir(builtins)) | set(dir(dict)) | set(dir(list)) | set(dir(str)) | set(dir(set))
)
BACKGROUND = frozenset({"create_task", "ensure_future", "run_coroutine_threadsafe"})


def _kinds() -> dict[str, type[TavernaError]]:
    found: dict[str, type[TavernaError]] = {}
    todo: list[type[TavernaError]] = [TavernaError]
    while todo:
        kind = todo.pop()
        found[kind.__name__] = kind
        todo.extend(kind.__subclasses__())
    return found


def _index() -> tuple[dict[Key, ast.AST], dict[str, list[Key]]]:
    defs: dict[Key, ast.AST] = {}
    by_name: dict[str, list[Key]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if SHELL in path.parents:
            continue

        def visit(node: ast.AST, prefix: str, file: str = str(path)) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    key = (file, prefix + child.name)
                    defs[key] = child
                    by_name.setdefault(child.name, []).append(key)
                    visit(child, f"{prefix}{child.name}.<locals>.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")

        visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return defs, by_name


KINDS = _kinds()
DEFS, BY_NAME = _index()


def _caught(handler: ast.ExceptHandler) -> set[type[BaseException]]:
    names: list[ast.expr] = []
    if handler.type is None:
        return {BaseException}
    names = list(handler.type.elts) if isinstance(handler.type, ast.Tuple) else [handler.type]
    found: set[type[BaseException]] = set()
    for name in names:
        text = getattr(name, "id", getattr(name, "attr", ""))
        kind = KINDS.get(text) or getattr(builtins, text, None)
        if isinstance(kind, type) and issubclass(kind, BaseException):
            found.add(kind)
    return found


Caught = frozenset[type[BaseException]]


def _name_of(func: ast.expr) -> str:
    return str(getattr(func, "attr", getattr(func, "id", "")))


def _resolve(key: Key, func: ast.expr) -> Key | None:
    """The function a call's target names, where the package says so without doubt."""
    file, qual = key
    owner = qual.rsplit(".", 1)[0] + "." if "." in qual else ""
    if isinstance(func, ast.Name):
        name, local = func.id, [(file, f"{qual}.<locals>.{func.id}"), (file, func.id)]
    elif isinstance(func, ast.Attribute):
        mine = isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")
        name, local = func.attr, [(file, owner + func.attr)] if mine else []
    else:
        return None
    here = [k for k in local if k in DEFS]
    if here:
        return here[0]
    found = BY_NAME.get(name, [])
    return found[0] if len(found) == 1 and name not in COMMON else None


def _visit(key: Key, node: ast.AST, caught: Caught) -> Iterator[tuple[str | Key, Caught]]:
    """What `node` raises itself (an error's name) and calls (a key), each with the
    errors a `try` around it catches. Nested functions run when called, not here."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(child, ast.Try | ast.TryStar):
            inner = caught | {k for h in child.handlers for k in _caught(h)}
            for stmt in child.body:
                yield from _visit(key, stmt, frozenset(inner))
            for part in (*child.handlers, *child.orelse, *child.finalbody):
                yield from _visit(key, part, caught)
            continue
        if isinstance(child, ast.Raise) and child.exc is not None:
            exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
            if _name_of(exc) in KINDS:
                yield _name_of(exc), caught
        if isinstance(child, ast.Call):
            if _name_of(child.func) in BACKGROUND:
                # a task's errors reach its stream, not this answer
                yield from _visit(key, child.func, caught)
                continue
            target = _resolve(key, child.func)
            if target is not None:
                yield target, caught
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            nested = (key[0], f"{key[1]}.<locals>.{child.id}")
            if nested in DEFS:  # a nested function handed to what runs it
                yield nested, caught
        yield from _visit(key, child, caught)


_RUNNING: set[Key] = set()


@cache
def raised(key: Key) -> frozenset[str]:
    """The project's errors `key` can raise, itself or through what it calls."""
    if key in _RUNNING:
        return frozenset()  # a cycle: what it raises is counted where it began
    _RUNNING.add(key)
    found: set[str] = set()
    try:
        for what, caught in _visit(key, DEFS[key], frozenset()):
            kinds = {what} if isinstance(what, str) else raised(what)
            found |= {k for k in kinds if not any(issubclass(KINDS[k], c) for c in caught)}
    finally:
        _RUNNING.discard(key)
    return frozenset(found)


def status_of(kind: type[TavernaError]) -> str:
    return str(next((status for base, status in STATUS if issubclass(kind, base)), 400))


def _key(call: Callable[..., Any]) -> Key | None:
    target = inspect.unwrap(call)
    try:
        file = inspect.getsourcefile(target)
    except TypeError:
        return None
    key = (str(file), getattr(target, "__qualname__", ""))
    return key if key in DEFS else None


def _dependencies(dependant: Any) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _dependencies(sub)


def _routes(routes: list[Any]) -> Iterator[APIRoute]:
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes)
        elif isinstance(route, APIRoute):
            yield route


def undeclared(client: TestClient) -> dict[str, list[str]]:
    schema = client.get("/openapi.json").json()
    missing: dict[str, list[str]] = {}
    for route in _routes(client.app.routes):  # type: ignore[attr-defined]
        kinds: set[str] = set()
        for call in [route.endpoint, *_dependencies(route.dependant)]:
            key = _key(call)
            if key is not None:
                kinds |= raised(key)
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
        for method in sorted(route.methods - {"HEAD"}):
            declared = set(schema["paths"][path][method.lower()]["responses"])
            lacking = sorted(
                f"{status_of(KINDS[kind])} ({kind})"
                for kind in kinds
                if status_of(KINDS[kind]) not in declared
            )
            if lacking:
                missing[f"{method} {path}"] = lacking
    return missing


def test_the_walk_finds_what_routes_raise() -> None:
    # The summary's model error is found three calls down (route, generator, its ask); its
    # 404 comes through `endpoint`/`get_chat`, names defined in several places, which the
    # walk leaves unresolved rather than guess (the route declares 404 by hand).
    summary = next(k for k in DEFS if k[1] == "make_summary")
    assert "ProviderError" in raised(summary)
    round_state = next(k for k in DEFS if k[1] == "GenerationService.round_state")
    assert raised(round_state) == {"NotFound"}


def test_every_error_a_route_can_answer_is_declared(client: TestClient) -> None:
    assert undeclared(client) == {}
