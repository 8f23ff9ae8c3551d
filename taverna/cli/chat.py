"""`taverna chat CHARACTER` (or `--group NAME`): a chat in the terminal, on the same
services and store as the server.

Type a message to send it. Commands: /swipe, /regen, /continue, /impersonate,
/edit N [TEXT], /hide N[-M], /unhide N[-M], /branch NAME, /prompt, /summary, /drafts,
/keep, /drop, /help, /quit; in a group /speak NAME, /mute NAME, /unmute NAME, /members; any
other line starting with `/` runs as an STscript in the chat. Ctrl-C while the model
writes stops it (what streamed is kept as a draft; in a group the round ends).
`--say TEXT` runs one turn without a terminal and prints the reply.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from taverna.cli.main import app
from taverna.errors import NotFound, TavernaError
from taverna.model.chat import NodeRole
from taverna.services.turns import (
    Completed,
    Ending,
    ReasoningDelta,
    RunningGeneration,
    StreamError,
    TextDelta,
    ToolResult,
)

# The Quick Reply triggers a saved generation sets off, by the service method that ran it.
_TRIGGERS = {
    "send": ("user", "ai"),
    "swipe": ("ai",),
    "regenerate": ("ai",),
    "continue_reply": ("ai",),
}

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


class Session:
    """One terminal chat: the services of the data folder and the chat being read."""

    def __init__(self, ctx: Any, chat_id: str, connection: str | None, out: Any) -> None:
        from taverna.services.chats.groups import GroupService

        self.ctx = ctx
        self.chat_id = chat_id
        self.group_id: str | None = ctx.chats.get_chat(chat_id).group_id
        self.groups = GroupService(ctx.chats)
        self.connection = connection
        self.out = out
        self.generation = ctx.generation
        # One event loop for the whole session, so one HTTP client keeps its connections.
        self.runner = asyncio.Runner()
        self.runner.run(ctx.open_http())
        # Quick Replies run on their triggers after the person's own turns; a reply one of
        # them asks for does not set them off again (SillyTavern's `preventAutoExecute`).
        self.auto = True

    def close(self) -> None:
        self.runner.run(self.ctx.close_http())
        self.runner.close()

    def echo(self, text: str = "", *, end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    # -------------------------------------------------------------- showing

    def show(self, last: int | None = None) -> None:
        path = self.ctx.chats.active_path(self.chat_id)
        entries = path.entries[-last:] if last else path.entries
        for entry in entries:
            node = entry.node
            who = node.speaker or node.role.value
            marks = []
            if entry.candidate_count > 1:
                marks.append(f"‹{entry.candidate_index + 1}/{entry.candidate_count}›")
            if node.hidden:
                marks.append("hidden")
            tail = f"  ({', '.join(marks)})" if marks else ""
            self.echo(f"[{entry.position}] {who}:{tail}\n{node.content}\n")

    # ------------------------------------------------------------ generating

    async def follow(self, run: RunningGeneration) -> Completed:
        """Print a generation as it streams; Ctrl-C stops it."""
        try:
            thinking = False
            async for _, event in run.follow():
                if isinstance(event, ReasoningDelta):
                    if not thinking:
                        self.echo("(thinking) ", end="")
                        thinking = True
                    self.echo(event.text, end="")
                elif isinstance(event, TextDelta):
                    if thinking:
                        self.echo("\n")
                        thinking = False
                    self.echo(event.text, end="")
                elif isinstance(event, ToolResult):
                    self.echo(f"\n[tool {event.name} → {event.result}]")
                elif isinstance(event, StreamError):
                    self.echo()
                elif isinstance(event, Completed):
                    self.echo()
                    return event
        except asyncio.CancelledError:
            await self.generation.stop(run.id)
            raise
        result = await run.wait()
        return result

    def report(self, done: Completed) -> None:
        if done.outcome is Ending.FAILED:
            print(f"error: {done.error}", file=sys.stderr)
        elif done.outcome is Ending.STOPPED:
            self.echo("stopped.")
        if done.draft_id and done.outcome is not Ending.IMPERSONATED:
            self.echo("what streamed is kept as a draft: /keep writes it, /drop forgets it")

    def say(self, text: str, member: str | None = None) -> Completed | None:
        """Send a message (in a group, a round: each speaker's reply streams in turn)."""
        if self.group_id is None:
            return self.generate(self.generation.send, text)
        done = self.round(text, member)
        if done is not None and done.outcome is Ending.SAVED:
            self.after_turn("user", "ai")
        return done

    def round(self, text: str, member: str | None = None) -> Completed | None:
        """A group round to its end; Ctrl-C stops the speaker writing and ends the round."""
        rounds: list[Any] = []
        last: list[Completed] = []

        async def main() -> None:
            settled: list[asyncio.Task[Completed]] = []
            found = await self.generation.round(
                self.chat_id,
                text,
                connection=self.connection,
                member=member,
                started=lambda run: settled.append(self.ctx.follow_up(run)),
            )
            rounds.append(found)
            if not found.speakers:
                self.echo("(nobody was picked to answer: /speak NAME)")
            shown = 0
            while shown < len(found.runs) or not found.done:
                if shown == len(found.runs):
                    await asyncio.sleep(0.02)
                    continue
                run = found.runs[shown]
                self.echo(f"{found.speakers[shown]}: ", end="")
                shown += 1
                done = await self.follow(run)
                self.report(done)
                last.append(done)
            if found.task is not None:
                await found.task
            for task in settled:
                await task

        try:
            self.runner.run(main())
        except KeyboardInterrupt:
            if rounds:
                rounds[0].stopped = True
            self.echo("\nstopped; the round ends (what streamed is kept as a draft: /keep)")
            return None
        return last[-1] if last else None

    def members(self) -> list[Any]:
        assert self.group_id is not None
        return self.groups.members(
            self.groups.get(self.group_id), self.ctx.chats.get_chat(self.chat_id)
        )

    def generate(self, start: Any, *args: Any, member: str | None = None) -> Completed | None:
        """Run one generation to its end in this thread's event loop."""

        started: list[RunningGeneration] = []
        more = {"member": member} if member else {}

        async def main() -> Completed:
            run = await start(self.chat_id, *args, connection=self.connection, **more)
            started.append(run)
            settled = self.ctx.follow_up(run)  # keeps the prompt as sent, backs the chat up
            done = await self.follow(run)
            await settled
            if run.task is not None:
                await asyncio.wait([run.task])  # its after-reply work is started by then
            summary = self.generation.follow_ups.get(self.chat_id)
            if summary is not None:
                await summary  # an automatic summary is made before the next line is read
            return done

        try:
            done = self.runner.run(main())
        except KeyboardInterrupt:
            result = started[0].result if started else None
            if result is not None and result.draft_id:
                self.echo("\nstopped; what streamed is kept as a draft: /keep or /drop")
            else:
                self.echo("\nstopped before any text came")
            return None
        self.report(done)
        if done.outcome is Ending.SAVED:
            self.after_turn(*_TRIGGERS.get(getattr(start, "__name__", ""), ()))
        return done

    # ---------------------------------------------------------- quick replies

    def triggered(self, *triggers: str) -> None:
        """Run the chat's Quick Replies set to run on `triggers` (startup, new_chat,
        chat_change, user, ai), one after another; then the reply one of them asked for."""
        from taverna.services.scripts.quick_replies import QuickReplyService

        replies = QuickReplyService(self.ctx.chats).replies(self.chat_id)
        self.run_replies([r.message for t in triggers for r in replies if t in r.triggers])

    def after_turn(self, *triggers: str) -> None:
        """After a saved turn: the Quick Replies of its triggers, then those whose
        automation id matches a lorebook entry that went into the reply's prompt."""
        if not self.auto or not triggers:
            return
        from taverna.services.scripts.quick_replies import QuickReplyService

        service = QuickReplyService(self.ctx.chats)
        replies = service.replies(self.chat_id)
        scripts = [r.message for t in triggers for r in replies if t in r.triggers]
        leaf = self.ctx.chats.get_chat(self.chat_id).active_leaf_id
        if "ai" in triggers and leaf and any(r.automation_id for r in replies):
            pending = self.generation.last_prompts.get(self.chat_id)
            for automation in service.activated_automations(self.chat_id, leaf, pending=pending):
                scripts += [r.message for r in replies if r.automation_id == automation]
        self.run_replies(scripts)

    def run_replies(self, messages: list[str]) -> None:
        scripts = [m.strip() for m in messages if m.strip().startswith("/")]
        if not scripts:
            return
        self.auto = False
        try:
            asked: str | None = None
            for text in scripts:
                asked = self.script(text, follow=False) or asked
            self.follow_up(asked)
        finally:
            self.auto = True

    # -------------------------------------------------------------- commands

    def revision(self) -> int:
        return int(self.ctx.chats.get_chat(self.chat_id).revision)

    def node_at(self, position: int) -> Any:
        for entry in self.ctx.chats.active_path(self.chat_id).entries:
            if entry.position == position:
                return entry.node
        raise NotFound(f"there is no message {position}", field="N")

    def command(self, line: str) -> bool:
        """Run one slash command; False when the session should end."""
        name, _, rest = line[1:].partition(" ")
        rest = rest.strip()
        chats, generation = self.ctx.chats, self.generation
        if name in ("quit", "exit", "q"):
            return False
        if name == "help" and rest == "script":
            self.script("/help")
        elif name == "help":
            self.echo(HELP)
            if self.group_id:
                self.echo(GROUP_HELP)
        elif name == "swipe":
            self.generate(generation.swipe, member=rest or None)
        elif self.group_id and name == "speak":
            if not rest:
                raise TavernaError("usage: /speak NAME", field="NAME")
            self.round("", rest)
        elif self.group_id and name in ("mute", "unmute"):
            if not rest:
                raise TavernaError(f"usage: /{name} NAME", field="NAME")
            self.groups.set_muted(self.group_id, rest, name == "mute")
            self.echo(f"{rest} {'muted' if name == 'mute' else 'unmuted'}")
        elif self.group_id and name == "members":
            for found in self.members():
                self.echo(f"- {found.name}{'  (muted)' if found.muted else ''}")
        elif name in ("regen", "regenerate"):
            self.generate(generation.regenerate)
        elif name == "continue":
            self.generate(generation.continue_reply)
        elif name == "impersonate":
            done = self.generate(generation.impersonate)
            if done and done.draft_id:
                answer = input("send it as yours? [Y/n] ").strip().lower()
                if answer in ("", "y", "yes"):
                    generation.keep_draft(done.draft_id)
                    self.say("")
                else:
                    generation.drop_draft(done.draft_id)
        elif name == "edit":
            number, _, text = rest.partition(" ")
            node = self.node_at(_int(number))
            text = text or input(f"new text for [{number}]: ")
            chats.edit(self.chat_id, node.id, text, revision=self.revision())
            self.echo(f"[{number}] edited")
        elif name in ("hide", "unhide"):
            start, _, end = rest.partition("-")
            first = _int(start)
            chats.hide_range(
                self.chat_id,
                first,
                _int(end) if end else first,
                revision=self.revision(),
                hidden=name == "hide",
            )
            self.echo(f"{name}: {rest}")
        elif name == "branch":
            leaf = chats.get_chat(self.chat_id).active_leaf_id
            if not rest or leaf is None:
                raise TavernaError("usage: /branch NAME")
            chats.branch_from(self.chat_id, leaf, rest, revision=self.revision())
            self.echo(f"on branch {rest!r}")
        elif name == "prompt":
            self.show_prompt()
        elif name == "summary":
            self.summary(rest)
        elif name == "drafts":
            for draft in generation.drafts(self.chat_id):
                self.echo(f"- {draft.kind.value} ({draft.reason}): {draft.text}")
        elif name in ("keep", "drop"):
            drafts = generation.drafts(self.chat_id)
            if not drafts:
                self.echo("no drafts")
            elif name == "keep":
                generation.keep_draft(drafts[-1].id)
                self.show(last=1)
            else:
                generation.drop_draft(drafts[-1].id)
        else:
            self.script(line)
        return True

    def script(self, text: str, *, follow: bool = True) -> str | None:
        """Run an STscript in the chat; show its notices, result and new messages, then
        start the reply it asked for (with `follow`; else return what it asked for)."""
        from taverna.services.scripts.runner import ScriptService

        before = len(self.ctx.chats.active_path(self.chat_id).nodes)
        run = ScriptService(self.ctx.chats).run(text, chat_id=self.chat_id, ask=self.ask)
        for severity, notice in run.notices:
            self.echo(notice if severity == "info" else f"{severity}: {notice}")
        if run.result.pipe and not run.notices:
            self.echo(run.result.pipe)
        added = len(self.ctx.chats.active_path(self.chat_id).nodes) - before
        if added > 0:
            self.show(last=added)
        if run.result.aborted:
            self.echo(f"(aborted: {run.result.abort_reason})")
        if not follow:
            return run.follow_up
        self.follow_up(run.follow_up)
        return None

    def ask(self, request: Any) -> str:
        """A script's `/gen` or `/genraw`, answered by the model in this session's loop."""
        from taverna.services.turns.quiet import quiet_text

        return self.runner.run(
            quiet_text(self.generation, self.chat_id, request, connection_name=self.connection)
        )

    def follow_up(self, kind: str | None) -> None:
        generation = self.generation
        if kind == "trigger":
            self.say("")
        elif kind == "continue":
            self.generate(generation.continue_reply)
        elif kind == "swipe":
            self.generate(generation.swipe)
        elif kind == "impersonate":
            done = self.generate(generation.impersonate)
            if done and done.draft_id:
                self.echo("(the draft is kept: /keep writes it as yours, /drop forgets it)")

    def show_prompt(self) -> None:
        from taverna.services.turns import render_ledger

        prompt = self.generation.last_prompts.get(self.chat_id)
        if prompt is None:
            self.echo("(no reply yet in this session: the prompt the next reply would get)")
            prompt = self.generation.preview(self.chat_id, connection=self.connection)
        self.echo(render_ledger(prompt))
        from taverna.services.memory.summaries import SummaryService, describe

        self.echo(describe(prompt, SummaryService(self.ctx.chats).current(self.chat_id)))

    def summary(self, rest: str) -> None:
        """`/summary`: the path's summaries; `make`, `set TEXT`, `remove` change them."""
        from taverna.services.memory.summaries import SummaryService

        summaries = SummaryService(self.ctx.chats)
        action, _, text = rest.partition(" ")
        if action == "make":
            if self.ctx.summaries is None:
                raise TavernaError("summaries are not available here")
            outcome = self.runner.run(self.ctx.summaries.summarize(self.chat_id))
            if outcome.cut:
                self.echo("(the summary stopped at its length limit: its end may be missing)")
        elif action == "set":
            summaries.edit(self.chat_id, text, revision=self.revision())
        elif action == "remove":
            summaries.remove(self.chat_id, revision=self.revision())
        elif action:
            raise TavernaError("usage: /summary [make | set TEXT | remove]")
        along = summaries.along(self.chat_id)
        if not along:
            self.echo("no summaries on this path")
        for info in along:
            self.echo(f"summary #{info.number} (message #{info.covers - 1}): {info.text}")

    def loop(self) -> None:
        self.show(last=6)
        self.echo("(type a message, or /help)")
        while True:
            try:
                line = input("> ")
            except (EOFError, KeyboardInterrupt):
                self.echo()
                return
            if not line.strip():
                continue
            before = self.revision()
            try:
                if line.startswith("/"):
                    if not self.command(line.strip()):
                        return
                else:
                    self.say(line)
            except TavernaError as exc:
                self.echo(f"error: {exc}")
            finally:
                self.backed_up(before)

    def backed_up(self, before: int) -> None:
        """Back the chat up if the last line changed it (throttled, as the server does)."""
        if self.revision() != before:
            self.ctx.chat_written(self.chat_id)


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise TavernaError(f"{text!r} is not a message number", field="N") from None


def open_group_chat(ctx: Any, group: str, chat_id: str | None) -> str:
    """The group's chat to use: the one named, else the group's newest, else a new one."""
    from taverna.services.chats.groups import GroupService

    if chat_id:
        return str(ctx.chats.get_chat(chat_id).id)
    groups = GroupService(ctx.chats)
    try:
        doc = groups.find(group)
    except NotFound:
        names = ", ".join(sorted(d.name for d in groups.all()))
        raise NotFound(
            f"no group named {group!r} in the library (there are: {names or 'none'}); "
            "add one with `taverna import GROUP.json`",
            field="group",
        ) from None
    newest = groups.newest_chat(doc.id)
    if newest is not None:
        return str(newest.id)
    return str(groups.start_chat(doc.id).id)


def _has_chat(ctx: Any, character: str | None, group: str | None) -> bool:
    """Whether the character (or group) has a chat already (opening one then makes none)."""
    from taverna.services.chats import reads as chat_reads
    from taverna.services.chats.groups import GroupService

    if group is not None:
        groups = GroupService(ctx.chats)
        try:
            return groups.newest_chat(groups.find(group).id) is not None
        except NotFound:
            return False
    return character is not None and chat_reads.newest_with(ctx.chats, character) is not None


def open_chat(ctx: Any, character: str, chat_id: str | None) -> str:
    """The chat to use: the one named, else the character's newest, else a new one."""
    from taverna.services.chats import reads as chat_reads
    from taverna.services.chats.editing import start_chat
    from taverna.services.library.service import LibraryKind

    if chat_id:
        return str(ctx.chats.get_chat(chat_id).id)
    library = ctx.library()
    doc = library.find(LibraryKind.CHARACTER, character)
    if doc is None:
        names = ", ".join(sorted(d.name for d in library.documents(LibraryKind.CHARACTER)))
        raise NotFound(
            f"no character named {character!r} in the library (there are: {names or 'none'}); "
            "add one with `taverna import CARD`"
        )
    newest = chat_reads.newest_with(ctx.chats, character)
    if newest is not None:
        return str(newest.chat.id)
    return str(start_chat(ctx.chats, doc.id, title=None, owner="").id)


@app.command()
def chat(
    character: Annotated[
        str | None, typer.Argument(help="the character's name in the library")
    ] = None,
    group: Annotated[
        str | None, typer.Option("--group", help="a group's name in the library (a group chat)")
    ] = None,
    chat_id: Annotated[
        str | None, typer.Option("--chat", help="a chat id (default: the newest)")
    ] = None,
    connection: Annotated[
        str | None, typer.Option("--connection", help="a connection name (default: the default)")
    ] = None,
    say: Annotated[
        str | None,
        typer.Option("--say", help="send this, print the reply, and exit (a /script runs)"),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Data folder (default: $TAVERNA_DATA or the user's one)."),
    ] = None,
) -> None:
    """Chat with a character (or a group) in the terminal, streaming the replies."""
    from taverna.services.house.data import resolve_data_dir
    from taverna.services.house.workspace import open_workspace

    if (character is None) == (group is None):
        raise typer.BadParameter("name a CHARACTER or give --group NAME (one of them)")
    ctx = open_workspace(resolve_data_dir(data))
    try:
        created = chat_id is None and not _has_chat(ctx, character, group)
        if group is not None:
            opened = open_group_chat(ctx, group, chat_id)
        else:
            assert character is not None
            opened = open_chat(ctx, character, chat_id)
        session = Session(ctx, opened, connection, sys.stdout)
        try:
            # SillyTavern's order: the app starting, a new chat, then the chat being opened.
            session.triggered("startup", *(["new_chat"] if created else []), "chat_change")
            if say is None:
                session.loop()
                return
            before = session.revision()
            if say.lstrip().startswith("/"):
                session.script(say.strip())  # a script, as in the terminal chat
                session.backed_up(before)
                return
            done = session.say(say)
            session.backed_up(before)
        finally:
            session.close()
        if done is None or done.outcome is not Ending.SAVED:
            raise typer.Exit(1)
        path = ctx.chats.active_path(session.chat_id)
        last = path.leaf
        assert last is not None and last.role is NodeRole.ASSISTANT
    finally:
        ctx.close()
