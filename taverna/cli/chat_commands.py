"""The terminal chat's slash commands (`/swipe`, `/edit N`, `/hide N-M`, `/summary`, ...):
each a small function of the session and the rest of its line. A line that names none of
them runs as an STscript in the chat."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from taverna.errors import NotFound, TavernaError


class Session(Protocol):
    """What a command uses of the terminal chat's session (`cli.chat.Session`)."""

    ctx: Any
    chat_id: str
    group_id: str | None
    groups: Any
    connection: str | None
    generation: Any
    runner: Any

    def echo(self, text: str = "", *, end: str = "\n") -> None: ...

    def show(self, last: int | None = None) -> None: ...

    def say(self, text: str, member: str | None = None) -> Any: ...

    def round(self, text: str, member: str | None = None) -> Any: ...

    def generate(self, start: Any, *args: Any, member: str | None = None) -> Any: ...

    def revision(self) -> int: ...

    def script(self, text: str, *, follow: bool = True) -> str | None: ...


HELP = """commands:
  /swipe            another reply in place of the last one (kept as a candidate)
  /regen            regenerate the last reply (the old one is deleted, restorably)
  /continue         extend the last message
  /impersonate      let the model draft your next message
  /edit N [TEXT]    replace message N's text
  /hide N[-M]       hide messages from the model (/unhide to undo)
  /branch NAME      name a branch at the last message
  /prompt           show the last prompt's ledger (or the next one's) and its summary
  /summary [make | set TEXT | remove]   the chat's summaries; make one now, change or
                    remove the one in force
  /drafts /keep /drop   drafts left by stopped or failed replies
  /quit
any other line starting with / runs as an STscript (/help script lists its commands),
e.g.  /setvar key=mood calm | /sys The wind rises. | /trigger"""

GROUP_HELP = """in a group:
  /speak NAME       have a member speak now
  /swipe [NAME]     another reply in place of the last one, by NAME if given
  /mute NAME        a muted member is never picked to speak (/unmute to undo)
  /members          the members, in order, muted ones marked"""

# A command: the session, the command's name as typed (`hide` or `unhide`), the rest.
Command = Callable[[Session, str, str], None]


def run_command(session: Session, line: str) -> bool:
    """Run one slash command; False when the session should end."""
    name, _, rest = line[1:].partition(" ")
    if name in ("quit", "exit", "q"):
        return False
    command = (GROUP_COMMANDS.get(name) if session.group_id else None) or COMMANDS.get(name)
    if command is None:
        session.script(line)
    else:
        command(session, name, rest.strip())
    return True


