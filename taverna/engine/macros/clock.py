"""Dates and durations the way SillyTavern's moment.js (English locale) prints and reads them."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from taverna.model.calendar_names import MONTHS as _MONTHS
from taverna.model.calendar_names import WEEKDAYS as _WEEKDAYS

_TOKENS = re.compile(
    r"\[[^\]]*\]|LTS|LT|LLLL|LLL|LL|L|YYYY|YY|MMMM|MMM|MM|Mo|M|DDDD|DDD|Do|DD|D|dddd|ddd|dd|do|d"
    r"|HH|H|hh|h|kk|k|mm|m|ss|s|SSS|SS|S|A|a|ZZ|Z|X|x|E|e"
)


def _ordinal(number: int) -> str:
    if 11 <= number % 100 <= 13:
        return f"{number}th"
    return f"{number}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(number % 10, 'th') }"


def _offset(moment: datetime, colon: bool) -> str:
    delta = moment.utcoffset() or timedelta(0)
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    hours, mins = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{mins:02d}" if colon else f"{sign}{hours:02d}{mins:02d}"


def format_moment(moment: datetime, pattern: str) -> str:
    """moment.js `format(pattern)` for the common tokens; `[text]` is literal."""

    def token(match: re.Match[str]) -> str:
        t = match.group(0)
        hour12 = moment.hour % 12 or 12
        day_of_year = moment.timetuple().tm_yday
        table: dict[str, str] = {
            "LT": f"{hour12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}",
            "LTS": f"{hour12}:{moment.minute:02d}:{moment.second:02d} "
            f"{'AM' if moment.hour < 12 else 'PM'}",
            "L": f"{moment.month:02d}/{moment.day:02d}/{moment.year:04d}",
            "LL": f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}",
            "YYYY": f"{moment.year:04d}",
            "YY": f"{moment.year % 100:02d}",
            "MMMM": _MONTHS[moment.month - 1],
            "MMM": _MONTHS[moment.month - 1][:3],
            "MM": f"{moment.month:02d}",
            "Mo": _ordinal(moment.month),
            "M": str(moment.month),
            "DDDD": f"{day_of_year:03d}",
            "DDD": str(day_of_year),
            "Do": _ordinal(moment.day),
            "DD": f"{moment.day:02d}",
            "D": str(moment.day),
            "dddd": _WEEKDAYS[moment.weekday()],
            "ddd": _WEEKDAYS[moment.weekday()][:3],
            "dd": _WEEKDAYS[moment.weekday()][:2],
            "d": str((moment.weekday() + 1) % 7),
            "do": _ordinal((moment.weekday() + 1) % 7),
            "e": str((moment.weekday() + 1) % 7),
            "E": str(moment.weekday() + 1),
            "HH": f"{moment.hour:02d}",
            "H": str(moment.hour),
            "hh": f"{hour12:02d}",
            "h": str(hour12),
            "kk": f"{moment.hour or 24:02d}",
            "k": str(moment.hour or 24),
            "mm": f"{moment.minute:02d}",
            "m": str(moment.minute),
            "ss": f"{moment.second:02d}",
            "s": str(moment.second),
            "SSS": f"{moment.microsecond // 1000:03d}",
            "SS": f"{moment.microsecond // 10000:02d}",
            "S": str(moment.microsecond // 100000),
            "A": "AM" if moment.hour < 12 else "PM",
            "a": "am" if moment.hour < 12 else "pm",
            "Z": _offset(moment, True),
            "ZZ": _offset(moment, False),
            "X": str(int(moment.timestamp())),
            "x": str(int(moment.timestamp() * 1000)),
        }
        if t.startswith("["):
            return t[1:-1]
        if t == "LLL":
            return f"{table['LL']} {table['LT']}"
        if t == "LLLL":
            return f"{table['dddd']}, {table['LL']} {table['LT']}"
        return table[t]

    return _TOKENS.sub(token, pattern)


def humanize(delta: timedelta, *, with_suffix: bool = False) -> str:
    """moment.js `duration.humanize()` with its default thresholds (English)."""
    ms = delta.total_seconds() * 1000
    magnitude = abs(ms)

    def js_round(value: float) -> int:
        return int(value + 0.5) if value >= 0 else -int(-value + 0.5)

    seconds = js_round(magnitude / 1000)
    minutes = js_round(magnitude / 60000)
    hours = js_round(magnitude / 3600000)
    days_float = magnitude / 86400000
    days = js_round(days_float)
    months = js_round(days_float * 4800 / 146097)
    years = js_round(days_float * 4800 / 146097 / 12)
    # each unit: (amount, "one" of it, its plural, the amount from which the next unit speaks)
    units = (
        (minutes, "a minute", "minutes", 45),
        (hours, "an hour", "hours", 22),
        (days, "a day", "days", 26),
        (months, "a month", "months", 11),
        (years, "a year", "years", None),
    )
    if seconds <= 44:
        text = "a few seconds"
    elif seconds < 45:
        text = f"{seconds} seconds"
    else:
        text = next(
            one if amount <= 1 else f"{amount} {plural}"
            for amount, one, plural, limit in units
            if amount <= 1 or limit is None or amount < limit
        )
    if not with_suffix:
        return text
    return f"in {text}" if ms > 0 else f"{text} ago"


def parse_moment(text: str, now: datetime) -> datetime | None:
    """What `moment(text)` accepts in practice: ISO dates and SillyTavern's own formats."""
    text = text.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None:
        for pattern in ("%B %d, %Y %I:%M %p", "%B %d, %Y", "%B %d, %Y %I:%M%p", "%I:%M %p"):
            try:
                parsed = datetime.strptime(text, pattern)
            except ValueError:
                continue
            if pattern == "%I:%M %p":
                parsed = parsed.replace(year=now.year, month=now.month, day=now.day)
            break
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=now.tzinfo)
    return parsed
