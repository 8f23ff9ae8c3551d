"""One turn's assembly context, built from the library and the end of the chat's path.

This is the prompt builder the server, `taverna chat` and the inspector run. Per turn
it asks the store only what it must: the versions (not the data) of the documents the
turn uses (`choices`: which apply, as SillyTavern picks them; `documents`: each parsed
once per stored version), and the end of the path (kept between turns by `PathEnds`),
read newest first only as far as the prompt reaches (`window`).

The chat's token costs, the messages as the engine reads them and the window each chat
needed stay between turns, so a turn's cost follows its context, not the chat's length.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from taverna.engine.assemble import assemble, message_cost, tokenizer_name
from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.context import (
    AssemblyContext,
    CharacterInfo,
    ChatMessage,
    EarlierMessages,
    GenerationType,
)
from taverna.engine.lorebook.regex_budget import TURN_REGEX_BUDGET as TURN_REGEX_BUDGET
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.engine.tokens.cache import CountCache
from taverna.errors import NotFound
from taverna.model.chat import Chat, ChatState, Node, PathTail
from taverna.model.persona import Persona
from taverna.model.prompt import Prompt
from taverna.providers.registry import provider
from taverna.providers.request import Api
from taverna.services.chats.images import ImageLibrary, message_image, with_pictures
from taverna.services.connections.backend_tokens import API_TOKENIZERS, BackendTokenizer
from taverna.services.connections.local_models import for_local_model
from taverna.services.connections.prompt_layouts import layout_for
from taverna.services.kept_bytes import KeptBytes, approx_bytes, text_bytes
from taverna.services.memory.recall import RecallService, TurnRecall, recall_config
from taverna.services.memory.summaries import covered_ids, in_force
from taverna.services.plugins.tools import declared_tools
from taverna.services.turns import PreparedTurn, TurnRequest
from taverna.services.turns.choices import LibraryChoices, TurnLibrary, muted_names
from taverna.services.turns.documents import ParsedDocuments
from taverna.services.turns.inputs import assembly_context, for_api
from taverna.services.turns.messages import engine_message, made_from
from taverna.services.turns.paths import PathEnds
from taverna.services.turns.window import (
    covered_above,
    has_both_speakers,
    oldest_included,
    scan_floor,
    widened,
)
from taverna.store.repository import Store

__all__ = ["TurnContexts"]

# The first window of a chat not seen before; later turns start from what it needed.
FIRST_WINDOW = 96
# What each chat's next turn starts from (its window, where recall's history began, its
# books), for the chats built most recently, in this many bytes.
WINDOWS_BYTES = 1 << 20
# Chats whose token costs (and the prompt parts they keep) stay between turns: the most
# recently used, up to COSTS_BYTES in all. A chat's kept work starts afresh once it holds
# several times what its window needs: its entries are keyed by message object, so
# edits, swipes and messages gone past the window leave old ones behind.
COSTS_BYTES = 32 << 20
COST_MEMO_FLOOR = 2_000
COST_MEMO_PER_MESSAGE = 8
# A chat's kept costs are measured on this many entries and counted as that many times
# their mean (measuring every entry each turn would cost more than the turn).
COST_SAMPLE = 16
# Messages kept as the engine reads them, across chats (a few windows' worth).
MESSAGES_BYTES = 24 << 20
# What a message kept as the engine reads it holds besides its texts.
MESSAGE_OVERHEAD = 160
# Newly counted message texts are stored from this many on (one write per cold build).
STORE_COUNTS_FROM = 16


class TurnContexts:
    """Builds each turn's prompt from the library and the path end (see module doc)."""

    def __init__(
        self,
        store: Store,
        *,
        owner: str = "",
        clock: Callable[[], datetime] | None = None,
        paths: PathEnds | None = None,
        documents: ParsedDocuments | None = None,
        regex_budget: float = TURN_REGEX_BUDGET,
        recall: RecallService | None = None,
    ) -> None:
        """`regex_budget`: the seconds all user regexes of one turn (lorebook regex keys,
        regex scripts) may spend together; what is left over is skipped and listed in the
        prompt's ledger."""
        self.store = store
        self.regex_budget = regex_budget
        self.owner = owner
        self.clock = clock
        self.paths = paths or PathEnds(store)
        self.documents = documents or ParsedDocuments(store)
        self.choices = LibraryChoices(store, self.documents)
        self.recall = recall or RecallService(store)
        # What each recently built chat's next turn starts from, for the chats built most
        # recently (WINDOWS_BYTES): the messages its last prompt needed and per API the
        # depth its last history began at (each API fits its own context).
        self._windows: KeptBytes[str, int] = KeptBytes(
            WINDOWS_BYTES, self._window_bytes, gone=self._forget_chat
        )
        self._recall_starts: dict[str, dict[str, int]] = {}
        self._costs: KeptBytes[str, tuple[tuple[str, str, int], MessageCost]] = KeptBytes(
            COSTS_BYTES, _cost_bytes
        )
        # Each node's message as the engine reads it, made again only when the node's
        # message changed (the message object lasts, so the engine's memo finds it).
        self._messages: KeptBytes[str, ChatMessage] = KeptBytes(MESSAGES_BYTES, _message_bytes)
        self.assemblies = 0  # assemblies run, widening included (for tests and benchmarks)
        # Each account's pictures, read as its chats' prompts need them.
        self._images: dict[str, ImageLibrary] = {owner: ImageLibrary(store, owner=owner)}

    def _window_bytes(self, chat_id: str, _window: int) -> int:
        """A chat's window and its recall starts, as kept."""
        starts = self._recall_starts.get(chat_id, {})
        return text_bytes([chat_id, *starts]) + 64 * (2 + len(starts))

    def _forget_chat(self, chat_id: str, _window: int) -> None:
        self.choices.forget(chat_id)
        self._recall_starts.pop(chat_id, None)

    def images_of(self, owner: str) -> ImageLibrary:
        """The pictures of account `owner` (a chat's are its owner's)."""
        found = self._images.get(owner)
        if found is None:
            found = self._images[owner] = ImageLibrary(self.store, owner=owner)
        return found

    def __call__(self, turn: TurnRequest) -> PreparedTurn:
        return self.build(turn)

    def foresee(self, chat_id: str, speaker: str, text: str) -> None:
        """A message is being sent or typed: recall's question will hold it, so its vector
        is made now, beside the prompt's build (see `RecallService.foresee`)."""
        self.recall.foresee(chat_id, speaker, text)

    def build(self, turn: TurnRequest) -> PreparedTurn:
        chat = turn.chat
        library = self.library(chat, turn.speaker)
        now = self.clock() if self.clock else datetime.now(UTC)
        want = self._windows.get(chat.id) or FIRST_WINDOW
        kept = self._costs.get(chat.id)
        if kept is not None:
            kept[1].next_turn()  # what the last turn did not use of the chat's kept work goes
        starts = self._recall_starts.get(chat.id, {})
        floor = scan_floor(library)
        # One turn's time for user regexes, however many assemblies widening takes.
        regexes = RegexBudget(self.regex_budget)
        recall: TurnRecall | bool | None = False  # found once, on the first window read
        while True:
            tail = turn.tail(want)
            visible = sum(1 for node in tail.nodes if not node.hidden)
            if tail.before and (visible < floor or not has_both_speakers(tail.nodes)):
                want = widened(want, tail)
                continue
            context = self.context(turn, library, tail, now)
            if recall is False:
                recall = self._recall(turn, library, tail)
            if isinstance(recall, TurnRecall):
                # Where the last turn's history began: what is above it fell outside the
                # context (checked after; a first turn assembles again once it knows).
                start = starts.get(turn.api.value)
                found = recall.entries_only() if start is None else recall.for_window(start)
                context = replace(context, recall=found)
            backend = asks_backend(turn, context)
            if backend is not None:
                # the server counts: the messages' texts asked for at once
                backend.prime(node.content for node in tail.nodes)
            # A chat new to this process: its messages' counts come from the store.
            cold = chat.id not in self._windows and backend is None
            fresh = self._stored_counts(context, tail, turn.counts) if cold else []
            cost = self._cost(chat.id, context, turn.counts, backend)
            prompt = assemble(context, cost=cost, regexes=regexes)
            self.assemblies += 1
            if backend is not None:
                prompt = self._counted_by(chat.id, prompt, backend, turn.counts)
            self._keep_counts(context, fresh, turn.counts)
            if not tail.before or prompt.ledger.history_stopped or covered_above(context, tail):
                break
            want = widened(want, tail, prompt)
        if isinstance(recall, TurnRecall):
            oldest = oldest_included(prompt, tail) if prompt.ledger.history_stopped else 0
            start = starts.get(turn.api.value)
            if start is None or oldest < start:
                # Messages fell outside the context (or the history now reaches above the
                # start used): those nearest in meaning come back, from above its start.
                found = recall.for_window(oldest)
                if found.messages or start is not None:
                    context = replace(context, recall=found)
                    prompt = assemble(context, cost=cost, regexes=regexes)
                    self.assemblies += 1
                    if backend is not None:
                        prompt = self._counted_by(chat.id, prompt, backend, turn.counts)
            starts[turn.api.value] = oldest
        # The next turn starts where this one ended, with room for the new messages.
        self._recall_starts[chat.id] = starts
        self._windows.put(chat.id, max(FIRST_WINDOW, len(tail.nodes) + 8))
        self._costs.touch(chat.id)  # measured again now that the turn has filled it
        request = provider(turn.api).preset_options(library.preset)
        return PreparedTurn(
            prompt,
            declared_tools(library.preset),
            request,
            function_calling=bool(library.preset.get("function_calling")),
        )

    def _recall(self, turn: TurnRequest, library: TurnLibrary, tail: PathTail) -> TurnRecall | None:
        """What this turn may recall by meaning, if the settings turn recall on."""
        config = recall_config(library.settings.raw)
        if not config.enabled:
            return None
        recent = list(tail.nodes)
        if turn.kind in (GenerationType.SWIPE, GenerationType.REGENERATE) and recent:
            recent = recent[:-1]  # the reply being replaced is not part of the question
        return self.recall.for_turn(config, turn.chat.id, turn.end, recent, library.lorebooks)

    def _cost(
        self,
        chat_id: str,
        context: AssemblyContext,
        counts: CountCache | None,
        backend: BackendTokenizer | None = None,
    ) -> MessageCost:
        """The chat's token costs, kept from turn to turn: unchanged messages' prompt parts
        and name-only macro texts are reused (the engine keys them by what they depend on).
        `backend`: the server's own tokenizer, counting instead of the chat's."""
        name = backend.name if backend is not None else tokenizer_name(context)
        key = (name, context.chat_completion.model, id(counts))
        window = self._windows.get(chat_id) or FIRST_WINDOW
        limit = max(COST_MEMO_FLOOR, COST_MEMO_PER_MESSAGE * window)
        kept = self._costs.get(chat_id)
        if kept is None or kept[0] != key or len(kept[1].memo) > limit:
            kept = (key, message_cost(context, counts, backend))
        self._costs.put(chat_id, kept)
        return kept[1]

    def _counted_by(
        self, chat_id: str, prompt: Prompt, backend: BackendTokenizer, counts: CountCache | None
    ) -> Prompt:
        """The prompt's ledger naming the server's tokenizer; where the server did not
        answer, the estimate that stood in, and why (its counts are not kept)."""
        note = ""
        if backend.failed:
            note = f"the backend's tokenizer did not answer ({backend.failed}); estimated"
            self._costs.pop(chat_id)
            if counts is not None:
                counts.forget(backend.name)
        ledger = replace(prompt.ledger, tokenizer=backend.label, tokenizer_note=note)
        return replace(prompt, ledger=ledger)

    def _message(self, node: Node) -> ChatMessage:
        kept = self._messages.get(node.id)
        if kept is not None and made_from(kept, node):
            return kept
        return self._messages.put(node.id, engine_message(node))

    # ------------------------------------------------------------------ token counts

    def _stored_counts(
        self, context: AssemblyContext, tail: PathTail, counts: CountCache | None
    ) -> list[str]:
        """Take the stored counts of the messages this process has not counted; returns
        the texts neither knew (their counts are stored once the assembly made them)."""
        if counts is None:
            return []
        name = tokenizer_name(context)
        unknown = [n.content for n in tail.nodes if counts.known(name, n.content) is None]
        if not unknown:
            return []
        found = self.store.token_counts(name, unknown)
        for text, count in found.items():
            counts.remember(name, text, count)
        return [text for text in unknown if text not in found]

    def _keep_counts(
        self, context: AssemblyContext, texts: Sequence[str], counts: CountCache | None
    ) -> None:
        """Store the counts this assembly made of message texts the store did not have
        (on a chat's first turn in this process: one write, then none)."""
        if counts is None or len(texts) < STORE_COUNTS_FROM:
            return
        name = tokenizer_name(context)
        made = {t: c for t in texts if (c := counts.known(name, t)) is not None}
        if made:
            self.store.save_token_counts(name, made)

    # ------------------------------------------------------------------ the library

    def library(self, chat: Chat, speaker: str | None = None) -> TurnLibrary:
        """The settings, cards, persona and applying lorebooks of a chat, as parsed (in a
        group chat, with the preset of the member `speaker` when it has one of its own)."""
        return self.choices.for_chat(chat, speaker)

    def personas(self, owner: str) -> list[tuple[str, Persona]]:
        """An account's personas with their ids, oldest first, as parsed and kept for turns."""
        return self.choices.personas(owner)

    # ------------------------------------------------------------------ the context

    def context(
        self, turn: TurnRequest, library: TurnLibrary, tail: PathTail, now: datetime
    ) -> AssemblyContext:
        """The engine's context for `turn` over the path end `tail`."""
        chat = turn.chat
        history = tail.nodes
        state, before_last = self._states(turn, tail)
        characters, members = _cast(turn, library)
        summary = self._summary(chat, before_last, history)
        messages = [self._message(node) for node in history]
        placement = library.settings.summary
        if placement.hide_covered and placement.places_summary and summary[1]:
            hidden = covered_ids(history, summary[1], placement.hide_keep)
            messages = [replace(m, hidden=True) if m.id in hidden else m for m in messages]
        context = assembly_context(
            for_api(library.settings, turn.api),
            characters,
            _chat_metadata(chat, state),
            messages,
            library.lorebooks,
            api="textgen" if turn.api.is_text_completion else "openai",
            generation_type=turn.kind,
            group_members=members,
            # algo-chat-ops.md §3.1: the summary in force before the path's last message.
            summary=summary,
        )
        group = library.group
        if group is not None:
            context = replace(
                context,
                group_name=group.name,
                group_generation_mode=int(group.mode),
                group_join_prefix=group.generation_mode_join_prefix,
                group_join_suffix=group.generation_mode_join_suffix,
                group_muted=muted_names(group, library.characters),
            )
        earlier = EarlierMessages(count=tail.before, visible=tail.visible_before)
        interval = context.metadata.authors_note
        if tail.before and interval.interval > 1 and interval.prompt:
            earlier = replace(earlier, user=self.paths.user_messages_before(chat, tail))
        context = replace(
            context,
            earlier=earlier,
            persona=library.persona,
            now=now,
            seed=zlib.crc32(chat.id.encode()),
            chat_id=chat.id,
            dry_run=turn.dry_run,
        )
        context = with_pictures(
            context,
            turn.api,
            turn.model,
            [message_image(node.extras) for node in history],
            self.images_of(chat.owner).prompt_image,
        )
        return _for_turn(context, turn)

    def _states(self, turn: TurnRequest, tail: PathTail) -> tuple[ChatState, ChatState]:
        """The state the turn assembles with, and the state before the path's last message."""
        history = tail.nodes
        if turn.kind in (GenerationType.SWIPE, GenerationType.REGENERATE) and history:
            # The state before the reply being replaced: at the end of the path it answers.
            state = _state_before_last(self.store, turn.chat, tail)
            return state, state
        if history and history[-1].state is not None:
            return tail.state, _state_before_last(self.store, turn.chat, tail)
        return tail.state, tail.state

    def _summary(self, chat: Chat, state: ChatState, history: Sequence[Node]) -> tuple[str, str]:
        """The summary `state` puts in force and its message (a deleted one's yields)."""
        if not state.summary:
            return "", ""
        known = {n.id: n for n in history} if state.summary_at else {}
        return in_force(self.store, chat.id, state, chat.base_state, known)


