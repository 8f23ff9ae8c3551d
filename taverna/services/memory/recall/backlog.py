"""The embedding backlog: every message embedded once per model, in the background.

The backlog is the store's own state (the messages with no vector of their current text),
so a crash loses nothing: the next start embeds what was not saved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from taverna.errors import NotFound
from taverna.providers.embeddings import Embedder
from taverna.services.memory.recall.config import stored_config
from taverna.services.memory.recall.vectors import Vectors, embedded_text, single_threaded, to_bytes
from taverna.services.memory.text_vectors import TextVectors
from taverna.store.repository import DueMessage, Store

if TYPE_CHECKING:
    from taverna.services.memory.recall.service import RecallService

BACKLOG_BATCH = 32

# Up to this many messages due, the backlog embeds them one by one through the texts'
# vectors kept in memory: a turn that needs one of them (a reply just saved) waits for it
# there instead of embedding it a second time. A longer batch (catching up) is one call.
SHARED_BATCH = 2


def embed_due(
    store: Store,
    embedder: Embedder,
    *,
    batch: int = BACKLOG_BATCH,
    shared: TextVectors | None = None,
    owners: Collection[str] | None = None,
    written: tuple[str, int] | None = None,
) -> int:
    """Embed one batch of the messages due (no vector of their current text); how many.
    `shared`: the texts' vectors kept in memory (a sent message's, made for its turn, is
    taken from there). `owners`: only the chats of these accounts (None: every chat).
    `written` (chat id, revision): only that chat's messages written after it."""
    due = store.messages_due(embedder.model, limit=batch, owners=owners, written=written)
    if not due:
        return 0
    texts = [embedded_text(d.speaker, d.text) for d in due]
    made: list[Vectors | None]
    if shared is not None and len(due) <= SHARED_BATCH:
        made = [shared.vector(embedder, text) for text in texts]
    else:
        made = [shared.get(embedder.model, text) if shared else None for text in texts]
    missing = [i for i, vector in enumerate(made) if vector is None]
    if missing:
        fresh = embedder.embed([texts[i] for i in missing])
        for row, i in enumerate(missing):
            made[i] = fresh[row]
    rows: list[tuple[DueMessage, bytes]] = []
    for d, vector in zip(due, made, strict=True):
        assert vector is not None
        rows.append((d, to_bytes(vector)))
    store.save_message_vectors(embedder.model, rows)
    return len(due)


# What the backlog embeds now: each model with the accounts whose chats it embeds (None:
# every chat's). Empty while recall is off.
EmbeddingPlan = Sequence[tuple[Embedder, Collection[str] | None]]


def accounts_plan(store: Store, recall: RecallService) -> list[tuple[Embedder, tuple[str, ...]]]:
    """Each account's chats embedded with the model of that account's own recall settings
    (the single user "" is one account here), for the accounts whose recall is on; the
    accounts that chose the same model share its batches."""
    owners = ["", *(account.id for account in store.accounts())]
    groups: dict[int, tuple[Embedder, list[str]]] = {}
    for owner in owners:
        config = stored_config(store, owner)
        if not config.enabled:
            continue
        embedder = recall.embedder(config)
        groups.setdefault(id(embedder), (embedder, []))[1].append(owner)
    return [(embedder, tuple(chosen)) for embedder, chosen in groups.values()]


def _every_chat(embedder: Callable[[], Embedder | None]) -> Callable[[], EmbeddingPlan]:
    """The plan of one model (or none) for every chat."""

    def plan() -> EmbeddingPlan:
        found = embedder()
        return [] if found is None else [(found, None)]

    return plan


# Vectors stored without their sign bits (before they were) are given them this many at
# a time: a short write, so a turn waiting to write is not held up.
SIGNS_BATCH = 500


