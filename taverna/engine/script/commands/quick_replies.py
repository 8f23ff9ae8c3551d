"""Quick Reply commands: /qr-list /qr-set-list /qr-get, /qr-create /qr-update /qr-delete,
/qr-contextadd /qr-contextdel /qr-contextclear for a reply's context menu, /qr-set-create
/qr-set-update /qr-set-delete, and /qr-set(-on/-off) /qr-chat-set(-on/-off) to turn sets on
globally or in the chat (shown, or with `visible=false` running without buttons). The host carries them out on the library's sets; a failure is told
as an error notice and the script goes on, as SillyTavern's quick-reply extension does."""

from __future__ import annotations

from taverna.engine.script.interpreter import Call, Command
from taverna.engine.script.scope import ScriptValue

# Named arguments the commands pass on, as SillyTavern names them.
ARGUMENTS = (
    "set", "label", "id", "newlabel", "title", "icon", "showlabel", "hidden", "startup",
    "user", "bot", "load", "new", "group", "automationId", "visible", "name", "nosend",
    "before", "inject", "chain",
)  # fmt: skip

_HELP = {
    "qr-list": ("The labels of a set's Quick Replies, as a JSON list.", "/qr-list set name"),
    "qr-set-list": (
        "The names of the Quick Reply sets (all, global or chat), as a JSON list.",
        "/qr-set-list [all|global|chat]",
    ),
    "qr-get": (
        "A Quick Reply as JSON, by set and label (or id).",
        "/qr-get set=name label=label | id=n",
    ),
    "qr-create": (
        "Add a Quick Reply to a set (hidden, startup, user, bot, load, new, group flags).",
        "/qr-create set=name label=label [title=...] [user=true] script",
    ),
    "qr-update": (
        "Change a Quick Reply (newlabel=, flags, and its script when one is given).",
        "/qr-update set=name label=label|id=n [newlabel=...] [script]",
    ),
    "qr-delete": ("Delete a Quick Reply from a set.", "/qr-delete set=name [label=|id=] [label]"),
    "qr-contextadd": (
        "Add a set to a Quick Reply's context menu (chain=true runs the reply first).",
        "/qr-contextadd set=name label=label|id=n [chain=true] other set",
    ),
    "qr-contextdel": (
        "Remove a set from a Quick Reply's context menu.",
        "/qr-contextdel set=name label=label|id=n other set",
    ),
    "qr-contextclear": (
        "Remove every set from a Quick Reply's context menu.",
        "/qr-contextclear set=name [id=n] label",
    ),
    "qr-set-create": (
        "Make a new, empty Quick Reply set (nosend, before, inject options).",
        "/qr-set-create [nosend=true] [before=true] [inject=true] name",
    ),
    "qr-set-update": (
        "Change a Quick Reply set's nosend, before and inject options.",
        "/qr-set-update [nosend=] [before=] [inject=] name",
    ),
    "qr-set-delete": ("Delete a Quick Reply set.", "/qr-set-delete name"),
    "qr-set": (
        "Turn a set on in every chat, or off if it is on (visible=false: no buttons).",
        "/qr-set [visible=false] name",
    ),
    "qr-set-on": (
        "Turn a set on in every chat, or change whether its buttons show.",
        "/qr-set-on [visible=false] name",
    ),
    "qr-set-off": ("Turn a set off in every chat.", "/qr-set-off name"),
    "qr-chat-set": (
        "Turn a set on in this chat, or off if it is on (visible=false: no buttons).",
        "/qr-chat-set [visible=false] name",
    ),
    "qr-chat-set-on": (
        "Turn a set on in this chat, or change whether its buttons show.",
        "/qr-chat-set-on [visible=false] name",
    ),
    "qr-chat-set-off": ("Turn a set off in this chat.", "/qr-chat-set-off name"),
}


def _command(name: str) -> Command:
    def run(call: Call) -> ScriptValue:
        named = {key: value for key in ARGUMENTS if (value := call.arg(key)) is not None}
        return call.run.host.quick_reply_command(name, named, call.text())

    help_text, usage = _HELP[name]
    return Command(name, run, help_text, usage=usage)


COMMANDS = tuple(_command(name) for name in _HELP)
