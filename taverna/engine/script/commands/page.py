"""Commands on what the page holds around a chat: the input box, the running generation,
instruct mode and the system prompt, the lorebooks every chat uses, characters' tags."""

from __future__ import annotations

from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ScriptValue
from taverna.engine.script.values import is_true


def set_input(call: Call) -> ScriptValue:
    text = call.text()
    call.run.set_input(text)
    return text


def stop(call: Call) -> ScriptValue:
    return "true" if call.run.host.stop_generation() else "false"


def _state(name: str) -> Command:
    """`/instruct-state` and `/sysprompt-state`: read, or set with on/true/1 (anything
    else turns it off, `toggle` included, as 1.12.6 reads its argument)."""

    def run(call: Call) -> ScriptValue:
        text = call.text()
        state = is_true(text) if text else None
        return "true" if call.run.host.switch(name, state) else "false"

    what = "instruct mode" if name == "instruct" else "the system prompt"
    return Command(
        f"{name}-state",
        run,
        f"Whether {what} is on; with on or off, turn it on or off.",
        (f"{name}-toggle",),
        usage=f"/{name}-state [on|off]",
    )


def world(call: Call) -> ScriptValue:
    """Turn global lorebooks on (the default), off or toggle them; none named: all off."""
    names = [name.strip() for name in call.text().strip().split(",") if name.strip()]
    call.run.host.select_books(names, (call.arg("state") or "on").strip().lower())
    return ""


def _tag_target(call: Call) -> str | None:
    return call.arg("name") or None


def tag_list(call: Call) -> ScriptValue:
    found = call.run.host.character_tags(_tag_target(call))
    return ", ".join(found or ())


def tag_exists(call: Call) -> ScriptValue:
    tag = call.text().strip().lower()
    found = call.run.host.character_tags(_tag_target(call)) or ()
    return "true" if any(t.lower() == tag for t in found) else "false"


def _tag_change(*, add: bool) -> Command:
    def run(call: Call) -> ScriptValue:
        tag = call.text().strip()
        if not tag:
            return "false"
        return "true" if call.run.host.change_tag(_tag_target(call), tag, add=add) else "false"

    name = "tag-add" if add else "tag-remove"
    doing = "Add a tag to" if add else "Remove a tag from"
    return Command(
        name,
        run,
        f"{doing} a character (name=, the chat's own without); whether its tags changed.",
        usage=f"/{name} [name=character] tag",
    )


COMMANDS: tuple[Command, ...] = (
    Command(
        "setinput",
        set_input,
        "Put the text in the chat input box (and in the pipe).",
        usage="/setinput text",
    ),
    Command(
        "stop",
        stop,
        "Stop the chat's running generation; true when one was running.",
        ("generate-stop",),
        usage="/stop",
    ),
    _state("instruct"),
    _state("sysprompt"),
    Command(
        "world",
        world,
        "Turn lorebooks used by every chat on (state=off, state=toggle); none named: all off.",
        usage="/world [state=on|off|toggle] [silent=true] name,name",
    ),
    Command(
        "tag-list",
        tag_list,
        "A character's tags, comma-separated.",
        usage="/tag-list [name=character]",
    ),
    Command(
        "tag-exists",
        tag_exists,
        "Whether a character has the tag.",
        usage="/tag-exists [name=character] tag",
    ),
    _tag_change(add=True),
    _tag_change(add=False),
)
