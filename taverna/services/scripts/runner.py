"""Running an STscript in a chat: the engine's interpreter over the chat's services.

`ScriptService.run(chat_id, text)` reads the chat variables at the active leaf and the
global ones from the library, runs the script (chat effects through `ChatScriptHost`),
then records the chat variables as state on the active leaf (so a branch before it does
not have them, formats-extensions.md §3) and the global ones in the library. A reply the
script asks for (`/trigger`, `/continue`, `/impersonate`, `/swipe`) is returned as a
follow-up for the caller to start once the script has ended, as SillyTavern starts
`/trigger` without waiting for it; `/gen` and `/genraw` are answered by the caller's
`ask` while the script waits.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from taverna.engine.assembly import regex_scripts
from taverna.engine.macros import Variables
from taverna.engine.script import (
    ChatHost,
    ChatLine,
    Generation,
    Injection,
    Limits,
    NoChat,
    ScriptContext,
    ScriptError,
    ScriptResult,
    run_script,
)
from taverna.errors import QuotaExceeded, StaleRevision, TavernaError
from taverna.model.chat import Chat, NodeRole
from taverna.services.chats.service import ChatService
from taverna.services.library.active_settings import global_variables, write_global_variables
from taverna.services.library.regex_library import RegexLayer, RegexLibrary
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.scripts.macros import script_macros
from taverna.services.scripts.quick_replies import QuickReplyService, find_quick_reply
from taverna.services.scripts.quick_reply_commands import QuickReplyCommands

__all__ = ["FOLLOW_UPS", "ChatScriptHost", "ScriptRun", "ScriptService"]

# Generations a script may ask for that the chat's own generation endpoints carry out.
FOLLOW_UPS = ("trigger", "continue", "impersonate", "swipe")
_INJECT_POSITIONS = {"none": -1, "after": 0, "chat": 1, "before": 2}
_INJECT_ROLES = {"system": 0, "user": 1, "assistant": 2}
SCRIPT_INJECTS = "script_injects"


class ScriptQuotaExceeded(ScriptError, QuotaExceeded):
    """A script's `/gen` or `/genraw` past the account's hourly quota: a script error
    (naming the command and where it stands) that a server answers as a used-up quota."""


@dataclass(frozen=True, slots=True)
class ScriptRun:
    """What a script did: its result, the chat after it, notices and the reply to start.

    `first_changed` is the parent of the first message the script added or changed
    (None: from the start), so a caller can redraw from there.
    """

    result: ScriptResult
    chat: Chat | None
    notices: tuple[tuple[str, str], ...] = ()
    follow_up: str | None = None
    changed: bool = False
    first_changed: str | None = None


@dataclass
class ChatScriptHost:
    """The chat effects of a script, written through the chat's service as they happen."""

    chats: ChatService
    library: LibraryService
    chat: Chat
    # How a `/gen` or `/genraw` is answered (None: they are refused here).
    ask: Callable[[Generation], str] | None = None
    notices: list[tuple[str, str]] = field(default_factory=list)
    follow_up: str | None = None
    changed: bool = False
    first_changed: str | None = None
    _touched: bool = False

    def _mark(self, parent: str | None) -> None:
        if not self._touched:
            self._touched = True
            self.first_changed = parent
        self.changed = True

    def _append(
        self,
        role: NodeRole,
        text: str,
        *,
        at: int | None,
        speaker: str,
        hidden: bool = False,
        extras: Mapping[str, Any] | None = None,
        slash: bool = False,
    ) -> str:
        if at is not None:
            nodes = self.chats.active_path(self.chat.id).nodes
            self._mark(nodes[at - 1].id if 0 < at <= len(nodes) else None)
            outcome = self.chats.insert_at(
                self.chat.id,
                at,
                role,
                text,
                revision=self.chat.revision,
                speaker=speaker,
                hidden=hidden,
                extras=extras,
                slash=slash,
            )
            self.chat = outcome.chat
            return ""
        self._mark(self.chat.active_leaf_id)
        outcome = self.chats.append(
            self.chat.id,
            role,
            text,
            revision=self.chat.revision,
            speaker=speaker,
            hidden=hidden,
            extras=extras,
            slash=slash,
        )
        self.chat = outcome.chat
        return ""

    def send(self, text: str, *, at: int | None, name: str | None) -> str:
        return self._append(NodeRole.USER, text, at=at, speaker=name or self.chat.user_name)

    def send_as(self, name: str, text: str, *, at: int | None) -> str:
        # SillyTavern regexes a /sendas message by the slash command placement.
        return self._append(NodeRole.ASSISTANT, text, at=at, speaker=name, slash=True)

    def narrate(self, text: str, *, at: int | None) -> str:
        name = self.chat.metadata.get("narrator_name")
        speaker = name if isinstance(name, str) and name else "System"
        return self._append(NodeRole.NARRATOR, text, at=at, speaker=speaker)

    def delay(self, seconds: float) -> None:
        time.sleep(seconds)

    def delete_swipe(self, index: int | None) -> int | None:
        last = self.chats.active_path(self.chat.id).nodes[-1]
        swipes = [
            c
            for c in self.chats.candidates(self.chat.id, last.id)
            if not c.deleted
            and not any(not k.deleted for k in self.chats.store.children(self.chat.id, c.id))
        ]
        ids = [c.id for c in swipes]
        if len(swipes) <= 1 or last.id not in ids:
            return None
        at = ids.index(last.id) if index is None else index
        if not 0 <= at < len(swipes):
            return None
        shown = min(at, len(swipes) - 2)
        keep = [c for i, c in enumerate(swipes) if i != at]
        self._mark(last.parent_id)
        self.chat = self.chats.delete(self.chat.id, ids[at], revision=self.chat.revision).chat
        if self.chat.active_leaf_id != keep[shown].id:
            self.chat = self.chats.select_candidate(
                self.chat.id, keep[shown].id, revision=self.chat.revision
            ).chat
        return shown

    def add_swipe(self, text: str, *, switch: bool) -> int:
        last = self.chats.active_path(self.chat.id).nodes[-1]
        self._mark(last.parent_id)
        added = self.chats.add_candidate(self.chat.id, last.id, text, revision=self.chat.revision)
        self.chat = added.chat
        if not switch and self.chat.active_leaf_id != last.id:
            back = self.chats.select_candidate(self.chat.id, last.id, revision=self.chat.revision)
            self.chat = back.chat
        alive = [c for c in self.chats.candidates(self.chat.id, last.id) if not c.deleted]
        return len(alive) - 1

    def run_regex(self, name: str, text: str, substitute: Callable[[str], str]) -> str | None:
        character = self.chat.characters[0].document_id if self.chat.characters else None
        return run_named_regex(self.library, character, name, text, substitute)

    def set_narrator_name(self, name: str) -> None:
        # SillyTavern's `chat_metadata.narrator_name`, which /sys reads.
        self._mark(self.chat.active_leaf_id)
        outcome = self.chats.update_metadata(
            self.chat.id, {"narrator_name": name}, revision=self.chat.revision
        )
        self.chat = outcome.chat

    def comment(self, text: str, *, at: int | None) -> str:
        # SillyTavern's comment: shown, `is_system` (never sent), `extra.type = comment`
        # (the export writes a node's extras as the message's own fields).
        return self._append(
            NodeRole.SYSTEM,
            text,
            at=at,
            speaker="Note",
            hidden=True,
            extras={"extra": {"type": "comment"}},
        )

    def hide(self, start: int, end: int, *, hidden: bool) -> str:
        outcome = self.chats.hide_range(
            self.chat.id, start, end, hidden=hidden, revision=self.chat.revision
        )
        self._mark(outcome.node.parent_id if outcome.node else None)
        self.chat = outcome.chat
        return ""

    def messages(self) -> Sequence[ChatLine]:
        nodes = self.chats.active_path(self.chat.id).nodes
        return [
            ChatLine(
                name=node.speaker,
                text=node.content,
                is_user=node.role is NodeRole.USER,
                hidden=node.hidden,
                narrator=node.role is NodeRole.NARRATOR,
            )
            for node in nodes
        ]

    def delete_messages(self, indices: Sequence[int]) -> None:
        nodes = self.chats.active_path(self.chat.id).nodes
        targets = [nodes[i] for i in sorted(set(indices)) if 0 <= i < len(nodes)]
        # The last first: the path then ends on a live message after each deletion.
        for node in reversed(targets):
            # SillyTavern deletes a message with its swipes: the other candidates at its
            # place go too (not those a branch goes on from).
            for other in self.chats.candidates(self.chat.id, node.id):
                if other.id == node.id or other.deleted:
                    continue
                if any(
                    not kid.deleted for kid in self.chats.store.children(self.chat.id, other.id)
                ):
                    continue
                self._mark(other.parent_id)
                self.chat = self.chats.delete(
                    self.chat.id, other.id, revision=self.chat.revision
                ).chat
            self._mark(node.parent_id)
            self.chat = self.chats.delete(self.chat.id, node.id, revision=self.chat.revision).chat

    def generate(self, request: Generation) -> str:
        if request.kind in FOLLOW_UPS:
            if self.follow_up is not None:
                raise ScriptError(
                    f"a script starts one reply at most (/{self.follow_up} came first)",
                    code="script_starts_one_reply_at",
                    params={"follow_up": str(self.follow_up)},
                )
            self.follow_up = request.kind
            return ""
        if self.ask is None:
            raise ScriptError(
                f"/{request.kind} needs a connection to a model, which this run has not",
                code="needs_connection_to_model_which",
                params={"kind": str(request.kind)},
            )
        try:
            return self.ask(request)
        except ScriptError:
            raise
        except QuotaExceeded as error:  # nothing was sent: the script stops here
            raise ScriptQuotaExceeded(str(error), code=error.code, params=error.params) from None
        except TavernaError as error:
            raise ScriptError(str(error), code=error.code, params=error.params) from None

    def _injects(self) -> dict[str, Any]:
        found = self.chat.metadata.get(SCRIPT_INJECTS)
        return dict(found) if isinstance(found, Mapping) else {}

    def _write_injects(self, injects: Mapping[str, Any]) -> None:
        outcome = self.chats.update_metadata(
            self.chat.id, {SCRIPT_INJECTS: dict(injects)}, revision=self.chat.revision
        )
        self.chat = outcome.chat

    def inject(self, injection: Injection) -> str:
        injects = self._injects()
        if not injection.text:
            injects.pop(injection.id, None)
        else:
            # SillyTavern's `chat_metadata.script_injects` shape (formats-extensions.md §3).
            injects[injection.id] = {
                "value": injection.text,
                "position": _INJECT_POSITIONS[injection.position],
                "depth": injection.depth,
                "scan": injection.scan,
                "role": _INJECT_ROLES[injection.role],
            }
        self._write_injects(injects)
        return ""

    def flush_injections(self, injection_id: str | None) -> str:
        injects = self._injects()
        if injection_id is None:
            injects = {}
        else:
            injects.pop(injection_id, None)
        self._write_injects(injects)
        return ""

    def list_injections(self) -> Mapping[str, Injection]:
        positions = {number: name for name, number in _INJECT_POSITIONS.items()}
        roles = {number: name for name, number in _INJECT_ROLES.items()}
        found: dict[str, Injection] = {}
        for key, item in self._injects().items():
            if not isinstance(item, Mapping):
                continue
            found[str(key)] = Injection(
                id=str(key),
                text=str(item.get("value", "")),
                position=positions.get(_int(item.get("position"), 0), "after"),
                depth=_int(item.get("depth"), 4),
                role=roles.get(_int(item.get("role"), 0), "system"),
                scan=item.get("scan") is True,
            )
        return found

    def _lorebook(self, book: str) -> Any:
        doc = self.library.find(LibraryKind.LOREBOOK, book)
        if doc is None:
            raise ScriptError(
                f'no lorebook named "{book}"', code="no_lorebook_named", params={"book": str(book)}
            )
        return self.library.lorebook(doc.id)

    def find_entry(self, book: str, field: str, text: str) -> str:
        if self.library.find(LibraryKind.LOREBOOK, book) is None:
            return ""  # SillyTavern 1.12.6: a book that does not exist has no entries
        wanted = text.strip().lower()
        for entry in self._lorebook(book).entries:
            value = _entry_value(entry, field)
            values = value if isinstance(value, tuple | list) else (value,)
            if any(wanted in str(item).lower() for item in values if item is not None):
                return str(entry.uid)
        return ""

    def entry_field(self, book: str, uid: str, field: str) -> str:
        if self.library.find(LibraryKind.LOREBOOK, book) is None:
            return ""  # SillyTavern 1.12.6: a book that does not exist has no entries
        for entry in self._lorebook(book).entries:
            if str(entry.uid) == uid.strip():
                value = _entry_value(entry, field)
                if isinstance(value, tuple | list):
                    return ",".join(str(item) for item in value)
                if isinstance(value, bool):
                    return "1" if value else "0"
                return "" if value is None else str(getattr(value, "value", value))
        return ""

    def quick_reply(self, name: str) -> str | None:
        return find_quick_reply(self.library, name)

    def group_member(self, action: str, member: str) -> str:
        """`/member-*`: change the members of this group chat's group."""
        from taverna.services.chats.groups import GroupService

        if not self.chat.group_id:
            # SillyTavern 1.12.6 warns and goes on.
            self.notify(f"/member-{action} needs a group chat", "warning")
            return ""
        groups = GroupService(self.chats, owner=self.library.owner)
        group_id = self.chat.group_id
        group = groups.get(group_id)
        files = list(group.members)
        if action == "add":
            doc = self.library.find(LibraryKind.CHARACTER, member)
            if doc is None:
                raise ScriptError(
                    f"no character named {member!r} in the library",
                    code="no_character_named_in_library",
                    params={"member": str(member)},
                )
            file = f"{doc.name}.png"
            if file in files:
                raise ScriptError(
                    f"{member} is already in the group",
                    code="is_already_in_group",
                    params={"member": str(member)},
                )
            groups.update(group_id, {"members": [*files, file]})
            return ""
        members = groups.members(group, self.chat)
        index = int(member) if member.isdigit() else None
        found = [
            m
            for i, m in enumerate(members)
            if i == index or member in (m.name, m.file, PurePath(m.file).stem)
        ]
        if not found:
            raise ScriptError(
                f"no member {member!r} in the group",
                code="no_member_in_group",
                params={"member": str(member)},
            )
        file = found[0].file
        at = files.index(file)
        if action in ("disable", "enable"):
            groups.set_muted(group_id, file, action == "disable")
        elif action == "remove":
            if len(files) == 1:
                raise ScriptError(
                    "a group keeps at least one member", code="group_keeps_at_least_one"
                )
            groups.update(group_id, {"members": [f for f in files if f != file]})
        elif action in ("up", "down"):
            to = at - 1 if action == "up" else at + 1
            if 0 <= to < len(files):
                files[at], files[to] = files[to], files[at]
                groups.update(group_id, {"members": files})
        else:
            raise ScriptError(
                f"unknown member action {action!r}",
                code="unknown_member_action",
                params={"action": str(action)},
            )
        return ""

    def notify(self, text: str, severity: str) -> None:
        self.notices.append((severity, text))

    def quick_reply_command(self, command: str, named: Mapping[str, str], text: str) -> str:
        def moved(chat: Chat) -> None:
            self.chat = chat

        service = QuickReplyService(self.chats, owner=self.library.owner)
        commands = QuickReplyCommands(service, self.chat, self.notify, moved)
        return commands.run(command, named, text)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _entry_value(entry: Any, field: str) -> Any:
    name = re.sub(r"(?<!^)([A-Z])", r"_\1", field).lower()
    if name.startswith("_") or not hasattr(entry, name):
        raise ScriptError(
            f"lorebook entries have no field {field!r}",
            code="lorebook_entries_have_no_field",
            params={"field_name": str(field)},
        )
    return getattr(entry, name)