class EmbeddingBacklog:
    """Embeds the messages due in the background, one batch at a time, until none is left;
    then waits for `wake()` (the workspace wakes it after every chat write) or `every`
    seconds (a write by another process).

    `embedder` names the model in use now for every chat (None: recall is off, nothing is
    embedded); or `plan` names each model in use and whose chats it embeds (see
    `accounts_plan`). Every batch is saved in its own transaction: a crash loses at most
    the batch being embedded, which is due again at the next start. A model that fails (an
    endpoint away) rests `every` seconds while the others go on. `shared`: the texts'
    vectors the turns read (see `embed_due`).

    Before embedding, the vectors stored without their sign bits (written before the bits
    were stored) are given them, once per process: a chat's bits are then read, not made
    from its floats, when recall first searches it.

    Looking for what is due in every chat reads every message (a 100,000-message chat's
    took about 300 ms of CPU): it is done at the start, when the models in use change, and
    every `every` seconds (another process's writes). A write in this process names its
    chat (`wake(chat_id)`), and then only what that chat's writes since the last look
    added or changed is looked for (through `ix_nodes_revision`); a chat's first look in
    the process reads it whole once.
    """

    def __init__(
        self,
        store: Store,
        embedder: Callable[[], Embedder | None] | None = None,
        *,
        plan: Callable[[], EmbeddingPlan] | None = None,
        every: float = 30.0,
        shared: TextVectors | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._plan = plan if plan is not None else _every_chat(embedder or (lambda: None))
        self.every = every
        self.shared = shared
        self._clock = clock
        self.embedded = 0
        self.signed = 0  # vectors given their sign bits
        self._signs_done = False
        self.failure: Exception | None = None
        self._resting: dict[str, float] = {}  # a failed model -> when it is tried again
        self._scan_all = True  # look in every chat (at the start, new models)
        self._next_scan = 0.0  # when every chat is looked at again (by `clock`)
        self._models: frozenset[tuple[str, tuple[str, ...] | None]] = frozenset()
        self._written: set[str] = set()  # chats written since their last look
        self._looked: dict[str, int] = {}  # chat -> the revision its last look covered
        self._written_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def plan(self) -> EmbeddingPlan:
        """The models to embed with now, and whose chats each embeds."""
        return self._plan()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="taverna-embeddings", daemon=True
            )
            self._thread.start()

    def wake(self, chat_id: str | None = None) -> None:
        """Look for what is due now: in the chat written (`chat_id`), or in every chat."""
        with self._written_lock:
            if chat_id is None:
                self._scan_all = True
            else:
                self._written.add(chat_id)
        self._wake.set()

    def fill_signs(self) -> int:
        """Give one batch of the vectors stored without sign bits theirs; how many (0 once
        none is left, and from then on in this process without asking the store)."""
        if self._signs_done:
            return 0
        done = self.store.fill_signs(limit=SIGNS_BATCH)
        self.signed += done
        self._signs_done = done < SIGNS_BATCH
        return done

    def step(self) -> int:
        """Embed one batch of what is due for each model in use (none while recall is
        off); how many. A model that fails rests while the others go on; the failure is
        raised when no model embedded anything."""
        done = 0
        failure: Exception | None = None
        now = self._clock()
        plan = list(self.plan())
        models = frozenset((e.model, None if o is None else tuple(sorted(o))) for e, o in plan)
        with self._written_lock:
            if models != self._models:
                self._models, self._scan_all = models, True
            if not plan:
                # Recall off: nothing is looked for. The chats written meanwhile are looked
                # at with every other once a model is in use (the plan changed: all chats).
                self._written.clear()
                return 0
            if now >= self._next_scan:  # another process's writes, a failed model's chats
                self._scan_all = True
            scan_all = self._scan_all
            self._scan_all = False
            if scan_all:
                self._next_scan = now + self.every
            written = set() if scan_all else set(self._written)
            self._written -= written
        if scan_all:
            looks: list[tuple[str, int] | None] = [None]
        else:
            looks = []
            for chat_id in sorted(written):
                try:
                    revision = self.store.get_chat(chat_id).revision
                except NotFound:
                    continue
                looks.append((chat_id, self._looked.get(chat_id, -1)))
                self._looked[chat_id] = revision
        more: set[str | None] = set()  # where more may be due: look there again
        for look in looks:
            key = None if look is None else look[0]
            for embedder, owners in plan:
                if self._resting.get(embedder.model, now) > now:
                    if key is not None:  # every chat is looked at again once it has rested
                        more.add(key)
                    continue
                try:
                    # Background work: one core, so the BLAS threads never spin against a turn.
                    with single_threaded():
                        found = embed_due(
                            self.store, embedder, shared=self.shared, owners=owners, written=look
                        )
                except Exception as exc:  # a model or the database away: try again later
                    self._resting[embedder.model] = now + self.every
                    failure = failure or exc
                    if key is not None:
                        more.add(key)
                    continue
                done += found
                if found >= BACKLOG_BATCH:
                    more.add(key)
        with self._written_lock:
            # Where a batch was full (or a model failed), look again from where it began.
            for again in more:
                if again is None:
                    self._scan_all = True
                else:
                    self._written.add(again)
        for look in looks:
            if look is not None and look[0] in more:
                self._looked[look[0]] = look[1]
        if failure is not None and not done:
            raise failure
        return done

    def _run(self) -> None:
        while not self._stop.is_set():
            done = 0
            try:
                done = self.fill_signs()
                embedded = self.step()
                self.embedded += embedded
                done += embedded
                self.failure = None
            except Exception as exc:  # a model or the database away: try again later
                self.failure = exc
            if done:
                continue
            self._wake.wait(self.every)
            self._wake.clear()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def drain(self) -> int:
        """Give every vector its sign bits and embed everything due now in every chat, in
        this thread (for a command or a test); how many messages were embedded."""
        while self.fill_signs():
            pass
        with self._written_lock:
            self._scan_all = True
        total = 0
        while done := self.step():
            total += done
        return total
