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

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from taverna.engine.macros import MacroContext, Variables
from taverna.engine.script import (
    ChatHost,
    Generation,
    Limits,
    ScriptContext,
    ScriptError,
    ScriptResult,
    run_script,
)
from taverna.errors import StaleRevision, TavernaError
from taverna.model.chat import Chat
from taverna.services.chats.service import ChatService
from taverna.services.library.active_settings import global_variables, write_global_variables
from taverna.services.library.service import LibraryService
from taverna.services.scripts.chat_host import ChatScriptHost, NoChatHost
from taverna.services.scripts.macros import script_macros

__all__ = ["ScriptRun", "ScriptService"]


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
    input: str | None = None  # what `/setinput` put in the chat input box, if it ran


class ScriptService:
    """Runs scripts for one account: in a chat (effects and variables saved) or without."""

    def __init__(
        self,
        chats: ChatService,
        *,
        owner: str = "",
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
        stopper: Callable[[str], bool] | None = None,
    ) -> None:
        """`stopper(chat_id)` stops a chat's running generation for `/stop` (whether one
        ran); without it `/stop` finds none."""
        self.stopper = stopper
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
            return self._run_outside_chat(text, global_before, arguments)
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

        # The macros see what the chat's next turn would: card, persona, chat state.
        names, tokenizer = script_macros(self.chats.store, chat, typed=typed)
        chat_host = ChatScriptHost(
            self.chats,
            self.library,
            chat,
            timed_ask if ask is not None else None,
            tokenizer=tokenizer,
            stopper=self.stopper,
        )
        variables_before = Variables(local=dict(local), global_=global_before)
        context = self._context(variables_before, chat_host, arguments, script_clock, names)
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
            chat_host.input,
        )

    def _run_outside_chat(
        self, text: str, global_before: dict[str, Any], arguments: Mapping[str, str] | None
    ) -> ScriptRun:
        """A run with no chat: only the global variables are kept."""
        host = NoChatHost(self.library, self.chats)
        context = self._context(Variables(global_=global_before), host, arguments, self.clock)
        try:
            result = run_script(text, context)
        except ScriptError as error:
            if error.variables is not None:
                self._keep_globals(global_before, error.variables)
            raise
        self._keep_globals(global_before, result.variables)
        return ScriptRun(result, None, result.notices, input=host.input)

    def _context(
        self,
        variables: Variables,
        host: ChatHost,
        arguments: Mapping[str, str] | None,
        clock: Callable[[], float],
        macros: MacroContext | None = None,
    ) -> ScriptContext:
        """The interpreter's context of one run: this account's limits, a seed from the clock."""
        return ScriptContext(
            variables=variables,
            macros=macros if macros is not None else MacroContext(),
            host=host,
            limits=self.limits,
            clock=clock,
            seed=int(self.clock() * 1000),
            arguments=dict(arguments or {}),
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
