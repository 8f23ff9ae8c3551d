"""Control flow and scoped variables: /let /var /if /while /times /run /abort /pass (/return)."""

from __future__ import annotations

from taverna.engine.macros.js import js_number
from taverna.engine.script.errors import ScriptError
from taverna.engine.script.interpreter import Argument, Call, Command
from taverna.engine.script.parser import parse
from taverna.engine.script.scope import ClosureValue, ScriptValue
from taverna.engine.script.values import is_false, js_value_text, read_number

Operand = str | float


def _declare_or_assign(call: Call, *, declare: bool) -> ScriptValue:
    key = call.arg("key")
    parts = call.parts()
    if key is None:
        if not parts and declare:
            return ""  # SillyTavern 1.12.6: a bare /let does nothing
        if not parts:
            raise ScriptError("name the variable", code="name_variable")
        first = parts.pop(0)
        if not isinstance(first, str):
            raise ScriptError("a variable name must be text", code="variable_name_must_be_text")
        key = first
        has_value = bool(parts)
    else:
        has_value = call.has_unnamed and bool(parts)
    value: ScriptValue = None
    if has_value:
        value = parts[0] if isinstance(parts[0], ClosureValue) else " ".join(map(str, parts))
    if declare:
        call.scope.let(key, value)
        return value if value is not None else ""
    if not has_value:
        read = call.scope.get(key, call.arg("index"))
        return read if isinstance(read, str | ClosureValue) else js_value_text(read)
    call.scope.set(key, value, call.arg("index"), call.arg("as"))
    return value


def let(call: Call) -> ScriptValue:
    return _declare_or_assign(call, declare=True)


def var(call: Call) -> ScriptValue:
    return _declare_or_assign(call, declare=False)


def _operand(call: Call, raw: Argument | None) -> Operand:
    """algo-chat-ops.md §9.2: number literal, scoped, chat, global variable, else the text."""
    if raw is None or raw == "":
        return ""
    text = str(raw)
    number = js_number(text)
    if number is not None:
        return number
    if call.scope.exists(text):
        value = call.scope.get(text)
        return str(value) if isinstance(value, ClosureValue) else value
    variables = call.variables
    if text in variables.local:
        return read_number(variables.local[text])
    if text in variables.global_:
        return read_number(variables.global_[text])
    return text


def _first(call: Call, *names: str) -> Argument | None:
    for name in names:
        value = call.named.get(name)
        if value:  # SillyTavern: `args.a || args.left || ...`, so '' falls through
            return value
    return None


def condition(call: Call) -> bool:
    """The `left`/`right`/`rule` test of /if and /while."""
    left = _operand(call, _first(call, "a", "left", "first", "x"))
    right = _operand(call, _first(call, "b", "right", "second", "y"))
    rule = call.arg("rule")
    if not rule:
        raise ScriptError(
            "the rule must be given (eq, neq, lt, gt, lte, gte, not, in, nin)",
            code="rule_must_be_given_eq",
        )
    if isinstance(left, float) and isinstance(right, float):
        numeric = {
            "not": lambda: not left,
            "gt": lambda: left > right,
            "gte": lambda: left >= right,
            "lt": lambda: left < right,
            "lte": lambda: left <= right,
            "eq": lambda: left == right,
            "neq": lambda: left != right,
        }
        if rule not in numeric:
            raise ScriptError(
                f"unknown rule {rule!r} for numbers (eq neq lt gt lte gte not)",
                code="unknown_rule_for_numbers_eq",
                params={"rule": str(rule)},
            )
        return numeric[rule]()
    a = (left if isinstance(left, str) else js_value_text(left)).lower()
    b = (right if isinstance(right, str) else js_value_text(right)).lower()
    textual = {
        "in": lambda: b in a,
        "nin": lambda: b not in a,
        "eq": lambda: a == b,
        "neq": lambda: a != b,
    }
    if rule not in textual:
        raise ScriptError(
            f"unknown rule {rule!r} for text (eq neq in nin)",
            code="unknown_rule_for_text_eq",
            params={"rule": str(rule)},
        )
    return textual[rule]()


def _body(parts: list[Argument]) -> ClosureValue | str | None:
    if not parts:
        return None
    if isinstance(parts[0], ClosureValue):
        return parts[0]
    return " ".join(str(part) for part in parts)


def if_(call: Call) -> ScriptValue:
    passed = condition(call)
    body = _body(call.parts())
    if passed and body:
        if isinstance(body, ClosureValue):
            return call.run.call(body, parent=call.scope)
        return call.run.run_text(body, call.scope)
    otherwise = call.named.get("else")
    if not passed and otherwise:
        if isinstance(otherwise, ClosureValue):
            return call.run.call(otherwise, parent=call.scope)
        return call.run.run_text(otherwise, call.scope)
    return ""


def _turns(call: Call, name: str) -> int:
    guard = call.named.get("guard")
    if isinstance(guard, ClosureValue):
        raise ScriptError(
            f"argument 'guard' cannot be a closure for /{name}",
            code="argument_guard_cannot_be_closure",
            params={"name": str(name)},
        )
    return 2**53 if is_false(guard) else call.run.limits.max_loop


def while_(call: Call) -> ScriptValue:
    body = _body(call.parts())
    result: ScriptValue = ""
    for _ in range(_turns(call, "while")):
        if not (condition(call) and body):
            break
        result, broke = call.run.loop(body, call.scope)
        if broke:
            break
    return result