def _state_before_last(store: Store, chat: Chat, tail: PathTail) -> ChatState:
    """The state in force at the parent of the path's last message."""
    for node in reversed(tail.nodes[:-1]):
        if node.state is not None:
            return node.state
    last = tail.nodes[-1]
    if last.parent_id is None:
        return chat.base_state
    try:
        return store.state_at(chat.id, last.parent_id)
    except NotFound:
        return chat.base_state


def _chat_metadata(chat: Chat, state: ChatState) -> dict[str, Any]:
    """The chat's metadata as SillyTavern keeps it, with what `state` holds: the chat
    variables, the lorebook timers and the author's note settings."""
    metadata: dict[str, Any] = dict(chat.metadata)
    metadata["variables"] = dict(state.variables)
    if state.timers:
        metadata["timedWorldInfo"] = dict(state.timers)
    if state.authors_note is not None:
        note = state.authors_note
        metadata.update(
            note_prompt=note.prompt,
            note_interval=note.interval,
            note_position=note.position,
            note_depth=note.depth,
            note_role=note.role,
        )
    return metadata


def _cast(turn: TurnRequest, library: TurnLibrary) -> tuple[tuple[CharacterInfo, ...], list[str]]:
    """The turn's characters in the order the prompt takes them, and the group's members
    by name (none in a chat with one character)."""
    characters = library.characters
    members = [c.name for c in characters] if len(characters) > 1 else []
    if library.group is not None or turn.chat.group_id:
        members = [c.name for c in characters]
        speaker = next((c for c in characters if c.name == turn.speaker), None)
        if speaker is not None:
            # the speaker's card first, the other members after (Swap takes the first)
            characters = (speaker, *(c for c in characters if c is not speaker))
    return characters, members


