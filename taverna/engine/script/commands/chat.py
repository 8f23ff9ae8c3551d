"""Commands that change the chat, carried out by the host (the chat's services)."""

from __future__ import annotations

import json
import math
import re

from taverna.engine.macros.js import js_number
from taverna.engine.script.errors import ScriptError
from taverna.engine.script.host import Generation, Injection
from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ScriptValue
from taverna.engine.script.values import is_false, is_true
from taverna.engine.script.values import number_text as js_number_text

_RANGE = re.compile(r"^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$")
_POSITIONS = {"before": "before", "after": "after", "chat": "chat", "none": "none"}
_ROLES = ("system", "user", "assistant")


def _at(call: Call) -> int | None:
    """The place `at=` names in the chat as read, or None for the end.

    SillyTavern 1.12.6: a negative place counts from the end, and so does 0 (it reads 0 as
    -0: the end); a place that is not a number or falls outside the chat means the end; a
    fraction is cut to its whole part."""
    raw = call.arg("at")
    if raw is None:
        return None
    number = js_number(raw)
    if number is None or math.isnan(number):
        return None
    count = len(call.run.host.messages())
    if number <= 0:
        number += count
    if not 0 <= number < count:
        return None
    return int(number)


# SillyTavern 1.12.6 adds nothing for /send, /sendas, /sys and /comment without a text
# (and no error): the pipe is empty.


def send(call: Call) -> ScriptValue:
    text = call.text()
    if not text.strip():
        return ""
    return call.run.host.send(text, at=_at(call), name=call.arg("name"))


def send_as(call: Call) -> ScriptValue:
    name = call.arg("name")
    text = call.text()
    if not text.strip():
        return ""
    if not name:
        # SillyTavern 1.12.6: without name= the chat's character speaks the whole text.
        name = call.run.context.macros.char
    if not name or not text.strip():
        raise ScriptError("/sendas needs name= and a text", code="sendas_needs_name_and_text")
    return call.run.host.send_as(name, text, at=_at(call))


def narrate(call: Call) -> ScriptValue:
    text = call.text()
    if not text.strip():
        return ""
    return call.run.host.narrate(text, at=_at(call))


def add_swipe(call: Call) -> ScriptValue:
    """`/addswipe [switch=true] text`: a swipe for the last message, if a character wrote
    it and it is not hidden (SillyTavern 1.12.6 only warns otherwise); its place."""
    text = call.text()
    if not text:
        return ""
    lines = call.run.host.messages()
    if not lines or lines[-1].is_user or lines[-1].hidden:
        return ""
    return str(call.run.host.add_swipe(text, switch=is_true(call.arg("switch"))))


def delete_swipe(call: Call) -> ScriptValue:
    """`/delswipe [n]`: delete the last message's swipe n (1-based; without: the one
    shown); the place of the swipe shown then. Nothing when there is no such swipe or
    only one (SillyTavern 1.12.6 prints `undefined` there)."""
    raw = call.text()
    number = js_number(raw) if raw else None
    index = int(number) - 1 if number is not None and number.is_integer() else None
    if index is not None and index < 0:
        return ""
    found = call.run.host.delete_swipe(index)
    return "" if found is None else str(found)


def narrator_name(call: Call) -> ScriptValue:
    """`/sysname Name`: the chat's narrator speaks as Name from now on (System without)."""
    call.run.host.set_narrator_name(call.text() or "System")
    return ""


def comment(call: Call) -> ScriptValue:
    text = call.text()
    if not text.strip():
        return ""
    return call.run.host.comment(text, at=_at(call))


def _hide(call: Call, *, hidden: bool) -> ScriptValue:
    # SillyTavern 1.12.6: a bad or out-of-range index hides nothing, without an error.
    found = _message_range(call.text(), len(call.run.host.messages()) - 1)
    if found is None:
        return ""
    return call.run.host.hide(found[0], found[1], hidden=hidden)


def hide(call: Call) -> ScriptValue:
    return _hide(call, hidden=True)


def unhide(call: Call) -> ScriptValue:
    return _hide(call, hidden=False)


_LEADING_INT = re.compile(r"^\s*([+-]?\d+)")
_MESSAGE_ROLES = ("system", "assistant", "user")


def _js_int(text: str) -> int | None:
    """JavaScript's `parseInt(text, 10)`: the leading whole number, None for NaN."""
    match = _LEADING_INT.match(text)
    return int(match.group(1)) if match else None


def _message_range(text: str, last: int) -> tuple[int, int] | None:
    """SillyTavern's `stringToRange`: `5` or `2-7` within 0..last, else None."""
    if "-" in text:
        first, _, rest = text.partition("-")
        end_text = rest.split("-", 1)[0]
        start = _js_int(first) if first else None
        end = _js_int(end_text) if end_text else None
    else:
        start = end = _js_int(text)
    if start is None or end is None or start > end or start < 0 or end > last:
        return None
    return start, end