def times(call: Call) -> ScriptValue:
    parts = call.parts()
    if not parts:
        return ""
    repeats = js_number(str(parts[0]))
    body = _body(parts[1:])
    if repeats is None or body is None:
        return ""
    result: ScriptValue = ""
    count = min(repeats, _turns(call, "times"))
    index = 0
    while index < count:
        if isinstance(body, ClosureValue):
            result, broke = call.run.loop(body, call.scope, {"timesIndex": str(index)})
        else:
            result, broke = call.run.loop(body.replace("{{timesIndex}}", str(index)), call.scope)
        if broke:
            break
        index += 1
    return result


def run(call: Call) -> ScriptValue:
    target = call.value
    if isinstance(target, list):
        target = target[0] if target else None
    if not target:
        raise ScriptError(
            "name a closure or a Quick Reply to run", code="name_closure_or_quick_reply"
        )
    if isinstance(target, ClosureValue):
        result, _ = call.run.loop(target, call.scope)
        return result
    name = target.strip()
    if call.scope.exists(name):
        closure = call.scope.get(name)
        if not isinstance(closure, ClosureValue):
            raise ScriptError(
                f'"{name}" is not a closure', code="is_not_closure", params={"name": str(name)}
            )
        wanted = {parameter.name for parameter in closure.node.parameters}
        provided: dict[str, ScriptValue] = {
            key: value for key, value in call.named.items() if key in wanted
        }
        result, _ = call.run.loop(closure, call.scope, provided=provided)
        return result
    script = call.run.host.quick_reply(name)
    if script is None:
        raise ScriptError(
            f'no closure or Quick Reply named "{name}"',
            code="no_closure_or_quick_reply",
            params={"name": str(name)},
        )
    macros = {f"arg::{key}": str(value) for key, value in call.named.items()}
    result, _ = call.run.loop(script, call.scope, macros)
    return result


def abort(call: Call) -> ScriptValue:
    reason = call.text() or "/abort command executed"
    if is_false(call.arg("quiet", "true")):
        call.run.host.notify(reason, "warning")  # quiet=false: the reason is shown
    call.run.abort(reason)
    return ""


def delay(call: Call) -> ScriptValue:
    """`/delay ms` (also /wait, /sleep): wait, then go on with an empty pipe. A value that
    is not a number waits nothing (SillyTavern 1.12.6); no wait outlasts the script's
    time limit."""
    amount = call.text()
    if amount:
        milliseconds = js_number(amount) or 0.0
        if milliseconds > 0:
            call.run.host.delay(min(milliseconds / 1000, call.run.limits.max_seconds))
    return ""


def closure_serialize(call: Call) -> ScriptValue:
    """`/closure-serialize {: ... :}`: the closure's text between its braces."""
    value = call.value
    if not isinstance(value, ClosureValue):
        raise ScriptError(
            "/closure-serialize needs a closure", code="closure_serialize_needs_closure"
        )
    return value.node.raw_text


def closure_deserialize(call: Call) -> ScriptValue:
    """`/closure-deserialize text`: the text read as a closure's body (made here); a
    closure given as it is stays itself (SillyTavern 1.12.6 fails with a TypeError)."""
    if isinstance(call.value, ClosureValue):
        return call.value
    script = parse(call.text(), call.run.shape_of, flags=call.run.flags)
    return ClosureValue(script.root, call.scope)


def breakpoint_(call: Call) -> ScriptValue:
    """`/breakpoint`: where SillyTavern's debugger stops; a run without one goes on with
    the pipe as it was."""
    return call.scope.pipe


def pass_(call: Call) -> ScriptValue:
    value = call.value
    if isinstance(value, list):
        return " ".join(map(str, value))
    return value


COMMANDS = (
    Command(
        "let",
        let,
        "Declare a scoped variable in this closure: /let name value or /let key=name value.",
        split=True,
        split_count=1,
        usage="/let [key=name] name [value]",
    ),
    Command(
        "var",
        var,
        "Set a scoped variable declared by /let (or read it when no value is given).",
        split=True,
        split_count=1,
        usage="/var [key=name] [index=i] [as=type] name [value]",
    ),
    Command(
        "if",
        if_,
        "Run a closure or command when left rule right holds (eq neq lt gt lte gte not in"
        " nin), else the 'else' one.",
        split=True,
        usage="/if left=a right=b rule=eq [else={: ... :}] {: ... :}",
    ),
    Command(
        "while",
        while_,
        "Repeat a closure while the condition holds (at most 100 turns unless guard=off).",
        split=True,
        usage="/while left=a right=b rule=lt [guard=off] {: ... :}",
    ),
    Command(
        "times",
        times,
        "Run a closure N times ({{timesIndex}} counts from 0; at most 100 unless guard=off).",
        split=True,
        split_count=1,
        usage="/times N {: ... :}",
    ),
    Command(
        "run",
        run,
        "Run a closure held in a scoped variable (named arguments fill its parameters) or a"
        " Quick Reply by Set.Label.",
        usage="/run name [param=value ...]",
    ),
    Command("abort", abort, "Stop the whole script.", usage="/abort [quiet=true] [reason]"),
    Command("delay", delay, "Wait a number of milliseconds.", ("wait", "sleep"), usage="/delay ms"),
    Command(
        "closure-serialize",
        closure_serialize,
        "A closure as text, to keep in a variable.",
        usage="/closure-serialize {: ... :}",
    ),
    Command(
        "closure-deserialize",
        closure_deserialize,
        "Text made by /closure-serialize as a closure again.",
        usage="/closure-deserialize text",
    ),
    Command(
        "breakpoint",
        breakpoint_,
        "A debugger stop; without a debugger the script goes on.",
        usage="/breakpoint",
    ),
    # In SillyTavern 1.12.6 /return is another name of /pass: it ends nothing.
    Command("pass", pass_, "Put the value into the pipe.", ("return",), usage="/pass value"),
)