def _for_turn(context: AssemblyContext, turn: TurnRequest) -> AssemblyContext:
    """`context` as the kind of turn asks: a quiet prompt, the connection's prompt layout, a
    local model, a prefill."""
    if turn.quiet_prompt:
        context = replace(context, quiet_prompt=turn.quiet_prompt)
        if turn.skip_wi_an:
            # memory/index.js "skip WI/AN": no lorebooks, no author's note.
            note = replace(context.metadata.authors_note, prompt="")
            metadata = replace(context.metadata, authors_note=note, lorebook="")
            context = replace(context, lorebooks={}, metadata=metadata)
    layout = layout_for(turn.api, turn.options)
    if layout is not context.layout:
        context = replace(context, layout=layout)
    if turn.api is Api.LOCAL:
        context = for_local_model(context, turn.model, turn.options)
    if turn.prefill and not context.chat_completion.continue_prefill:
        # continue in place where the API allows a prefill; elsewhere the preset's nudge
        settings_cc = replace(context.chat_completion, continue_prefill=True)
        context = replace(context, chat_completion=settings_cc)
    return context


def _message_bytes(_node_id: str, message: ChatMessage) -> int:
    return text_bytes([message.id, message.name, message.text, message.bias]) + MESSAGE_OVERHEAD


def _cost_bytes(_chat_id: str, kept: tuple[tuple[str, str, int], MessageCost]) -> int:
    """About what a chat's kept costs hold: their entries, measured on a sample."""
    sample = list(itertools.islice(kept[1].memo.entries(), COST_SAMPLE))
    if not sample:
        return 0
    mean = sum(approx_bytes(item, 3) for item in sample) / len(sample)
    return int(mean * len(kept[1].memo))


def asks_backend(turn: TurnRequest, context: AssemblyContext) -> BackendTokenizer | None:
    """The server's own tokenizer, when the turn's connection has one and the settings'
    tokenizer is SillyTavern's API tokenizer (Text Completion only, as there)."""
    if turn.backend is None or context.api != "textgen":
        return None
    return turn.backend if context.power_user.tokenizer in API_TOKENIZERS else None