def messages(call: Call) -> ScriptValue:
    """`/messages [names=on] [hidden=off] [role=...] 2-5`: the messages' texts, blank-line
    separated (hidden ones only with hidden=on, as SillyTavern 1.12.6 reads its flags)."""
    names = not is_false(call.arg("names"))
    hidden = is_true(call.arg("hidden"))
    role = call.arg("role")
    if role and role not in _MESSAGE_ROLES:
        raise ScriptError(
            f"role must be system, assistant or user, not {role!r}",
            code="role_must_be_system_assistant",
            params={"role": str(role)},
        )
    lines = call.run.host.messages()
    found = _message_range(call.text(), len(lines) - 1)
    if found is None:
        return ""
    out = []
    for line in lines[found[0] : found[1] + 1]:
        if role == "system" and not (line.narrator and not line.is_user):
            continue
        if role == "assistant" and (line.narrator or line.is_user):
            continue
        if role == "user" and (line.narrator or not line.is_user):
            continue
        if line.hidden and not hidden:
            continue
        out.append(f"{line.name}: {line.text}" if names else line.text)
    return "\n\n".join(out)


def cut(call: Call) -> ScriptValue:
    """`/cut 3` or `/cut 2-4`: delete those messages and return their texts, each with a
    line break after it (nothing for a bad range, as in SillyTavern 1.12.6)."""
    lines = call.run.host.messages()
    found = _message_range(call.text(), len(lines) - 1)
    if found is None:
        return ""
    indices = list(range(found[0], found[1] + 1))
    text = "".join(f"{lines[i].text}\n" for i in indices)
    call.run.host.delete_messages(indices)
    return text


def delete_last(call: Call) -> ScriptValue:
    """`/del N`: cut the last N messages (nothing for 0, a bad number, or more messages
    than the chat has; without N SillyTavern only opens its delete mode)."""
    text = call.text()
    if not text:
        return ""
    count = js_number(text)
    if count is None or count < 1:
        return ""
    lines = call.run.host.messages()
    if count > len(lines):
        return ""
    found = _message_range(f"{js_number_text(len(lines) - count)}-{len(lines) - 1}", len(lines) - 1)
    if found is None:
        return ""
    indices = list(range(found[0], found[1] + 1))
    cut_text = "".join(f"{lines[i].text}\n" for i in indices)
    call.run.host.delete_messages(indices)
    return cut_text


def delete_by_name(call: Call) -> ScriptValue:
    """`/delname Name`: delete every message written under that name."""
    name = call.text().strip()
    if not name:
        return ""
    lines = call.run.host.messages()
    indices = [i for i, line in enumerate(lines) if line.name == name]
    if indices:
        call.run.host.delete_messages(indices)
    return ""


def _generation(kind: str, *, needs_prompt: bool = False) -> Command:
    def generate(call: Call) -> ScriptValue:
        prompt = call.text()
        if needs_prompt and not prompt.strip():
            raise ScriptError(
                f"/{kind} needs a prompt", code="needs_prompt", params={"kind": str(kind)}
            )
        options = {key: str(value) for key, value in call.named.items()}
        return call.run.host.generate(Generation(kind, prompt, options))

    helps = {
        "gen": "Generate from the chat's prompt plus this one; returns the text, stores nothing.",
        "genraw": "Generate from this prompt alone (no chat, no card); returns the text.",
        "trigger": "Have the character reply now.",
        "continue": "Continue the last reply.",
        "impersonate": "Write the user's next message with the model (into the input).",
        "swipe": "Generate another candidate of the last reply.",
    }
    aliases = {"continue": ("cont",), "impersonate": ("imp",)}
    return Command(
        kind,
        generate,
        helps[kind],
        aliases.get(kind, ()),
        usage=f"/{kind}" + (" [options] prompt" if needs_prompt else ""),
    )


def inject(call: Call) -> ScriptValue:
    injection_id = call.arg("id")
    if not injection_id:
        return ""  # SillyTavern 1.12.6 only warns
    position = (call.arg("position", "after") or "after").lower()
    if position not in _POSITIONS:
        raise ScriptError(
            f"position must be before, after, chat or none, not {position!r}",
            code="position_must_be_before_after",
            params={"position": str(position)},
        )
    depth_text = call.arg("depth", "4") or "4"
    depth = js_number(depth_text)
    if depth is None or not depth.is_integer() or depth < 0:
        raise ScriptError(
            f"depth={depth_text!r} is not a whole number of messages",
            code="depth_is_not_whole_number",
            params={"depth_text": str(depth_text)},
        )
    role = (call.arg("role", "system") or "system").lower()
    if role not in _ROLES:
        raise ScriptError(
            f"role must be system, user or assistant, not {role!r}",
            code="role_must_be_system_user",
            params={"role": str(role)},
        )
    return call.run.host.inject(
        Injection(
            id=injection_id,
            text=call.text(),
            position=_POSITIONS[position],
            depth=int(depth),
            role=role,
            scan=is_true(call.arg("scan", "false")),
            ephemeral=is_true(call.arg("ephemeral", "false")),
        )
    )


