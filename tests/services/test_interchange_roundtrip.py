"""Any SillyTavern chat survives the trip into a tree and back out (property tests)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from taverna.formats.st_chat import read_chat, write_chat
from taverna.model.chat import Chat, ChatTree
from taverna.services.interchange import TreeImport, build_tree, export_tree

text = st.text(max_size=12)
scalar = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | text
json_value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def ordered(draw: st.DrawFn, fields: dict[str, Any]) -> dict[str, Any]:
    """The same object with its keys in a drawn order (SillyTavern's order varies)."""
    keys = draw(st.permutations(list(fields)))
    return {k: fields[k] for k in keys}


@st.composite
def metadata(draw: st.DrawFn) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, strategy in [
        ("note_prompt", text),
        ("note_interval", st.integers(0, 5)),
        ("note_position", st.integers(0, 2)),
        ("note_depth", st.integers(0, 9)),
        ("note_role", st.integers(0, 2)),
        ("variables", st.dictionaries(text, st.integers() | text, max_size=3)),
        ("timedWorldInfo", st.fixed_dictionaries({"sticky": st.just({}), "cooldown": st.just({})})),
        ("world_info", text),
        ("tainted", st.booleans()),
        ("x_extension", json_value),
    ]:
        if draw(st.booleans()):
            fields[key] = draw(strategy)
    return draw(ordered(fields))


@st.composite
def message(draw: st.DrawFn) -> dict[str, Any]:
    is_user = draw(st.booleans())
    mes = draw(text)
    fields: dict[str, Any] = {"name": draw(text), "is_user": is_user, "mes": mes}
    if draw(st.booleans()):
        fields["is_system"] = draw(st.booleans())
    if draw(st.booleans()):
        fields["send_date"] = draw(
            st.sampled_from(["September 28, 2024 2:03pm", "2024-9-28 @14h 03m 12s 45ms", "junk"])
            | st.integers(0, 2**41)
        )
    if draw(st.booleans()):
        extra = draw(st.dictionaries(text, json_value, max_size=3))
        kind = draw(st.sampled_from([None, "narrator", "comment"]))
        if kind:
            extra["type"] = kind
        if draw(st.booleans()):
            extra["memory"] = draw(text)  # a summary (the Summarize extension's)
        fields["extra"] = draw(ordered(extra))
    if not is_user and draw(st.booleans()):
        others = draw(st.lists(text, max_size=3))
        at = draw(st.integers(0, len(others)))
        swipes = [*others[:at], mes, *others[at:]]
        infos = [
            draw(
                st.fixed_dictionaries(
                    {"send_date": text, "extra": st.dictionaries(text, scalar, max_size=2)}
                )
            )
            for _ in range(draw(st.integers(0, len(swipes))))
        ]
        fields["swipe_id"] = at
        fields["swipes"] = swipes
        fields["swipe_info"] = infos
        if not infos and draw(st.booleans()):
            fields["swipe_info"] = None  # SillyTavern reads it as none and keeps it
        if draw(st.integers(0, 9)) == 0:
            fields["swipe_id"] = len(swipes)  # caught mid-swipe: kept verbatim
    if draw(st.booleans()):
        fields["x_unknown"] = draw(json_value)
    return draw(ordered(fields))


def as_tree(built: TreeImport) -> ChatTree:
    """What the store would return for a bulk import (no database needed for the property)."""
    chat = Chat(
        id=built.new.id,
        title=built.new.title,
        characters=built.new.characters,
        user_name=built.new.user_name,
        active_leaf_id=built.active_leaf_id,
        base_state=built.new.base_state,
        metadata=built.new.metadata,
        created=built.new.created,
    )
    return ChatTree(chat, tuple(built.nodes), tuple(built.branches), tuple(built.checkpoints))


def values(lines: str) -> list[Any]:
    return [json.loads(line, parse_int=float) for line in lines.split("\n") if line.strip()]


@settings(max_examples=150, deadline=None)
@given(
    header=st.booleans(),
    with_metadata=st.booleans(),
    meta=metadata(),
    messages=st.lists(message(), min_size=0, max_size=6),
    newline=st.sampled_from(["\n", "\r\n"]),
    end=st.sampled_from(["", "\n", "\r\n"]),
)
def test_any_chat_comes_back_from_the_tree_unchanged(
    header: bool,
    with_metadata: bool,
    meta: dict[str, Any],
    messages: list[dict[str, Any]],
    newline: str,
    end: str,
) -> None:
    lines: list[dict[str, Any]] = []
    if header or not messages:
        top: dict[str, Any] = {
            "user_name": "U",
            "character_name": "C",
            "create_date": "2024-01-01@00h00m00s",
        }
        if with_metadata or meta:
            top["chat_metadata"] = meta  # a TavernAI header has none
        lines.append(top)
    lines += messages
    source = newline.join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) for line in lines
    ) + (end if lines else "")
    document = read_chat(source)
    (main, *others) = export_tree(as_tree(build_tree(document, name="chat")))
    assert others == []
    out = write_chat(main.document)
    assert values(out) == values(source)
    assert out == source  # the key order travels too


GREETING = (
    '{"user_name":"Ann","character_name":"Kael","create_date":"2024-01-01@00h00m00s",'
    '"chat_metadata":{}}\n'
    '{"name":"Kael","is_user":false,"is_system":false,"send_date":"January 1, 2024 0:00am",'
    '"mes":"Hello Ann, I am Kael.","extra":{},"swipe_id":0,'
    '"swipes":["Hello {{user}}, I am {{char}}.","Morning, {{user}}.","<USER>? Kael.",'
    '"No macros here.","{{char}} waves.","Last one, {{user}}."],"swipe_info":[]}'
)


def test_every_greeting_swipe_is_a_candidate_shown_as_sillytavern_shows_it() -> None:
    # SillyTavern writes the greeting's `mes` with its macros substituted and keeps the
    # raw texts in `swipes` (formats-chat.md §4.3)
    built = build_tree(read_chat(GREETING), name="chat")
    assert [n.content for n in built.nodes] == [
        "Hello Ann, I am Kael.",
        "Morning, Ann.",
        "Ann? Kael.",
        "No macros here.",
        "Kael waves.",
        "Last one, Ann.",
    ]
    assert built.active_leaf_id == built.nodes[0].id
    (main,) = export_tree(as_tree(built))
    assert write_chat(main.document) == GREETING


def test_a_greeting_switched_to_another_swipe_exports_it_as_shown() -> None:
    built = build_tree(read_chat(GREETING), name="chat")
    built.active_leaf_id = built.nodes[1].id
    (main,) = export_tree(as_tree(built))
    message = main.document.messages[0].fields
    assert message["mes"] == "Morning, Ann." and message["swipe_id"] == 1
    assert message["swipes"] == json.loads(GREETING.split("\n")[1])["swipes"]


def jsonb_like(value: Any) -> Any:
    """What PostgreSQL's JSONB gives back: object keys sorted by length, then bytes."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return {k: jsonb_like(value[k]) for k in keys}
    if isinstance(value, list):
        return [jsonb_like(v) for v in value]
    return value


@settings(max_examples=200, deadline=None)
@given(json_value)
def test_key_shape_restores_the_order_a_database_lost(value: Any) -> None:
    from taverna.services.interchange.st_record import apply_shape, key_shape

    restored = apply_shape(jsonb_like(value), json.loads(json.dumps(key_shape(value))))
    assert json.dumps(restored) == json.dumps(value)
