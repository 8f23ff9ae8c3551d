"""Chat and global variables: /setvar /getvar /addvar /incvar /decvar /flushvar and twins.

Chat ("local") variables follow the chat's branch; global ones live in the library
(formats-extensions.md §3). Reads give numbers for numeric text; `index=` reads and
writes an element of a JSON list or object (algo-chat-ops.md §7).
"""

from __future__ import annotations

from types import MappingProxyType

from taverna.engine.macros.js import js_text
from taverna.engine.macros.variables import Variables, add_to_variable
from taverna.engine.script.errors import ScriptError
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ClosureValue, ScriptValue, get_at_index, set_at_index
from taverna.engine.script.values import js_value_text, read_number


def _name(call: Call, *, from_value: bool) -> str:
    key = call.arg("key") or call.arg("name")
    if key:
        return key.strip()
    if from_value:
        value = call.value
        if isinstance(value, ClosureValue):
            result = call.run.call(value, parent=call.scope)
            return "" if result is None else str(result).strip()
        return call.text().strip()
    raise ScriptError("name the variable with key=", code="name_variable_with_key")


def _store(call: Call, name: str, value: object, *, is_global: bool) -> None:
    call.variables = call.variables.with_value(name, value, is_global=is_global)


def _read(call: Call, name: str, *, is_global: bool) -> str:
    values = call.variables.scope(is_global)
    index = call.arg("index")
    stored = values.get(name)
    if index is not None:
        return get_at_index(stored if isinstance(stored, str) else js_value_text(stored), index)
    value = read_number(stored)
    return value if isinstance(value, str) else js_value_text(value)


def _set(call: Call, *, is_global: bool) -> ScriptValue:
    name = _name(call, from_value=False)
    value = call.text()
    index = call.arg("index")
    if index is not None:
        stored = call.variables.scope(is_global).get(name)
        updated = set_at_index(
            None if stored is None else js_value_text(stored), index, value, call.arg("as")
        )
        _store(call, name, updated, is_global=is_global)
    else:
        _store(call, name, value, is_global=is_global)
    return value


def _add(call: Call, name: str, amount: str, *, is_global: bool) -> str:
    if not name:
        raise ScriptError("name the variable", code="name_variable")
    variables, value = add_to_variable(call.variables, name, amount, is_global=is_global)
    call.variables = variables
    # `String(value)`: a list that was pushed onto prints as its items joined by commas.
    return js_text(value) if isinstance(value, list) else js_value_text(value)


def _flush(call: Call, *, is_global: bool) -> ScriptValue:
    name = _name(call, from_value=True)
    values = dict(call.variables.scope(is_global))
    values.pop(name, None)
    frozen = MappingProxyType(values)
    current = call.variables
    call.variables = (
        Variables(local=current.local, global_=frozen)
        if is_global
        else Variables(local=frozen, global_=current.global_)
    )
    return ""


def _commands(prefix: str, is_global: bool, aliases: bool) -> tuple[Command, ...]:
    where = "global" if is_global else "chat"

    def alias(name: str) -> tuple[str, ...]:
        return (name.replace("var", "chatvar"),) if aliases else ()

    def set_(call: Call) -> ScriptValue:
        return _set(call, is_global=is_global)

    def get(call: Call) -> ScriptValue:
        return _read(call, _name(call, from_value=True), is_global=is_global)

    def add(call: Call) -> ScriptValue:
        return _add(call, _name(call, from_value=False), call.text(), is_global=is_global)

    def inc(call: Call) -> ScriptValue:
        return _add(call, _name(call, from_value=True), "1", is_global=is_global)

    def dec(call: Call) -> ScriptValue:
        return _add(call, _name(call, from_value=True), "-1", is_global=is_global)

    def flush(call: Call) -> ScriptValue:
        return _flush(call, is_global=is_global)

    names = {
        "set": f"set{prefix}var",
        "get": f"get{prefix}var",
        "add": f"add{prefix}var",
        "inc": f"inc{prefix}var",
        "dec": f"dec{prefix}var",
        "flush": f"flush{prefix}var",
    }
    return (
        Command(
            names["set"],
            set_,
            f"Set a {where} variable; returns the value.",
            alias(names["set"]),
            usage=f"/{names['set']} key=name [index=i] [as=type] value",
        ),
        Command(
            names["get"],
            get,
            f"Read a {where} variable ('' when unset).",
            alias(names["get"]),
            usage=f"/{names['get']} [key=name] [index=i] name",
        ),
        Command(
            names["add"],
            add,
            f"Add to a {where} variable: a number adds, a JSON list gets the value, text joins.",
            alias(names["add"]),
            usage=f"/{names['add']} key=name value",
        ),
        Command(
            names["inc"],
            inc,
            f"Add 1 to a {where} variable; returns the new value.",
            alias(names["inc"]),
            usage=f"/{names['inc']} name",
        ),
        Command(
            names["dec"],
            dec,
            f"Subtract 1 from a {where} variable; returns the new value.",
            alias(names["dec"]),
            usage=f"/{names['dec']} name",
        ),
        Command(
            names["flush"],
            flush,
            f"Delete a {where} variable.",
            alias(names["flush"]),
            usage=f"/{names['flush']} name",
        ),
    )


def listvar(call: Call) -> ScriptValue:
    variables = call.variables

    def lines(values: object) -> str:
        assert isinstance(values, MappingProxyType | dict)
        return "\n".join(f"{k}: {js_value_text(v)}" for k, v in values.items())

    local = lines(variables.local) or "No local variables"
    global_ = lines(variables.global_) or "No global variables"
    text = f"Local variables:\n{local}\n\nGlobal variables:\n{global_}"
    call.run.host.notify(text, "info")
    return text


COMMANDS = (
    *_commands("", False, True),
    *_commands("global", True, False),
    Command(
        "listvar",
        listvar,
        "List the chat and global variables.",
        ("listchatvar",),
        usage="/listvar",
    ),
)