def flush_injections(call: Call) -> ScriptValue:
    return call.run.host.flush_injections(call.text().strip() or None)


def list_injections(call: Call) -> ScriptValue:
    injections = call.run.host.list_injections()
    return json.dumps(
        {
            key: {
                "value": item.text,
                "position": item.position,
                "depth": item.depth,
                "role": item.role,
                "scan": item.scan,
                "ephemeral": item.ephemeral,
            }
            for key, item in injections.items()
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _book(call: Call) -> str:
    book = call.arg("file") or call.arg("book") or ""
    if not book:
        raise ScriptError("name the lorebook with file=", code="name_lorebook_with_file")
    return book


def find_entry(call: Call) -> ScriptValue:
    query = call.text().strip()
    if not query:
        raise ScriptError("give the text to look up", code="give_text_to_look_up")
    return call.run.host.find_entry(_book(call), call.arg("field", "key") or "key", query)


def entry_field(call: Call) -> ScriptValue:
    uid = call.text().strip()
    if not uid:
        raise ScriptError("give the entry's uid", code="give_entry_s_uid")
    return call.run.host.entry_field(_book(call), uid, call.arg("field", "content") or "content")


_MEMBER_HELP = {
    "disable": "Mute a member of the group chat (it no longer takes turns).",
    "enable": "Unmute a member of the group chat.",
    "add": "Add a character to the group chat.",
    "remove": "Remove a member from the group chat.",
    "up": "Move a member one place earlier in the group's order.",
    "down": "Move a member one place later in the group's order.",
}


def _member(action: str) -> Command:
    def change(call: Call) -> ScriptValue:
        member = call.text().strip()
        if not member:
            raise ScriptError(
                f"/member-{action} needs a member's name (or its 0-based index)",
                code="member_needs_member_s_name",
                params={"action": str(action)},
            )
        return call.run.host.group_member(action, member)

    return Command(
        f"member-{action}",
        change,
        _MEMBER_HELP[action],
        usage=f"/member-{action} name",
    )


COMMANDS = (
    Command(
        "send",
        send,
        "Add a user message (no reply is generated).",
        usage="/send [at=i] [name=persona] text",
    ),
    Command("sendas", send_as, "Add a message as a character.", usage="/sendas name=Name text"),
    Command("sys", narrate, "Add a narrator message.", ("nar",), usage="/sys [at=i] text"),
    Command(
        "addswipe",
        add_swipe,
        "Add a swipe to the last message (shown with switch=true); returns its place.",
        ("swipeadd",),
        usage="/addswipe [switch=true] text",
    ),
    Command(
        "delswipe",
        delete_swipe,
        "Delete a swipe of the last message (1-based; without: the one shown).",
        ("swipedel",),
        usage="/delswipe [n]",
    ),
    Command(
        "sysname",
        narrator_name,
        "Name the chat's narrator (/sys messages); without a name: System.",
        usage="/sysname [name]",
    ),
    Command(
        "comment",
        comment,
        "Add a comment: shown, never sent to the model.",
        usage="/comment [at=i] text",
    ),
    Command("hide", hide, "Hide messages from the model (still shown).", usage="/hide 2-5"),
    Command("unhide", unhide, "Show hidden messages to the model again.", usage="/unhide 2-5"),
    Command("cut", cut, "Delete messages and return their texts.", usage="/cut 2-4"),
    Command("delmode", delete_last, "Delete the last N messages.", ("del",), usage="/del N"),
    Command("delname", delete_by_name, "Delete every message of a name.", usage="/delname Name"),
    Command(
        "messages",
        messages,
        "The text of a message or a range of them (names=off, hidden=on, role=user|...).",
        ("message",),
        usage="/messages [names=on|off] [hidden=on|off] [role=system|assistant|user] 2-5",
    ),
    _generation("gen", needs_prompt=True),
    _generation("genraw", needs_prompt=True),
    _generation("trigger"),
    _generation("continue"),
    _generation("impersonate"),
    _generation("swipe"),
    Command(
        "inject",
        inject,
        "Place a prompt by id: position=after|before|chat|none, depth=4, role, scan, ephemeral.",
        usage="/inject id=name [position=chat] [depth=4] [role=system] [scan=false] [ephemeral=false] text",
    ),
    Command(
        "flushinject",
        flush_injections,
        "Remove one injection by id, or all of them.",
        ("flushinjects",),
        usage="/flushinject [id]",
    ),
    Command("listinjects", list_injections, "The chat's injections as JSON.", usage="/listinjects"),
    Command(
        "findentry",
        find_entry,
        "The uid of the lorebook entry whose field (key) best matches the text.",
        ("lore", "findlore", "findwi"),
        usage="/findentry file=Book (or book=) [field=key] text",
    ),
    Command(
        "getentryfield",
        entry_field,
        "A field (content) of the lorebook entry with this uid.",
        ("getlorefield", "getwifield"),
        usage="/getentryfield file=Book [field=content] uid",
    ),
    *(_member(action) for action in _MEMBER_HELP),
)
