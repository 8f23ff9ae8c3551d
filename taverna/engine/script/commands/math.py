"""Arithmetic: /add /sub /mul /div /mod /pow /max /min /abs /sqrt /round ... /rand /roll.

Operands are separated by spaces; a word that is not a number is read as a variable
(scoped, then chat, then global). A result that is not a finite number prints as 0,
as in SillyTavern (`performOperation`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from taverna.engine.macros.js import js_number
from taverna.engine.script.errors import ScriptError
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ClosureValue, ScriptValue
from taverna.engine.script.values import js_value_text, number_text, parse_json, read_number


def _resolve(call: Call, word: str) -> float | None:
    if call.scope.exists(word):
        value = call.scope.get(word)
    elif word in call.variables.local:
        value = read_number(call.variables.local[word])
    elif word in call.variables.global_:
        value = read_number(call.variables.global_[word])
    else:
        value = word
    if isinstance(value, ClosureValue):
        return None
    if isinstance(value, float):
        return value
    return js_number(value)


def _series(call: Call) -> list[float]:
    numbers = []
    for word in call.text().split(" "):
        word = word.strip()
        if not word:
            continue
        number = js_number(word)
        if number is None:
            number = _resolve(call, word)
        if number is not None and not math.isnan(number):
            numbers.append(number)
    return numbers


def _operation(
    compute: Callable[[list[float]], float], *, single: bool = False
) -> Callable[[Call], ScriptValue]:
    def handler(call: Call) -> ScriptValue:
        if not call.text():
            return "0"
        numbers = _series(call)
        if not numbers:
            return "0"
        try:
            result = compute(numbers[:1] if single else numbers)
        except (OverflowError, ValueError, ZeroDivisionError):
            return "0"
        if math.isnan(result) or math.isinf(result):
            return "0"
        return number_text(result)

    return handler


def _second(numbers: list[float]) -> float:
    # JavaScript reads a missing operand as undefined: arithmetic on it is NaN.
    return numbers[1] if len(numbers) > 1 else math.nan


def _divide(numbers: list[float]) -> float:
    divisor = _second(numbers)
    return 0.0 if divisor == 0 else numbers[0] / divisor


def _modulo(numbers: list[float]) -> float:
    divisor = _second(numbers)
    if divisor == 0:
        return 0.0
    return math.fmod(numbers[0], divisor)  # JavaScript's % keeps the dividend's sign


def _power(numbers: list[float]) -> float:
    return float(math.pow(numbers[0], _second(numbers)))


def _round(number: float) -> float:
    return float(math.floor(number + 0.5))  # Math.round: halves go up


def _product(numbers: list[float]) -> float:
    result = 1.0
    for number in numbers:
        result *= number
    return result


def _log(number: float) -> float:
    if number < 0:
        return math.nan
    return -math.inf if number == 0 else math.log(number)


def _sqrt(number: float) -> float:
    return math.nan if number < 0 else math.sqrt(number)


def rand(call: Call) -> ScriptValue:
    start = js_number(call.arg("from") or "0")
    to = call.arg("to")
    end = js_number(to if to is not None else (call.text() or "1"))
    if start is None or end is None:
        return "NaN"
    value = start + call.run.random.random() * (end - start)
    how = call.arg("round")
    if how == "round":
        value = _round(value)
    elif how == "ceil":
        value = float(math.ceil(value))
    elif how == "floor":
        value = float(math.floor(value))
    return number_text(value)


def random_item(call: Call) -> ScriptValue:
    """A random item of a JSON list or of a comma-separated list (as `{{random}}` picks)."""
    text = call.text().strip()
    if not text:
        raise ScriptError(
            'give a list to pick from, e.g. /random ["a","b"] or /random a, b '
            "(SillyTavern's /random that opens a chat with a random character is not here)",
            code="give_list_to_pick_from",
        )
    items: list[str]
    parsed = parse_json(text) if text.startswith("[") else None
    if isinstance(parsed, list):
        items = [item if isinstance(item, str) else js_value_text(item) for item in parsed]
    else:
        items = [item.strip() for item in text.split(",")]
    if not items:
        return ""
    return items[int(call.run.random.random() * len(items))]


_DICE = re.compile(r"^\s*(\d*)\s*d\s*(\d+)\s*(?:([+-])\s*(\d+))?\s*$", re.IGNORECASE)


def roll(call: Call) -> ScriptValue:
    formula = call.text().strip()
    if not formula:
        raise ScriptError(
            "give a dice formula such as 1d20 or 2d6+3", code="give_dice_formula_such_as"
        )
    if formula.isdigit():
        formula = f"1d{formula}"
    match = _DICE.match(formula)
    if match is None:
        raise ScriptError(
            f"{formula!r} is not a dice formula (NdM+K)",
            code="is_not_dice_formula_ndm",
            params={"formula": str(formula)},
        )
    count = int(match.group(1) or "1")
    sides = int(match.group(2))
    if count > 1000 or sides > 1_000_000 or sides < 1:
        raise ScriptError(
            f"{formula!r}: at most 1000 dice of at most 1000000 sides",
            code="at_most_1000_dice_of",
            params={"formula": str(formula)},
        )
    rolls = [call.run.random.randint(1, sides) for _ in range(count)]
    modifier = int(match.group(4) or "0") * (-1 if match.group(3) == "-" else 1)
    total = sum(rolls) + modifier
    quiet = call.arg("quiet")
    if quiet is None or quiet.strip().lower() not in ("true", "on", "1"):
        call.run.host.notify(f"rolls {formula}. The result is: {total}", "info")
    return str(total)


COMMANDS = (
    Command(
        "add",
        _operation(sum),
        "Sum of the numbers (or variables) given.",
        split=True,
        usage="/add 1 2 3",
    ),
    Command(
        "sub", _operation(lambda n: n[0] - _second(n)), "First minus second.", usage="/sub a b"
    ),
    Command("mul", _operation(_product), "Product of the numbers.", usage="/mul 2 3 4"),
    Command("div", _operation(_divide), "First divided by second (0 for /0).", usage="/div a b"),
    Command("mod", _operation(_modulo), "Remainder of first by second.", usage="/mod a b"),
    Command("pow", _operation(_power), "First to the power of second.", usage="/pow a b"),
    Command("max", _operation(max), "Largest of the numbers.", usage="/max 1 5 3"),
    Command("min", _operation(min), "Smallest of the numbers.", usage="/min 1 5 3"),
    Command(
        "abs", _operation(lambda n: abs(n[0]), single=True), "Absolute value.", usage="/abs -5"
    ),
    Command(
        "sqrt", _operation(lambda n: _sqrt(n[0]), single=True), "Square root.", usage="/sqrt 9"
    ),
    Command(
        "round",
        _operation(lambda n: _round(n[0]), single=True),
        "Nearest integer.",
        usage="/round 2.5",
    ),
    Command("sin", _operation(lambda n: math.sin(n[0]), single=True), "Sine.", usage="/sin x"),
    Command("cos", _operation(lambda n: math.cos(n[0]), single=True), "Cosine.", usage="/cos x"),
    Command(
        "log", _operation(lambda n: _log(n[0]), single=True), "Natural logarithm.", usage="/log x"
    ),
    Command(
        "rand",
        rand,
        "Random number from 'from' (0) to 'to' (or the value, 1); round=round|ceil|floor.",
        usage="/rand [from=0] [to=1] [round=floor] [to]",
    ),
    Command(
        "random",
        random_item,
        "A random item of a list: a JSON list or comma-separated words.",
        usage='/random ["rain","sun"]  or  /random rain, sun, snow',
    ),
    Command(
        "roll",
        roll,
        "Roll dice (NdM+K) and return the total.",
        ("r",),
        usage="/roll [quiet=true] 2d6+1",
    ),
)
