"""Numbers written and read the way JavaScript writes and reads them.

SillyTavern is JavaScript: its files hold numbers as `JSON.stringify` writes them and its
macros print them as `String(number)` does (`5`, not `5.0`; `1e-7`, not `1e-07`; `1e+21`),
and it reads a number given as text with `Number(text)` (" 1e3 " is 1000, "" is 0).
Both the file formats and the engine write and read numbers this one way.
"""

from __future__ import annotations

import math
import re

from taverna.model.js_text import js_trim

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_PREFIXED = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)\Z")


def parse_js_number(text: str) -> float | None:
    """JavaScript's `Number(text)`; None where JavaScript gives NaN."""
    body = js_trim(text)
    if not body:
        return 0.0
    if body in ("Infinity", "+Infinity"):
        return math.inf
    if body == "-Infinity":
        return -math.inf
    if _DECIMAL.match(body):
        return float(body)
    if _PREFIXED.match(body):
        return float(int(body, 0))
    return None


def js_number_text(value: float) -> str:
    """`String(number)`: the shortest round-trip digits, in JavaScript's notation."""
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exp_text = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    significant = digits.lstrip("0")
    # where the decimal point sits, counted from the first significant digit
    point = len(whole) + int(exp_text or 0) - (len(digits) - len(significant))
    digits = significant.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    exponent = point - 1
    mark = "+" if exponent >= 0 else "-"
    return sign + digits[0] + ("." + digits[1:] if k > 1 else "") + f"e{mark}{abs(exponent)}"
