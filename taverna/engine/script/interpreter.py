"""Running a parsed script: closures, the pipe, argument substitution, limits.

Each command's result becomes the pipe; a command without an unnamed argument gets the
pipe as one (unless `||` came before it). Argument values are substituted when the
command runs: `{{pipe}}`, `{{var::name}}`, closure macros such as `{{timesIndex}}`, then
the ordinary macros (which read and write the chat and global variables the script
sees). A script stops with a `ScriptError` when it runs more than `max_steps`
commands or for longer than `max_seconds` (by the clock it is given), so an endless
loop ends with a clear message instead of a hang.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from taverna.engine.macros import MacroContext, Variables, evaluate
from taverna.engine.script.errors import ScriptError, line_column
from taverna.engine.script.host import ChatHost, NoChat
from taverna.engine.script.parser import (
    PARSER_FLAGS,
    REPLACE_GETVAR,
    ClosureNode,
    CommandShape,
    Executor,
    Script,
    parse,
)
from taverna.engine.script.scope import ClosureValue, ReadValue, Scope, ScriptValue
from taverna.engine.script.values import js_value_text, read_number

__all__ = [
    "Call",
    "Command",
    "Limits",
    "ScriptContext",
    "ScriptResult",
    "run",
]

Argument = str | ClosureValue
Unnamed = Argument | list[Argument] | None

_SCOPED = re.compile(
    r"\{\{pipe\}\}|\{\{var::(?P<var>[^\s}:]+?)(?:::(?P<index>(?:(?!\}\}).)+))?\}\}"
)
_GETVAR = re.compile(r"\{\{(?P<which>get(?:global)?var)::(?P<variable>[^}]+)\}\}", re.IGNORECASE)
_CLOSURE_MACRO = re.compile(r"\{\{(?P<name>timesIndex|arg::[^}]*)\}\}")


class Handler(Protocol):
    def __call__(self, call: Call, /) -> ScriptValue | float | int: ...


@dataclass(frozen=True, slots=True)
class Command:
    """A command: its name, aliases, how its unnamed argument is read, and what it does."""

    name: str
    handler: Handler
    help: str
    aliases: tuple[str, ...] = ()
    split: bool = False
    split_count: int | None = None
    usage: str = ""

    @property
    def shape(self) -> CommandShape:
        return CommandShape(self.split, self.split_count)


@dataclass(frozen=True, slots=True)
class Limits:
    """How far a script may go: commands run, seconds, loop turns, nesting."""

    max_steps: int = 100_000
    max_seconds: float = 10.0
    max_loop: int = 100  # SillyTavern's guard for /while and /times (off with guard=off)
    max_depth: int = 60
    max_text: int = 1_000_000


@dataclass(frozen=True, slots=True)
class ScriptContext:
    """Everything a script run depends on.

    `macros` fills `{{user}}`, `{{char}}` and the rest (its `variables` are replaced by
    `variables`); `clock` gives seconds for the time limit; `seed` seeds `/roll` and
    `/rand`. `quick_reply_depth` counts Quick Replies running one another.
    """

    variables: Variables = field(default_factory=Variables)
    macros: MacroContext = field(default_factory=MacroContext)
    host: ChatHost = field(default_factory=NoChat)
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] | None = None
    seed: int = 0
    arguments: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScriptResult:
    """What a script left: its final pipe, the variables after it, and how it ended."""

    pipe: str
    variables: Variables
    aborted: bool = False
    abort_reason: str = ""
    steps: int = 0
    notices: tuple[tuple[str, str], ...] = ()


class _Break(Exception):  # control flow, not an error
    def __init__(self, value: ScriptValue) -> None:
        self.value = value


class _Abort(Exception):  # control flow, not an error
    def __init__(self, reason: str) -> None:
        self.reason = reason


@dataclass(slots=True)
class Call:
    """One command being run: its arguments after substitution, its scope, the run."""

    name: str
    run: Run
    scope: Scope
    named: dict[str, Argument]
    value: Unnamed
    has_unnamed: bool
    executor: Executor

    def arg(self, name: str, default: str | None = None) -> str | None:
        """A named argument as text (a closure there is an error)."""
        value = self.named.get(name)
        if value is None:
            return default
        if isinstance(value, ClosureValue):
            raise ScriptError(
                f"argument {name!r} cannot be a closure",
                code="argument_cannot_be_closure",
                params={"name": str(name)},
            )
        return value

    def text(self) -> str:
        """The unnamed argument as text: list parts joined by spaces, '' when absent."""
        value = self.value
        if value is None:
            return ""
        if isinstance(value, list):
            return " ".join(str(part) for part in value)
        return str(value)

    def parts(self) -> list[Argument]:
        value = self.value
        if value is None:
            return []
        if isinstance(value, list):
            return list(value)
        return [value]

    @property
    def variables(self) -> Variables:
        return self.run.variables

    @variables.setter
    def variables(self, value: Variables) -> None:
        self.run.variables = value


class Run:
    """The state of one script run."""

    def __init__(self, script: Script, context: ScriptContext, commands: Mapping[str, Command]):
        self.script = script
        self.text = script.text
        self.context = context
        self.commands = commands
        self.variables = context.variables
        self.host = context.host
        self.limits = context.limits
        self.random = random.Random(context.seed)
        self.steps = 0
        self.depth = 0
        self.clock = context.clock
        self.deadline = None if self.clock is None else self.clock() + self.limits.max_seconds
        # The parser flags of the command being run (REPLACE_GETVAR changes substitution).
        self.flags: frozenset[str] = frozenset()
        # How many loops and /run calls are running: /break leaves the innermost one;
        # with none (the script's own level) SillyTavern 1.12.6 only puts its value in
        # the pipe and goes on.
        self.breakable = 0
        # The chat changes the host had made when the macros last read the chat.
        self.chat_writes = 0

    def set_input(self, text: str) -> None:
        """`/setinput`: `{{input}}` reads the new text from here on, as the page does."""
        self.host.set_input(text)
        self.context = replace(self.context, macros=replace(self.context.macros, input=text))

    # ------------------------------------------------------------------ limits

    def tick(self, executor: Executor) -> None:
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise self.located(
                ScriptError(
                    f"the script ran more than {self.limits.max_steps} commands "
                    "(an endless loop?) and was stopped",
                    code="script_ran_more_than_commands",
                    params={"max_steps": str(self.limits.max_steps)},
                ),
                executor,
            )
        if self.deadline is not None and self.clock is not None and self.clock() > self.deadline:
            raise self.located(
                ScriptError(
                    f"the script ran longer than {self.limits.max_seconds:g} seconds "
                    "and was stopped",
                    code="script_ran_longer_than_seconds",
                    params={"max_seconds": format(self.limits.max_seconds, "g")},
                ),
                executor,
            )

    def located(self, error: ScriptError, executor: Executor) -> ScriptError:
        line, column = line_column(self.text, executor.start)
        return error.locate(executor.name if executor.name not in ("", ":") else None, line, column)

    # --------------------------------------------------------------- closures

    def closure(self, node: ClosureNode, scope: Scope | None) -> ClosureValue:
        return ClosureValue(node, scope)

    def call(
        self,
        closure: ClosureValue,
        *,
        parent: Scope | None = None,
        provided: Mapping[str, ScriptValue] | None = None,
        macros: Mapping[str, str] | None = None,
    ) -> ScriptValue:
        """Run a closure in a fresh scope under `parent` (default: where it was made)."""
        self.depth += 1
        if self.depth > self.limits.max_depth:
            self.depth -= 1
            raise ScriptError(
                f"closures called one another more than {self.limits.max_depth} deep",
                code="closures_called_one_another_more",
                params={"max_depth": str(self.limits.max_depth)},
            )
        try:
            scope = Scope(parent if parent is not None else closure.parent)
            if macros:
                scope.macros.update(macros)
            for parameter in closure.node.parameters:
                scope.let(parameter.name, self.value(parameter.value, scope))
            for name, value in (provided or closure.provided).items():
                if name in scope.variables:
                    scope.variables[name] = value
            return self.execute(closure.node, scope)
        finally:
            self.depth -= 1

    def execute(self, node: ClosureNode, scope: Scope) -> ScriptValue:
        if not node.executors:
            scope.pipe = ""
        first = True
        for executor in node.executors:
            self.tick(executor)
            if executor.kind == "break":
                value = self.unnamed(executor, first, scope, split=False)
                broke = scope.pipe if value is None else _single(value)
                if self.breakable:
                    raise _Break(broke)
                scope.pipe = broke
            else:
                scope.pipe = self.command(executor, scope, first)
            first = False
        return scope.pipe

    def command(self, executor: Executor, scope: Scope, first: bool) -> ScriptValue:
        name = "run" if executor.kind == "run" else executor.name
        command = self.commands.get(name)
        if command is None:  # the parser checked; kept for scripts parsed elsewhere
            raise self.located(
                ScriptError(
                    f"unknown command /{name}", code="unknown_command", params={"name": str(name)}
                ),
                executor,
            )
        self.flags = executor.flags
        try:
            named = {
                argument.name: self.value(argument.value, scope) for argument in executor.named
            }
            value = self.unnamed(executor, first, scope, split=command.split)
            has_unnamed = bool(executor.unnamed) or (
                first is False and executor.inject_pipe and scope.pipe is not None
            )
            call = Call(name, self, scope, named, value, has_unnamed, executor)
            result = command.handler(call)
        except ScriptError as error:
            raise self.located(error, executor) from None
        except (ValueError, ArithmeticError, IndexError, KeyError) as error:
            raise self.located(
                ScriptError(
                    f"failed: {error}", code="command_failed", params={"error": str(error)}
                ),
                executor,
            ) from None
        if result is None:
            return ""
        if isinstance(result, ClosureValue):
            return result
        if isinstance(result, str):
            if len(result) > self.limits.max_text:
                raise self.located(
                    ScriptError(
                        f"a value longer than {self.limits.max_text} characters",
                        code="value_longer_than_characters",
                        params={"max_text": str(self.limits.max_text)},
                    ),
                    executor,
                )
            return result
        return js_value_text(result)

    # -------------------------------------------------------------- arguments

    def value(self, raw: str | ClosureNode, scope: Scope) -> Argument:
        """A written value, substituted: a closure (run now if marked `()`) or text."""
        if isinstance(raw, ClosureNode):
            closure = self.closure(raw, scope)
            if raw.execute_now:
                result = self.call(closure)
                return "" if result is None else result
            return closure
        substituted = self.substitute(raw, scope)
        if isinstance(substituted, str):
            return _unescape(substituted)
        return substituted

    def unnamed(self, executor: Executor, first: bool, scope: Scope, *, split: bool) -> Unnamed:
        if not executor.unnamed:
            if not first and executor.inject_pipe:
                return scope.pipe
            return None
        values = [self.value(raw, scope) for raw in executor.unnamed]
        if split:
            return values
        if len(values) == 1:
            return values[0]
        if any(isinstance(value, ClosureValue) for value in values):
            return values
        return "".join(str(value) for value in values)

    def substitute(self, text: str, scope: Scope) -> Argument:
        """`{{pipe}}`, `{{var::}}` and closure macros, then the ordinary macros between them."""
        if "{{" not in text:
            return self.macros(text)
        parts: list[str] = []
        position = 0
        for match in _scoped_matches(text, REPLACE_GETVAR in self.flags):
            replacement = self.scoped(match, scope)
            if isinstance(replacement, ClosureValue):
                if match.start() == 0 and match.end() == len(text):
                    return replacement
                replacement = str(replacement)
            parts.append(self.macros(text[position : match.start()]))
            parts.append(replacement)
            position = match.end()
        parts.append(self.macros(text[position:]))
        return "".join(parts)

    def scoped(self, match: re.Match[str], scope: Scope) -> str | ClosureValue:
        if match.re is _GETVAR:
            # REPLACE_GETVAR: the value goes in as it is, never read for macros again.
            is_global = match.group("which").lower() == "getglobalvar"
            stored = self.variables.scope(is_global).get(match.group("variable").strip())
            read = read_number(stored)
            return read if isinstance(read, str) else js_value_text(read)
        if match.re is _CLOSURE_MACRO:
            # Outside a loop `{{timesIndex}}` stays, so a quoted loop body still sees it.
            macro = scope.macro(match.group("name"))
            return match.group(0) if macro is None else macro
        if match.group("var") is None:
            pipe = scope.pipe
            return "" if pipe is None else pipe
        value: ReadValue = scope.get(match.group("var"), match.group("index"))
        if isinstance(value, ClosureValue):
            return value
        return value if isinstance(value, str) else js_value_text(value)

    def macros(self, text: str) -> str:
        # Without `{{` only the legacy `<USER>`-style tags could change (§8): most
        # arguments have neither, and skip the macro engine.
        if "{{" not in text and "<" not in text:
            return text
        writes = self.host.writes()
        if writes != self.chat_writes:
            # SillyTavern's macros read the chat as it is at each command.
            self.chat_writes = writes
            fresh = self.host.chat_macros(self.context.macros)
            self.context = replace(self.context, macros=fresh)
        context = replace(self.context.macros, variables=self.variables)
        result = evaluate(text, context)
        self.variables = result.variables
        return result.text

    # ------------------------------------------------------------------ flow

    def abort(self, reason: str) -> None:
        raise _Abort(reason)

    def loop(
        self,
        body: ClosureValue | str,
        scope: Scope,
        macros: Mapping[str, str] | None = None,
        provided: Mapping[str, ScriptValue] | None = None,
    ) -> tuple[ScriptValue, bool]:
        """Run a loop body (or a /run target) once; (its result, whether it broke out)."""
        self.breakable += 1
        try:
            if isinstance(body, ClosureValue):
                return self.call(body, parent=scope, macros=macros, provided=provided), False
            return self.run_text(body, scope, macros=macros), False
        except _Break as stop:
            return stop.value, True
        finally:
            self.breakable -= 1

    def run_text(
        self, text: str, scope: Scope, *, macros: Mapping[str, str] | None = None
    ) -> ScriptValue:
        """A command given as text (`/if ... /echo yes`): parsed and run in a child scope."""
        if len(text) >= 2 and text.startswith('"') and text.endswith('"'):
            text = text[1:-1]
        script = parse(text, self.shape_of, flags=self.flags)
        inner = Run(script, self.context, self.commands)
        inner.variables = self.variables
        inner.random = self.random
        inner.steps = self.steps
        inner.depth = self.depth + 1
        if inner.depth > self.limits.max_depth:
            raise ScriptError(
                f"commands ran one another more than {self.limits.max_depth} deep",
                code="commands_ran_one_another_more",
                params={"max_depth": str(self.limits.max_depth)},
            )
        inner.deadline = self.deadline
        inner.breakable = self.breakable
        child = Scope(scope)
        if macros:
            child.macros.update(macros)
        try:
            return inner.execute(script.root, child)
        finally:
            self.variables = inner.variables
            self.steps = inner.steps

    def shape_of(self, name: str) -> CommandShape | None:
        command = self.commands.get(name)
        return None if command is None else command.shape


def _scoped_matches(text: str, getvar: bool = False) -> Iterable[re.Match[str]]:
    matches = list(_SCOPED.finditer(text)) + list(_CLOSURE_MACRO.finditer(text))
    if getvar:
        matches += list(_GETVAR.finditer(text))
    matches.sort(key=lambda match: match.start())
    end = -1
    for match in matches:
        if match.start() >= end:
            end = match.end()
            yield match


def _unescape(text: str) -> str:
    return text.replace("\\{", "{").replace("\\}", "}")


def _single(value: Argument | list[Argument]) -> ScriptValue:
    if isinstance(value, list):
        return " ".join(str(part) for part in value)
    return value


def run(text: str, context: ScriptContext, commands: Mapping[str, Command]) -> ScriptResult:
    """Parse and run `text`; a `ScriptError` names the command and the line:column."""

    def shape_of(name: str) -> CommandShape | None:
        command = commands.get(name)
        return None if command is None else command.shape

    try:
        script = parse(
            text, shape_of, flags=frozenset(PARSER_FLAGS), max_depth=context.limits.max_depth
        )
    except RecursionError:
        raise ScriptError(
            "the script nests too deeply to read", code="script_nests_too_deeply_to_read"
        ) from None
    state = Run(script, context, commands)
    scope = Scope()
    for name, value in context.arguments.items():
        scope.let(name, value)
    aborted = False
    reason = ""
    try:
        pipe = state.execute(script.root, scope)
    except _Break as stop:
        pipe = stop.value
    except _Abort as stop:
        pipe, aborted, reason = "", True, stop.reason
    except RecursionError:
        error = ScriptError(
            "the script nests too deeply to run", code="script_nests_too_deeply_to_run"
        )
        error.variables = state.variables
        raise error from None
    except ScriptError as error:
        # What the commands before the failing one set stays set, as in SillyTavern.
        error.variables = state.variables
        raise
    notices: tuple[tuple[str, str], ...] = ()
    if isinstance(context.host, NoChat):
        notices = tuple(context.host.notices)
    return ScriptResult(
        pipe="" if pipe is None else str(pipe),
        variables=state.variables,
        aborted=aborted,
        abort_reason=reason,
        steps=state.steps,
        notices=notices,
    )