def run_named_regex(
    library: LibraryService,
    character: str | None,
    name: str,
    text: str,
    substitute: Callable[[str], str],
) -> str | None:
    """`/regex name=`: the global regex script of that name, else the character's, run on
    `text` (unchanged when disabled); None when neither has one (SillyTavern 1.12.6)."""
    regexes = RegexLibrary(library.store, library.owner)
    scripts = list(regexes.layer(RegexLayer.GLOBAL).scripts)
    if character:
        with contextlib.suppress(TavernaError):  # a character gone takes its scripts along
            scripts += regexes.layer(RegexLayer.CHARACTER, character).scripts
    wanted = name.lower()
    for script in scripts:
        if script.script_name.lower() == wanted:
            return text if script.disabled else regex_scripts.run_script(script, text, substitute)
    return None


class _NoChatHost(NoChat):
    """Outside a chat: no chat effects, but the library's Quick Replies can run."""

    def __init__(self, library: LibraryService, chats: ChatService) -> None:
        super().__init__()
        self.library = library
        self.chats = chats

    def quick_reply(self, name: str) -> str | None:
        return find_quick_reply(self.library, name)

    def delay(self, seconds: float) -> None:
        time.sleep(seconds)

    def run_regex(self, name: str, text: str, substitute: Callable[[str], str]) -> str | None:
        return run_named_regex(self.library, None, name, text, substitute)

    def quick_reply_command(self, command: str, named: Mapping[str, str], text: str) -> str:
        service = QuickReplyService(self.chats, owner=self.library.owner)
        return QuickReplyCommands(service, None, self.notify).run(command, named, text)


