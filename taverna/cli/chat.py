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

from taverna.cli.chat_commands import run_command
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

    # ------------------------------------------------------------- scripts

    def revision(self) -> int:
        return int(self.ctx.chats.get_chat(self.chat_id).revision)

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
                    if not run_command(self, line.strip()):
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
