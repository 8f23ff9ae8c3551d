"""Numbers written the way JavaScript writes them.

SillyTavern is JavaScript: its files hold numbers as `JSON.stringify` writes them and its
macros print them as `String(number)` does (`5`, not `5.0`; `1e-7`, not `1e-07`; `1e+21`).
Both the file formats and the engine write numbers this one way.
"""

from __future__ import annotations

import math


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
