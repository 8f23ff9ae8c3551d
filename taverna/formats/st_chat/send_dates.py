"""The dates of a chat file: a message's `send_date` in any form SillyTavern reads, and
the forms it writes (formats-chat.md §1, §5)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from taverna.model.calendar_names import MONTHS as _MONTHS

_LONG_HUMAN = re.compile(r"^([A-Z][a-z]+) (\d{1,2}), (\d{4}) (\d{1,2}):(\d{2}) ?([ap]m)$", re.I)
_SERVER_HUMAN = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2}) ?@(\d{1,2})h ?(\d{1,2})m ?(\d{1,2})s(?: ?(\d{1,3})ms)?$"
)
_EPOCH = re.compile(r"^\d{9,16}$")


def parse_send_date(value: str | int | float | None) -> datetime | None:
    """The moment a `send_date` names, or None for a format SillyTavern does not read either.

    Human formats carry no zone (SillyTavern writes local time); they come back as naive datetimes.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _from_epoch_ms(float(value))
    text = value.strip()
    if _EPOCH.match(text):
        return _from_epoch_ms(float(text))
    match = _LONG_HUMAN.match(text)
    if match:
        month_name, day, year, hour, minute, half = match.groups()
        months = [m.lower() for m in _MONTHS]
        if month_name.lower() not in months:
            return None
        hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
        try:
            return datetime(
                int(year), months.index(month_name.lower()) + 1, int(day), hour_24, int(minute)
            )
        except ValueError:
            return None
    match = _SERVER_HUMAN.match(text)
    if match:
        year, month, day, hour, minute, second, millis = match.groups()
        try:
            return datetime(
                int(year),
                int(month),
                int(day),
                int(hour),
                int(minute),
                int(second),
                int(millis or 0) * 1000,
            )
        except ValueError:
            return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed


def _from_epoch_ms(millis: float) -> datetime | None:
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    except OverflowError:
        return None


def format_send_date(moment: datetime) -> str:
    """A `send_date` in the 1.12.6 form, e.g. `September 28, 2024 2:05pm`."""
    hour = moment.hour % 12 or 12
    half = "pm" if moment.hour >= 12 else "am"
    return (
        f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year} {hour}:{moment.minute:02d}{half}"
    )


def humanized_date(moment: datetime) -> str:
    """The chat-name date `YYYY-MM-DD@HHhMMmSSs`."""
    return moment.strftime("%Y-%m-%d@%Hh%Mm%Ss")


def iso_date(moment: datetime) -> str:
    """A JavaScript `Date.toISOString()` value (UTC, milliseconds)."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
