"""Turns' prompts: a turn over a chat's path (read through the kept path ends), built one
at a time, and the prompt a dry-run turn would send after the interceptors and the
prompt handlers."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.engine.tokens.cache import CountCache
from taverna.model.chat import Chat, Node, PathTail
from taverna.model.prompt import Prompt
from taverna.providers.request import Api
from taverna.services.plugins import EventBus, GenerationAborted
from taverna.services.turns.kinds import REPLACING
from taverna.services.turns.paths import PathEnds
from taverna.services.turns.turn import WHOLE_PATH, PreparedTurn, PromptBuilder, TurnRequest
from taverna.store.repository import Store


class TurnPrompts:
    """Builds the prompts of a process's turns over one token-count cache."""

    def __init__(
        self,
        store: Store,
        paths: PathEnds,
        build_prompt: PromptBuilder,
        events: EventBus,
        counts: CountCache,
    ) -> None:
        self.store = store
        self.paths = paths
        self.build_prompt = build_prompt
        self.events = events
        self.counts = counts
        # the builds share the token-count cache, which is not safe to use from two
        # threads at once
        self._build_lock = threading.Lock()

    def turn(
        self,
        chat: Chat,
        end: str | None,
        kind: GenerationType,
        api: Api,
        *,
        prefill: bool = False,
        dry_run: bool = False,
        pending: Node | None = None,
        model: str = "",
        options: Mapping[str, Any] | None = None,
    ) -> TurnRequest:
        """A turn over the path ending at `end`, read through the kept path ends.

        `pending`: the message `end` names, not yet stored; the path is read to its parent.
        """
        above = pending.parent_id if pending is not None else end

        def read(want: int) -> PathTail:
            if above is None:
                tail = PathTail((), 0, 0, chat.base_state)
            else:
                tail = self.paths.tail(chat, above, want)
            if pending is None:
                return tail
            return PathTail((*tail.nodes, pending), tail.before, tail.visible_before, tail.state)

        return TurnRequest(
            chat,
            end,
            kind,
            api,
            prefill,
            read,
            dry_run=dry_run,
            counts=self.counts,
            model=model,
            options=dict(options or {}),
        )

    def path_end(self, chat_id: str) -> tuple[Chat, PathTail]:
        """The chat and the last two messages of its path."""
        chat = self.store.get_chat(chat_id)
        if chat.active_leaf_id is None:
            return chat, PathTail((), 0, 0, chat.base_state)
        return chat, self.paths.tail(chat, chat.active_leaf_id, 2)

    def build_serialized(self, turn: TurnRequest) -> Prompt | PreparedTurn:
        """Build a turn's prompt, one build at a time: builds share the token-count cache."""
        with self._build_lock:
            return self.build_prompt(turn)

    def prompt_to_send(self, turn: TurnRequest) -> Prompt:
        """The prompt a dry-run turn would send, as a generation builds it: over the chat
        copy the interceptors leave and after the prompt handlers (they are told it is a
        dry run). A copy an interceptor would abort is shown as it is, its ledger naming
        who would stop the turn and why: nothing would be sent."""
        aborted: tuple[str, str] | None = None
        try:
            turn = self.intercepted(turn)
        except GenerationAborted as stop:
            aborted = (stop.by, stop.reason)
        built = self.build_serialized(turn)
        prompt = built.prompt if isinstance(built, PreparedTurn) else built
        ready = self.events.prompt_ready(
            prompt, chat_id=turn.chat.id, kind=turn.kind.value, dry_run=True
        )
        if aborted is None:
            return ready
        return replace(ready, ledger=replace(ready.ledger, aborted=aborted))

    def dry_run_prompt(self, chat_id: str, api: Api) -> Prompt:
        """The prompt the chat's next reply would be sent (a dry run)."""
        chat = self.store.get_chat(chat_id)
        return self.prompt_to_send(
            self.turn(chat, chat.active_leaf_id, GenerationType.NORMAL, api, dry_run=True)
        )

    def intercepted(self, turn: TurnRequest) -> TurnRequest:
        """The turn over the chat copy the interceptors changed (the same turn when none
        did). A swipe's or a regenerate's replaced reply is not theirs to see."""
        if not self.events.intercepts:
            return turn
        whole = turn.read(WHOLE_PATH)
        nodes = list(whole.nodes)
        replaced = nodes.pop() if turn.kind in REPLACING and nodes else None
        changed = self.events.intercept(turn.chat.id, turn.kind.value, nodes)
        if changed is None:
            return turn
        path = (*changed, replaced) if replaced is not None else tuple(changed)
        tail = PathTail(path, 0, 0, whole.state)
        return replace(turn, read=lambda want: tail)

    def foresee(self, chat_id: str, speaker: str, text: str) -> None:
        """Tell the prompt builder, if it cares, of a message about to be sent (recall
        embeds it at once, beside the build, instead of when the build asks)."""
        foresee = getattr(self.build_prompt, "foresee", None)
        if foresee is not None:
            foresee(chat_id, speaker, text)
