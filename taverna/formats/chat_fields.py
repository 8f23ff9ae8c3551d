"""What the known keys of a SillyTavern chat line may hold (formats-chat.md §4.1).

A value of a wrong JSON type that SillyTavern still shows (a number as `mes`, "true" as
`is_user`) is read as SillyTavern reads it (formats/coercion.py) and noted; one it cannot
show (an object as `mes`) is a FormatError naming the file, the line and the key. A null
stays as it is: the typed properties of a message read it as absent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taverna.errors import FormatError, FormatWarning
from taverna.formats.coercion import Said, Unfit, as_bool, as_number, as_text

# A message key of this product's own (SillyTavern keeps unknown keys and never writes it):
# the continuations that fork off beside this message and have no file of their own, each a
# list of message objects (which may carry forks of their own). See
# services/interchange/chat_export.py.
FORKS = "taverna_forks"


def _check(
    value: dict[str, Any],
    key: str,
    types: type | tuple[type, ...],
    what: str,
    *,
    source: str,
    line: int,
) -> None:
    if key not in value:
        return
    item = value[key]
    ok = isinstance(item, types)
    if (
        ok
        and isinstance(item, bool)
        and bool not in (types if isinstance(types, tuple) else (types,))
    ):
        ok = False
    if not ok:
        raise FormatError(
            f"line {line}: expected {what}, found {describe(item)}",
            file=source,
            field=key,
            code="line_expected_found",
            params={"line": str(line), "what": str(what), "item": str(describe(item))},
        )


def describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _loose(
    value: dict[str, Any],
    key: str,
    read: Callable[[Any], tuple[Any, str | None]],
    *,
    source: str,
    line: int,
    warnings: list[FormatWarning] | None,
) -> dict[str, Any]:
    """`value` with `key` read as SillyTavern reads a loose value there (formats/coercion.py);
    a null stays null (each typed property reads it as absent)."""
    item = value.get(key)
    if item is None:
        return value
    try:
        read_value, note = read(item)
    except Unfit as exc:
        raise FormatError(
            f"line {line}: {exc}",
            file=source,
            field=key,
            code="line_unreadable",
            params={"line": str(line), "exc": str(exc)},
        ) from None
    if note is None:
        return value
    if warnings is not None:
        # the note's code and params go with it, the line beside them
        params = {**getattr(note, "params", {}), "line": line}
        said = Said(f"line {line}: {note}", getattr(note, "code", ""), **params)
        warnings.append(FormatWarning(said, file=source, field=key))
    return {**value, key: read_value}


def _text(item: Any) -> tuple[Any, str | None]:
    return as_text(item, "")


def _flag(item: Any) -> tuple[Any, str | None]:
    return as_bool(item, False)


def _index(item: Any) -> tuple[Any, str | None]:
    return as_number(item, 0, integer=True)


def _texts_or_nulls(item: Any) -> tuple[Any, str | None]:
    # swipes: a null swipe is a swipe still being written (formats-chat.md), kept as null
    if isinstance(item, list) and any(isinstance(x, bool | int | float) for x in item):
        texts = [x if x is None or isinstance(x, str | list | dict) else as_text(x, "")[0]
                 for x in item]  # fmt: skip
        return texts, "swipes that are numbers or booleans are read as their text"
    return item, None


def check_header(
    value: dict[str, Any], *, source: str, line: int, warnings: list[FormatWarning] | None = None
) -> dict[str, Any]:
    _check(value, "chat_metadata", (dict, type(None)), "an object", source=source, line=line)
    for key in ("user_name", "character_name"):
        value = _loose(value, key, _text, source=source, line=line, warnings=warnings)
    return value


def check_message(
    value: dict[str, Any], *, source: str, line: int, warnings: list[FormatWarning] | None = None
) -> dict[str, Any]:
    value = _coerce_fields(value, source=source, line=line, warnings=warnings)
    _validate_forks(value, source=source, line=line)
    return value


def _coerce_fields(
    value: dict[str, Any], *, source: str, line: int, warnings: list[FormatWarning] | None
) -> dict[str, Any]:
    """A message line's known fields read as SillyTavern reads them (numbers and booleans
    as text in `mes` and `name`, "true" as true, "2" as 2 in `swipe_id`), each noted."""
    if isinstance(value.get("mes"), dict):
        raise FormatError(
            f"line {line}: `mes` is an object (a Chub export?); expected the message text",
            file=source,
            field="mes",
            code="line_mes_is_object_chub",
            params={"line": str(line)},
        )
    loose = {"mes": _text, "name": _text, "is_user": _flag, "is_system": _flag,
             "swipe_id": _index, "swipes": _texts_or_nulls}  # fmt: skip
    for key, read in loose.items():
        if key in value:
            value = _loose(value, key, read, source=source, line=line, warnings=warnings)
    _validate_fields(value, source=source, line=line)
    return value


def _validate_fields(value: dict[str, Any], *, source: str, line: int) -> None:
    if isinstance(value.get("mes"), dict):
        raise FormatError(
            f"line {line}: `mes` is an object (a Chub export?); expected the message text",
            file=source,
            field="mes",
            code="line_mes_is_object_chub",
            params={"line": str(line)},
        )
    nothing = type(None)
    _check(value, "mes", (str, nothing), "a string", source=source, line=line)
    _check(value, "name", (str, nothing), "a string", source=source, line=line)
    _check(value, "is_user", (bool, nothing), "true or false", source=source, line=line)
    _check(value, "is_system", (bool, nothing), "true or false", source=source, line=line)
    _check(
        value, "send_date", (str, int, float, nothing), "a string or number",
        source=source, line=line,
    )  # fmt: skip
    _check(value, "extra", (dict, nothing), "an object", source=source, line=line)
    _check(value, "swipe_id", (int, nothing), "an integer", source=source, line=line)
    _check(value, "swipes", (list, nothing), "a list of strings", source=source, line=line)
    _check(value, "swipe_info", (list, nothing), "a list of objects", source=source, line=line)
    swipes = value.get("swipes")
    if isinstance(swipes, list):
        for index, item in enumerate(swipes):
            if item is not None and not isinstance(item, str):
                raise FormatError(
                    f"line {line}: swipe {index} is {describe(item)}, expected a string",
                    file=source,
                    field="swipes",
                    code="line_swipe_is_expected_string",
                    params={"line": str(line), "index": str(index), "item": str(describe(item))},
                )


def _validate_forks(value: dict[str, Any], *, source: str, line: int) -> None:
    forks = value.get(FORKS)
    if forks is None:
        return
    # Checked without recursion: a hostile file may nest forks as deep as its JSON allows.
    pending: list[Any] = [forks]
    while pending:
        item = pending.pop()
        if not isinstance(item, list) or not all(isinstance(b, list) for b in item):
            raise FormatError(
                f"line {line}: expected a list of message lists, found {describe(item)}",
                file=source,
                field=FORKS,
                code="line_expected_list_of_message",
                params={"line": str(line), "item": str(describe(item))},
            )
        for branch in item:
            assert isinstance(branch, list)
            for message in branch:
                if not isinstance(message, dict):
                    raise FormatError(
                        f"line {line}: a forked message is {describe(message)}",
                        file=source,
                        field=FORKS,
                        code="line_forked_message_is",
                        params={"line": str(line), "message_name": str(describe(message))},
                    )
                _validate_fields(message, source=source, line=line)
                if message.get(FORKS) is not None:
                    pending.append(message[FORKS])
