"""What a script does to its chat: the host of STscript's chat and message commands.

`ChatScriptHost` writes each effect through the chat's service as it happens (a message
sent, a swipe added, messages hidden or deleted, an injection kept in the chat's
metadata), and notes where the chat first changed so a caller redraws from there. A
reply the script asks for (`/trigger`, `/continue`, ...) is only noted as the follow-up;
`/gen` and `/genraw` are answered by the caller's `ask`. `NoChatHost` serves a script
run outside any chat.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from taverna.engine.assembly import regex_scripts
from taverna.engine.assembly.injections import SCRIPT_INJECTS
from taverna.engine.macros import MacroContext
from taverna.engine.script import ChatLine, Generation, Injection, NoChat, ScriptError
from taverna.engine.script.host import NO_CHAT_TOKENIZER
from taverna.errors import QuotaExceeded, TavernaError
from taverna.model.chat import Chat, NodeRole
from taverna.services.chats.looks import ChatLooks
from taverna.services.chats.service import ChatService
from taverna.services.library.regex_library import RegexLayer, RegexLibrary
from taverna.services.library.service import LibraryService
from taverna.services.scripts.group_members import change_member
from taverna.services.scripts.lorebook_lookup import entry_field, find_entry
from taverna.services.scripts.macros import script_macros
from taverna.services.scripts.page_state import PageCommands
from taverna.services.scripts.quick_replies import QuickReplyService, find_quick_reply
from taverna.services.scripts.quick_reply_commands import QuickReplyCommands
from taverna.services.scripts.script_injections import (
    read_injections,
    stored_injections,
    with_injection,
    without_injection,
)

# Generations a script may ask for that the chat's own generation endpoints carry out.
FOLLOW_UPS = ("trigger", "continue", "impersonate", "swipe")


class ScriptQuotaExceeded(ScriptError, QuotaExceeded):
    """A script's `/gen` or `/genraw` past the account's hourly quota: a script error
    (naming the command and where it stands) that a server answers as a used-up quota."""


@dataclass
class ChatScriptHost(PageCommands):
    """The chat effects of a script, written through the chat's service as they happen.

    `tokenizer` counts `/tokens` as the chat's prompt is counted; `stopper` stops the
    chat's running generation (`/stop`), when the caller can; `input` is what `/setinput`
    put in the chat input box."""

    chats: ChatService
    library: LibraryService
    chat: Chat
    # How a `/gen` or `/genraw` is answered (None: they are refused here).
    ask: Callable[[Generation], str] | None = None
    notices: list[tuple[str, str]] = field(default_factory=list)
    follow_up: str | None = None
    changed: bool = False
    first_changed: str | None = None
    tokenizer: str = NO_CHAT_TOKENIZER
    stopper: Callable[[str], bool] | None = None
    input: str | None = None
    _touched: bool = False
    _writes: int = 0

    def _mark(self, parent: str | None) -> None:
        if not self._touched:
            self._touched = True
            self.first_changed = parent
        self.changed = True
        self._writes += 1

    def writes(self) -> int:
        return self._writes

    def chat_macros(self, macros: MacroContext) -> MacroContext:
        return script_macros(self.chats.store, self.chat, typed=macros.input)[0]

    def set_input(self, text: str) -> None:
        self.input = text

    def stop_generation(self) -> bool:
        return self.stopper(self.chat.id) if self.stopper is not None else False

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
        if at is None:
            self._mark(self.chat.active_leaf_id)
            write = partial(self.chats.append, self.chat.id)
        else:
            nodes = self.chats.active_path(self.chat.id).nodes
            self._mark(nodes[at - 1].id if 0 < at <= len(nodes) else None)
            write = partial(self.chats.insert_at, self.chat.id, at)
        outcome = write(
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

    def set_expression(self, label: str, name: str | None) -> str:
        # kept in the chat's metadata with the reply it follows (chats/looks.py)
        looks = ChatLooks(self.chats, self.library)
        try:
            chat = looks.set_expression(self.chat.id, label, character=name)
        except TavernaError as error:  # said as the command's failure, where it stands
            raise ScriptError(
                str(error), command="expression", code=error.code, params=error.params
            ) from None
        self._mark(self.chat.active_leaf_id)
        self.chat = chat
        found = self.chat.metadata.get("expression")
        return str(found.get("label")) if isinstance(found, Mapping) else label

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

    def inject(self, injection: Injection) -> str:
        self._write_injections(with_injection(stored_injections(self.chat.metadata), injection))
        return ""

    def flush_injections(self, injection_id: str | None) -> str:
        stored = stored_injections(self.chat.metadata)
        self._write_injections(without_injection(stored, injection_id))
        return ""

    def list_injections(self) -> Mapping[str, Injection]:
        return read_injections(stored_injections(self.chat.metadata))

    def _write_injections(self, stored: Mapping[str, Any]) -> None:
        outcome = self.chats.update_metadata(
            self.chat.id, {SCRIPT_INJECTS: dict(stored)}, revision=self.chat.revision
        )
        self.chat = outcome.chat

    def find_entry(self, book: str, field: str, text: str) -> str:
        return find_entry(self.library, book, field, text)

    def entry_field(self, book: str, uid: str, field: str) -> str:
        return entry_field(self.library, book, uid, field)

    def quick_reply(self, name: str) -> str | None:
        return find_quick_reply(self.library, name)

    def group_member(self, action: str, member: str) -> str:
        """`/member-*`: change the members of this group chat's group."""
        if not self.chat.group_id:
            # SillyTavern 1.12.6 warns and goes on.
            self.notify(f"/member-{action} needs a group chat", "warning")
            return ""
        change_member(self.chats, self.library, self.chat, action, member)
        return ""

    def notify(self, text: str, severity: str) -> None:
        self.notices.append((severity, text))

    def quick_reply_command(self, command: str, named: Mapping[str, str], text: str) -> str:
        def moved(chat: Chat) -> None:
            self.chat = chat

        service = QuickReplyService(self.chats, owner=self.library.owner)
        commands = QuickReplyCommands(service, self.chat, self.notify, moved)
        return commands.run(command, named, text)


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


class NoChatHost(PageCommands, NoChat):
    """Outside a chat: no chat effects, but the library's Quick Replies and the page
    commands (instruct mode, the lorebooks every chat uses, tags by name) can run."""

    def __init__(self, library: LibraryService, chats: ChatService) -> None:
        super().__init__()
        self.library = library
        self.chats = chats
        self.tokenizer = NO_CHAT_TOKENIZER

    def quick_reply(self, name: str) -> str | None:
        return find_quick_reply(self.library, name)

    def delay(self, seconds: float) -> None:
        time.sleep(seconds)

    def run_regex(self, name: str, text: str, substitute: Callable[[str], str]) -> str | None:
        return run_named_regex(self.library, None, name, text, substitute)

    def quick_reply_command(self, command: str, named: Mapping[str, str], text: str) -> str:
        service = QuickReplyService(self.chats, owner=self.library.owner)
        return QuickReplyCommands(service, None, self.notify).run(command, named, text)