class ScriptService:
    """Runs scripts for one account: in a chat (effects and variables saved) or without."""

    def __init__(
        self,
        chats: ChatService,
        *,
        owner: str = "",
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.chats = chats
        self.owner = owner
        self.library = LibraryService(chats.store, owner=owner)
        self.limits = limits or Limits()
        self.clock = clock

    # ------------------------------------------------------------ global variables

    def global_variables(self) -> dict[str, Any]:
        return global_variables(self.chats.store, self.owner)

    def write_global_variables(self, values: Mapping[str, Any]) -> None:
        """Store the global variables in the library (`extension_settings.variables.global`)."""
        write_global_variables(self.chats.store, values, self.owner)

    # -------------------------------------------------------------- chat variables

    def chat_variables(self, chat_id: str) -> dict[str, Any]:
        """The chat variables at the active leaf (those of the branch being read)."""
        return dict(self.chats.state_at(chat_id).variables)

    def set_chat_variables(self, chat_id: str, values: Mapping[str, Any], *, revision: int) -> Chat:
        """Replace the chat variables from the active leaf on (earlier messages and other
        branches keep theirs)."""
        for name in values:
            if not name.strip():
                raise TavernaError(
                    "a variable needs a name", field="local", code="variable_needs_name"
                )
        return self.chats.update_state(chat_id, revision=revision, variables=dict(values)).chat

    # ------------------------------------------------------------------- running

    def run(
        self,
        text: str,
        *,
        chat_id: str | None = None,
        revision: int | None = None,
        arguments: Mapping[str, str] | None = None,
        ask: Callable[[Generation], str] | None = None,
        typed: str = "",
        variables: dict[str, Any] | None = None,
    ) -> ScriptRun:
        """Run `text`; in a chat its effects and chat variables are saved on its path.

        `revision`: the chat's revision as the caller read it (a stale one is a conflict).
        A script that fails keeps the chat changes and the variables made before the
        failing command, as SillyTavern does. `ask` answers `/gen` and `/genraw`
        (see `quiet_generation.quiet_text`); it blocks until the model has answered.
        `typed`: what the chat input holds, for `{{input}}` (a Quick Reply reads it).
        `variables`: the chat variables to run with, changed in place instead of on the
        chat's path (a tool's script: what it sets belongs to the reply being written).
        """
        global_before = self.global_variables()
        if chat_id is None:
            host: ChatHost = _NoChatHost(self.library, self.chats)
            context = ScriptContext(
                variables=Variables(global_=global_before),
                host=host,
                limits=self.limits,
                clock=self.clock,
                seed=int(self.clock() * 1000),
                arguments=dict(arguments or {}),
            )
            try:
                result = run_script(text, context)
            except ScriptError as error:
                if error.variables is not None:
                    self._keep_globals(global_before, error.variables)
                raise
            self._keep_globals(global_before, result.variables)
            return ScriptRun(result, None, result.notices)
        chat = self.chats.get_chat(chat_id)
        if revision is not None and revision != chat.revision:
            raise StaleRevision(
                "the chat changed since it was read", current_revision=chat.revision
            )
        local = self.chats.state_at(chat_id).variables if variables is None else variables
        # The time limit counts the script's own work, not the wait for a model's answer.
        waited = [0.0]

        def script_clock() -> float:
            return self.clock() - waited[0]

        def timed_ask(request: Generation) -> str:
            assert ask is not None
            began = self.clock()
            try:
                return ask(request)
            finally:
                waited[0] += self.clock() - began

        chat_host = ChatScriptHost(
            self.chats, self.library, chat, timed_ask if ask is not None else None
        )
        # The macros see what the chat's next turn would: card, persona, chat state.
        names = script_macros(self.chats.store, chat, typed=typed)
        context = ScriptContext(
            variables=Variables(local=dict(local), global_=global_before),
            macros=names,
            host=chat_host,
            limits=self.limits,
            clock=script_clock,
            seed=int(self.clock() * 1000),
            arguments=dict(arguments or {}),
        )
        try:
            result = run_script(text, context)
        except ScriptError as error:
            # The variables set before the failing command stay set, as in SillyTavern.
            if error.variables is not None:
                self._keep_variables(chat_host, local, variables, error.variables)
                self._keep_globals(global_before, error.variables)
            raise
        chat = self._keep_variables(chat_host, local, variables, result.variables)
        self._keep_globals(global_before, result.variables)
        return ScriptRun(
            result,
            chat,
            tuple(chat_host.notices),
            chat_host.follow_up,
            chat_host.changed,
            chat_host.first_changed,
        )

    def _keep_variables(
        self,
        host: ChatScriptHost,
        before: Mapping[str, Any],
        into: dict[str, Any] | None,
        after: Variables,
    ) -> Chat:
        """Store the chat variables a script left (in `into` when the caller holds them)."""
        chat = host.chat
        if into is not None:
            into.clear()
            into.update(after.local)
        elif dict(after.local) != dict(before):
            # The variables go on the active leaf: a branch before it keeps its own.
            chat = self.chats.update_state(
                chat.id, revision=chat.revision, variables=dict(after.local)
            ).chat
            host.chat = chat
            if not host.changed:
                host.first_changed = chat.active_leaf_id
        return chat

    def _keep_globals(self, before: Mapping[str, Any], after: Variables) -> None:
        values = dict(after.global_)
        if values != dict(before):
            self.write_global_variables(values)