def _message_number(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise TavernaError(f"{text!r} is not a message number", field="N") from None


def _node_at(session: Session, position: int) -> Any:
    for entry in session.ctx.chats.active_path(session.chat_id).entries:
        if entry.position == position:
            return entry.node
    raise NotFound(f"there is no message {position}", field="N")


# ------------------------------------------------------------------ replies


def _help(session: Session, name: str, rest: str) -> None:
    if rest == "script":
        session.script("/help")
        return
    session.echo(HELP)
    if session.group_id:
        session.echo(GROUP_HELP)


def _swipe(session: Session, name: str, rest: str) -> None:
    session.generate(session.generation.swipe, member=rest or None)


def _regenerate(session: Session, name: str, rest: str) -> None:
    session.generate(session.generation.regenerate)


def _continue(session: Session, name: str, rest: str) -> None:
    session.generate(session.generation.continue_reply)


def _impersonate(session: Session, name: str, rest: str) -> None:
    generation = session.generation
    done = session.generate(generation.impersonate)
    if done and done.draft_id:
        answer = input("send it as yours? [Y/n] ").strip().lower()
        if answer in ("", "y", "yes"):
            generation.keep_draft(done.draft_id)
            session.say("")
        else:
            generation.drop_draft(done.draft_id)


# ----------------------------------------------------------------- the path


def _edit(session: Session, name: str, rest: str) -> None:
    number, _, text = rest.partition(" ")
    node = _node_at(session, _message_number(number))
    text = text or input(f"new text for [{number}]: ")
    session.ctx.chats.edit(session.chat_id, node.id, text, revision=session.revision())
    session.echo(f"[{number}] edited")


def _hide(session: Session, name: str, rest: str) -> None:
    start, _, end = rest.partition("-")
    first = _message_number(start)
    session.ctx.chats.hide_range(
        session.chat_id,
        first,
        _message_number(end) if end else first,
        revision=session.revision(),
        hidden=name == "hide",
    )
    session.echo(f"{name}: {rest}")


def _branch(session: Session, name: str, rest: str) -> None:
    chats = session.ctx.chats
    leaf = chats.get_chat(session.chat_id).active_leaf_id
    if not rest or leaf is None:
        raise TavernaError("usage: /branch NAME")
    chats.branch_from(session.chat_id, leaf, rest, revision=session.revision())
    session.echo(f"on branch {rest!r}")


# ------------------------------------------------------ the prompt and summaries


def _prompt(session: Session, name: str, rest: str) -> None:
    from taverna.services.memory.summaries import SummaryService, describe
    from taverna.services.turns import render_ledger

    prompt = session.generation.last_prompts.get(session.chat_id)
    if prompt is None:
        session.echo("(no reply yet in this session: the prompt the next reply would get)")
        prompt = session.generation.preview(session.chat_id, connection=session.connection)
    session.echo(render_ledger(prompt))
    session.echo(describe(prompt, SummaryService(session.ctx.chats).current(session.chat_id)))


def _summary(session: Session, name: str, rest: str) -> None:
    """`/summary`: the path's summaries; `make`, `set TEXT`, `remove` change them."""
    from taverna.services.memory.summaries import SummaryService

    summaries = SummaryService(session.ctx.chats)
    action, _, text = rest.partition(" ")
    if action == "make":
        if session.ctx.summaries is None:
            raise TavernaError("summaries are not available here")
        outcome = session.runner.run(session.ctx.summaries.summarize(session.chat_id))
        if outcome.cut:
            session.echo("(the summary stopped at its length limit: its end may be missing)")
    elif action == "set":
        summaries.edit(session.chat_id, text, revision=session.revision())
    elif action == "remove":
        summaries.remove(session.chat_id, revision=session.revision())
    elif action:
        raise TavernaError("usage: /summary [make | set TEXT | remove]")
    along = summaries.along(session.chat_id)
    if not along:
        session.echo("no summaries on this path")
    for info in along:
        session.echo(f"summary #{info.number} (message #{info.covers - 1}): {info.text}")


# -------------------------------------------------------------------- drafts


def _drafts(session: Session, name: str, rest: str) -> None:
    for draft in session.generation.drafts(session.chat_id):
        session.echo(f"- {draft.kind.value} ({draft.reason}): {draft.text}")


def _keep_or_drop(session: Session, name: str, rest: str) -> None:
    """`/keep` writes the newest draft into the chat, `/drop` forgets it."""
    generation = session.generation
    drafts = generation.drafts(session.chat_id)
    if not drafts:
        session.echo("no drafts")
    elif name == "keep":
        generation.keep_draft(drafts[-1].id)
        session.show(last=1)
    else:
        generation.drop_draft(drafts[-1].id)


# -------------------------------------------------------------------- groups


def _speak(session: Session, name: str, rest: str) -> None:
    if not rest:
        raise TavernaError("usage: /speak NAME", field="NAME")
    session.round("", rest)


def _mute(session: Session, name: str, rest: str) -> None:
    assert session.group_id is not None
    if not rest:
        raise TavernaError(f"usage: /{name} NAME", field="NAME")
    session.groups.set_muted(session.group_id, rest, name == "mute")
    session.echo(f"{rest} {'muted' if name == 'mute' else 'unmuted'}")


def _members(session: Session, name: str, rest: str) -> None:
    assert session.group_id is not None
    groups = session.groups
    chat = session.ctx.chats.get_chat(session.chat_id)
    for found in groups.members(groups.get(session.group_id), chat):
        session.echo(f"- {found.name}{'  (muted)' if found.muted else ''}")


COMMANDS: dict[str, Command] = {
    "help": _help,
    "swipe": _swipe,
    "regen": _regenerate,
    "regenerate": _regenerate,
    "continue": _continue,
    "impersonate": _impersonate,
    "edit": _edit,
    "hide": _hide,
    "unhide": _hide,
    "branch": _branch,
    "prompt": _prompt,
    "summary": _summary,
    "drafts": _drafts,
    "keep": _keep_or_drop,
    "drop": _keep_or_drop,
}

# Only in a group chat; elsewhere these names run as STscript commands.
GROUP_COMMANDS: dict[str, Command] = {
    "speak": _speak,
    "mute": _mute,
    "unmute": _mute,
    "members": _members,
}
