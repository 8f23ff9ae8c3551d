"""Recall by meaning: every message embedded once, old messages of the path found again.

- **Embedding.** A message is embedded once per model ("speaker: text") by a backlog
  that reads, from the store, the messages with no vector of their current text. The
  backlog is the store's own state, so a crash loses nothing: the next start embeds what
  was not saved. `EmbeddingBacklog` runs it on a thread of its own.
- **Search.** Each turn the last `query` messages' vectors, averaged, are the query. The
  database searches where it can (sqlite-vec, pgvector: `Store.nearest_messages`), for a
  shortlist above the turn's window, made longer while too few of it qualify; nothing
  of the chat is loaded. Once a chat's sign bits are in memory (`ChatBits`, read on a
  thread of their own from the bits stored beside each vector), that shortlist is made from them instead, and only its floats
  are read. Without such a search the chat's vectors are held in memory per
  process (`ChatVectors`, reading only rows added since) and searched exactly. A hit
  counts only when it is on the active path (its depth's node on the path is itself:
  `PathIndex`), above the turn's window, and neither hidden nor deleted as stored now.
  So a branch never recalls a sibling's messages.
- **The question** needs the model only for a message not embedded yet, usually the one
  being sent: `foresee` starts embedding it when the send arrives (`TextVectors`).
- **Lorebook entries marked vectorized** are embedded once per text (stored by hash) and
  activate when near the same query, up to `max_entries`, above `score_threshold`.

Settings are SillyTavern's `extension_settings.vectors` (its names), plus `budget`, the
recalled block's own token limit.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from threadpoolctl import ThreadpoolController

from taverna.engine.assembly.recall import (
    DEFAULT_TEMPLATE,
    RecalledMessage,
    RecallInput,
    RecallSettings,
)
from taverna.errors import NotFound
from taverna.model.chat import Node
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.model.lorebook import Lorebook
from taverna.providers.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder, normalised
from taverna.providers.outbound import OutboundPolicy
from taverna.services.connections.outbound_rules import OutboundRules
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND
from taverna.services.library.watch import Kept, LibraryWatch
from taverna.services.memory.recall_keys import (
    RecallKeys,
    operator_endpoint,
    operator_key,
    same_endpoint,
)
from taverna.services.memory.text_vectors import TextVectors
from taverna.store.repository import DueMessage, NearMessage, Store

Vectors = npt.NDArray[np.float32]
log = logging.getLogger(__name__)

BACKLOG_BATCH = 32
# A chat's vectors kept in memory, for this many chats (the most recently used).
CHATS_KEPT = 4
# Chats whose account a send remembers (an account never changes), at most.
OWNERS_KEPT = 4096
# How far a path's end is climbed to find where it joins the path kept in memory: first
# a few rows (a turn's end is usually a message or two below the last), then four times
# more a climb, up to this many.
CLIMB_FIRST = 8
CLIMB_STEP = 256
# Up to this many rows a chat's search scores every row exactly; past it, a shortlist of
# this many rows by sign bits is scored exactly at a time (see `ChatVectors`).
EXACT_ROWS = 20_000
SHORTLIST = 1024
# The database's search is first asked for this many rows per message wanted (a
# sibling's or a hidden message takes a place too), at least `STORE_SHORTLIST`.
STORE_SHORTLIST = 64
SHORTLIST_PER_WANTED = 8
# The longest shortlist asked for (sqlite-vec answers at most 4,096 rows a search).
STORE_SHORTLIST_MAX = 4096
# A chat's sign bits are read this many rows at a time (64 bytes a row; a row stored
# without its bits brings its floats instead).
BITS_READ = 5000


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Recall's settings as SillyTavern saves them (`extension_settings.vectors`)."""

    enabled_chats: bool = False
    enabled_world_info: bool = False
    placement: RecallSettings = RecallSettings()
    query: int = 2
    protect: int = 5
    score_threshold: float = 0.25
    max_entries: int = 5
    source: str = "transformers"
    endpoint: str = ""  # an OpenAI-compatible API root, for source "openai"
    model: str = "text-embedding-3-small"
    owner: str = ""  # the account whose settings these are
    # The account's own key for `endpoint` (`recall_keys.py`) and the outbound policy its
    # requests go out under, both filled in by RecallService.
    key: str = field(default="", repr=False)
    policy: OutboundPolicy | None = None

    @property
    def enabled(self) -> bool:
        return self.enabled_chats or self.enabled_world_info


def recall_config(raw_settings: Mapping[str, Any]) -> RecallConfig:
    """Read `extension_settings.vectors` from SillyTavern's settings; what is missing or
    malformed takes SillyTavern's default."""
    ext = raw_settings.get("extension_settings")
    vectors = ext.get("vectors") if isinstance(ext, Mapping) else None
    if not isinstance(vectors, Mapping):
        return RecallConfig()

    def num(name: str, default: float) -> float:
        value = vectors.get(name, default)
        try:
            return float(value)
        except (TypeError, ValueError):
            return default

    def whole(name: str, default: int) -> int:
        return int(num(name, default))

    def flag(name: str, default: bool) -> bool:
        value = vectors.get(name, default)
        return value if isinstance(value, bool) else default

    position = whole("position", int(ExtensionPosition.IN_PROMPT))
    role = whole("depth_role", int(InjectionRole.SYSTEM))
    template = vectors.get("template", DEFAULT_TEMPLATE)
    placement = RecallSettings(
        template=template if isinstance(template, str) else DEFAULT_TEMPLATE,
        position=ExtensionPosition(position)
        if position in {p.value for p in ExtensionPosition}
        else ExtensionPosition.IN_PROMPT,
        depth=max(0, whole("depth", 2)),
        role=InjectionRole(role)
        if role in {r.value for r in InjectionRole}
        else InjectionRole.SYSTEM,
        insert=max(0, whole("insert", 3)),
        budget=max(0, whole("budget", 400)),
        include_wi=flag("include_wi", False),
        score_threshold=num("score_threshold", 0.25),
    )
    source = vectors.get("source", "transformers")
    endpoint = vectors.get("alt_endpoint_url", "")
    model = vectors.get("openai_model", "text-embedding-3-small")
    return RecallConfig(
        enabled_chats=flag("enabled_chats", False),
        enabled_world_info=flag("enabled_world_info", False),
        placement=placement,
        query=max(1, whole("query", 2)),
        protect=max(0, whole("protect", 5)),
        score_threshold=num("score_threshold", 0.25),
        max_entries=max(0, whole("max_entries", 5)),
        source=source if isinstance(source, str) else "transformers",
        endpoint=endpoint if isinstance(endpoint, str) else "",
        model=model if isinstance(model, str) else "text-embedding-3-small",
    )


def embedder_for(config: RecallConfig) -> Embedder:
    """The embedding model the settings name: an OpenAI-compatible endpoint for source
    `openai`, else the bundled local model. The server's key ($TAVERNA_EMBEDDINGS_KEY)
    goes only to the operator's endpoint ($TAVERNA_EMBEDDINGS_URL, the default one); an
    endpoint the account named gets the account's own key, or none."""
    if config.source == "openai":
        operator = operator_endpoint()
        base = config.endpoint or operator
        if same_endpoint(base, operator):
            return OpenAIEmbedder(base, config.model, api_key=operator_key())
        return OpenAIEmbedder(base, config.model, api_key=config.key, policy=config.policy)
    return LocalEmbedder()


_BLAS: list[ThreadpoolController] = []  # made on first use (it looks at loaded libraries)


def single_threaded() -> AbstractContextManager[object]:
    """BLAS on one thread for a while (numpy's vector products).

    Its idle worker threads otherwise spin after every product, and on a machine of a few
    cores they take the CPU from the rest of the turn: on two cores a turn with recall
    took five times as long. The search's products are small; one thread does them best.
    """
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    limited: AbstractContextManager[object] = _BLAS[0].limit(limits=1, user_api="blas")
    return limited


def embedded_text(speaker: str, text: str) -> str:
    """What is embedded for one message: its text with the speaker's name."""
    return f"{speaker}: {text}" if speaker else text


def to_bytes(vector: Vectors) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


# ------------------------------------------------------------------ the backlog


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


def stored_config(store: Store, owner: str = "") -> RecallConfig:
    """The recall settings of the user's active settings (`extension_settings.vectors`)."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    if not docs:
        return RecallConfig()
    return replace(recall_config(docs[-1].data), owner=owner)


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


# ------------------------------------------------------------- in-memory search


class _RowsByMessage:
    """Message ids and their rows in a chat's in-memory arrays: a message read again keeps
    its row, a new one takes the next."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self._size = 0

    def _unseen(self, fresh: Sequence[Any]) -> int:
        """How many messages of `fresh` have no row yet."""
        return len({stored.node_id for stored in fresh if stored.node_id not in self.rows})

    def _place(self, fresh: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The row of each of `fresh`, new messages given the next free rows."""
        rows = np.empty(len(fresh), dtype=np.intp)
        for i, stored in enumerate(fresh):
            row = self.rows.get(stored.node_id)
            if row is None:
                row = self._size
                self._size += 1
                self.rows[stored.node_id] = row
                self.ids.append(stored.node_id)
            rows[i] = row
        return rows


class ChatVectors(_RowsByMessage):
    """One chat's message vectors for one model, in memory, kept up to date by `seq`.

    Beside each vector its sign bits (one bit a dimension): past `EXACT_ROWS` rows a
    search first ranks every row by the Hamming distance of those bits (an eighth of a
    float's memory to read) and then scores a shortlist exactly.
    """

    def __init__(self, chat_id: str, model: str) -> None:
        super().__init__()
        self.chat_id = chat_id
        self.model = model
        self.seq = 0
        self.depths = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.bits = np.zeros((0, 0), dtype=np.uint8)

    def refresh(self, store: Store) -> None:
        """Read the vectors written since the last look (a changed message's replace its row)."""
        fresh = store.message_vectors(self.chat_id, self.model, after=self.seq)
        if not fresh:
            return
        dims = len(fresh[0].vector) // 4
        if self.matrix.shape[1] != dims:
            self._allocate(max(len(fresh), 64), dims)
            self.ids, self.rows, self._size = [], {}, 0
        new = self._unseen(fresh)
        if self._size + new > self.matrix.shape[0]:
            self._allocate(max(self._size + new, self.matrix.shape[0] * 2), dims)
        rows = self._place(fresh)
        # One copy for all rows read (a chat's first read holds every vector it has).
        block = np.frombuffer(b"".join(s.vector for s in fresh), dtype=np.float32)
        self.matrix[rows] = block.reshape(len(fresh), dims)
        self.depths[rows] = [s.depth for s in fresh]
        self.bits[rows] = np.packbits(self.matrix[rows] > 0, axis=1)
        self.seq = fresh[-1].seq

    def _allocate(self, rows: int, dims: int) -> None:
        """Room for `rows` rows of `dims` dimensions, the rows held so far kept."""
        size = self._size if self.matrix.shape[1] == dims else 0
        matrix = np.zeros((rows, dims), dtype=np.float32)
        depths = np.zeros(rows, dtype=np.int64)
        bits = np.zeros((rows, (dims + 63) // 64 * 8), dtype=np.uint8)
        if size:
            matrix[:size] = self.matrix[:size]
            depths[:size] = self.depths[:size]
            bits[:size] = self.bits[:size]
        self.matrix, self.depths, self.bits = matrix, depths, bits

    def __len__(self) -> int:
        return self._size

    def vector(self, node_id: str) -> Vectors | None:
        row = self.rows.get(node_id)
        return None if row is None else self.matrix[row]

    def ranked(self, query: Vectors, below_depth: int) -> Iterator[tuple[int, float]]:
        """`(row, score)` of the rows above `below_depth`, best first: exactly ranked up
        to `EXACT_ROWS` rows; past that by shortlists of the nearest sign bits, each
        scored exactly."""
        size = self._size
        if not size or below_depth <= 0:
            return
        shallow = self.depths[:size] < below_depth
        if size <= EXACT_ROWS:
            scores: Vectors = self.matrix[:size] @ query
            scores[~shallow] = -np.inf
            for batch in _best_first(scores):
                for row in batch:
                    if scores[row] == -np.inf:
                        return
                    yield int(row), float(scores[row])
            return
        code = np.packbits(query > 0).view(np.uint64)
        counts = np.bitwise_count(self.bits[:size].view(np.uint64) ^ code)
        # Column by column: numpy's row sum over 8 small columns is slower than this.
        distance = counts[:, 0].astype(np.int32)
        for column in range(1, counts.shape[1]):
            distance += counts[:, column]
        distance[~shallow] = np.iinfo(np.int32).max
        for shortlist in _best_first(distance, SHORTLIST, ascending=True):
            shortlist = shortlist[shallow[shortlist]]
            if not len(shortlist):
                return
            exact = self.matrix[shortlist] @ query
            for i in np.argsort(-exact, kind="stable"):
                yield int(shortlist[i]), float(exact[i])


class ChatBits(_RowsByMessage):
    """One chat's sign bits for one model, in memory (64 bytes a message of 512
    dimensions: 6.4 MB for 100,000), kept up to date by `seq`, beside the database's
    search. The shortlist by Hamming distance that the database's search makes
    (`Store.nearest_messages`) is made here from these bits in a few milliseconds, and
    scored exactly from the floats the store holds for just those rows.
    """

    def __init__(self, chat_id: str, model: str) -> None:
        super().__init__()
        self.chat_id = chat_id
        self.model = model
        self.seq = 0
        self.depths = np.zeros(0, dtype=np.int64)
        self.seqs = np.zeros(0, dtype=np.int64)
        self.bits = np.zeros((0, 0), dtype=np.uint64)

    def __len__(self) -> int:
        return self._size

    def refresh(self, store: Store) -> None:
        """Read the sign bits of the vectors written since the last look, a block at a
        time (a changed message's replace its row)."""
        while True:
            fresh = store.message_signs(self.chat_id, self.model, after=self.seq, limit=BITS_READ)
            if not fresh:
                return
            self._take(fresh)
            if len(fresh) < BITS_READ:
                return

    def _take(self, fresh: Sequence[Any]) -> None:
        words = (len(fresh[0].signs) + 7) // 8
        if self.bits.shape[1] != words:
            self._grow(max(len(fresh), 64), words, keep=False)
        new = self._unseen(fresh)
        if self._size + new > self.bits.shape[0]:
            self._grow(max(self._size + new, self.bits.shape[0] * 2), words, keep=True)
        rows = self._place(fresh)
        width = len(fresh[0].signs)
        packed = np.zeros((len(fresh), words * 8), dtype=np.uint8)
        packed[:, :width] = np.frombuffer(b"".join(s.signs for s in fresh), dtype=np.uint8).reshape(
            len(fresh), width
        )
        self.bits[rows] = packed.view(np.uint64)
        self.depths[rows] = [s.depth for s in fresh]
        self.seqs[rows] = [s.seq for s in fresh]
        self.seq = fresh[-1].seq

    def _grow(self, rows: int, words: int, *, keep: bool) -> None:
        size = self._size if keep else 0
        bits = np.zeros((rows, words), dtype=np.uint64)
        depths = np.zeros(rows, dtype=np.int64)
        seqs = np.zeros(rows, dtype=np.int64)
        if size:
            bits[:size] = self.bits[:size]
            depths[:size] = self.depths[:size]
            seqs[:size] = self.seqs[:size]
        if not keep:
            self.ids, self.rows, self._size = [], {}, 0
        self.bits, self.depths, self.seqs = bits, depths, seqs

    def nearest(
        self, store: Store, query: Vectors, *, below_depth: int, shortlist: int
    ) -> tuple[list[NearMessage], bool]:
        """As `Store.nearest_messages`: the `shortlist` rows above `below_depth` nearest
        `query` by sign bits, scored exactly from the stored floats, best first; and
        whether there were no more rows to offer."""
        size = self._size
        words = self.bits.shape[1]
        if not size or below_depth <= 0 or shortlist <= 0 or words * 64 < len(query):
            return [], True
        signs = np.zeros(words * 8, dtype=np.uint8)
        packed = np.packbits(query > 0)
        signs[: len(packed)] = packed
        counts = np.bitwise_count(np.bitwise_xor(self.bits[:size], signs.view(np.uint64)))
        # Column by column: numpy's row sum over a few small columns is slower than this.
        distance = counts[:, 0].astype(np.int16)
        for column in range(1, words):
            distance += counts[:, column]
        # Rows in the window are past every real distance; the distances are small whole
        # numbers, so the shortlist's bound comes from their histogram (no partial sort).
        past = words * 64 + 1
        distance[self.depths[:size] >= below_depth] = past
        histogram = np.bincount(distance, minlength=past + 1)
        complete = size - int(histogram[past]) <= shortlist
        if complete:
            shallow = np.flatnonzero(distance < past)
        else:
            bound = int(np.searchsorted(np.cumsum(histogram), shortlist))
            nearer = np.flatnonzero(distance < bound)
            tied = np.flatnonzero(distance == bound)[: shortlist - len(nearer)]
            shallow = np.concatenate([nearer, tied])
        stored = store.vectors_at([int(self.seqs[row]) for row in shallow])
        kept = [int(row) for row in shallow if int(self.seqs[row]) in stored]
        if not kept:
            return [], complete
        matrix = np.vstack(
            [np.frombuffer(stored[int(self.seqs[row])], dtype=np.float32) for row in kept]
        )
        scores = matrix @ query if matrix.shape[1] == len(query) else np.zeros(len(kept))
        # Exact scores, best first; ties by the order the messages were embedded.
        order = sorted(range(len(kept)), key=lambda i: (-scores[i], int(self.seqs[kept[i]])))
        hits = [
            NearMessage(self.ids[kept[i]], int(self.depths[kept[i]]), float(scores[i]))
            for i in order
        ]
        return hits, complete


def _best_first(
    scores: npt.NDArray[Any], batch: int = 64, *, ascending: bool = False
) -> Iterator[npt.NDArray[np.intp]]:
    """Row numbers by descending score (ascending: by distance), a batch at a time (a
    partial sort: rows past the last batch asked for are never ordered)."""
    key = scores if ascending else -scores
    size = len(scores)
    start = 0
    while start < size:
        end = min(size, start + batch)
        top = np.argpartition(key, end - 1)[:end] if end < size else np.arange(size)
        ordered = top[np.argsort(key[top], kind="stable")]
        yield ordered[start:end]
        start = end
        batch *= 2


class PathIndex:
    """The active path's node ids by depth, for one chat, kept as its end moves.

    A new end is climbed (a step of rows at a time) until it meets the path held; what is
    below that point is replaced. A new path that meets it nowhere is read whole.
    """

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.leaf: str | None = None
        self.ids: list[str] = []

    def follow(
        self, store: Store, leaf: str | None, parents: Mapping[str, str | None] = {}
    ) -> None:
        """Hold the path that ends at `leaf`. A turn's end may be a message not stored yet
        (the one being sent): `parents` (id -> parent id, from the turn's own messages)
        then leads to its nearest stored ancestor, which holds the same path above it."""
        if leaf == self.leaf:
            return
        while leaf is not None and leaf in parents and not store.climb(self.chat_id, leaf, limit=1):
            leaf = parents[leaf] or None
        if leaf == self.leaf:
            return
        if leaf is None:
            self.leaf, self.ids = None, []
            return
        if not self.ids:
            # A path new to this index: read whole in one climb.
            steps = store.climb(self.chat_id, leaf, limit=1 << 30)
            self.ids = [node_id for node_id, _ in sorted(steps, key=lambda s: s[1])]
            self.leaf = leaf
            return
        start: str = leaf
        climbed: list[tuple[str, int]] = []
        above: int | None = None  # the shallowest depth climbed so far
        joined = -1  # the depth where the new end meets the path held (-1: at no node)
        step = min(CLIMB_FIRST, CLIMB_STEP)
        while joined < 0:
            steps = store.climb(self.chat_id, start, limit=step)
            step = min(step * 4, CLIMB_STEP)
            if above is not None:
                steps = [s for s in steps if s[1] < above]
            if not steps:
                break
            for node_id, depth in steps:
                if depth < len(self.ids) and self.ids[depth] == node_id:
                    joined = depth
                    break
                climbed.append((node_id, depth))
            if steps[-1][1] == 0:
                break
            start, above = steps[-1]
        # Above the meeting point the path is the one held; below it, what was climbed.
        ids = self.ids[: joined + 1]
        ids.extend(node_id for node_id, _ in sorted(climbed, key=lambda s: s[1]))
        self.ids = ids
        self.leaf = leaf

    def holds(self, node_id: str, depth: int) -> bool:
        return 0 <= depth < len(self.ids) and self.ids[depth] == node_id


class RecallService:
    """Finds, for one turn, the messages and vectorized lorebook entries to recall."""

    def __init__(
        self,
        store: Store,
        embedder_for: Callable[[RecallConfig], Embedder] = embedder_for,
        *,
        bits: Literal["background", "at once", "never"] = "background",
        watch: LibraryWatch | None = None,
        keys: RecallKeys | None = None,
        outbound: OutboundRules | None = None,
    ) -> None:
        """`bits`: how a chat's sign bits come into memory beside the database's search
        (`ChatBits`): read on a thread of their own while the database searches (a
        100,000-message chat's take seconds), read at once, or never (the database
        searches every turn). `watch`: when what a send's early embedding keeps of the
        settings is read again (without one, they are read at every send). `keys`: the
        accounts' own keys for the endpoints they name (without it, none is sent).
        `outbound`: whose requests to the endpoints they name go out under the outbound
        policy (without it, nobody's)."""
        self.store = store
        self.keys = keys
        self.outbound = outbound
        # A send asks whether its account's recall is on: the answer is kept until the
        # library changes, with each chat's account (which never changes).
        self._enabled: Kept[str, RecallConfig] | None = Kept(watch) if watch else None
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._embedder_for = embedder_for
        self._embedders: dict[tuple[str, str, str, str, OutboundPolicy | None], Embedder] = {}
        self._chats: OrderedDict[tuple[str, str], ChatVectors] = OrderedDict()
        self.bits_mode = bits
        self._bits: OrderedDict[tuple[str, str], ChatBits] = OrderedDict()
        self._loading: set[tuple[str, str]] = set()
        self._paths: OrderedDict[str, PathIndex] = OrderedDict()
        self.texts = TextVectors()  # texts' vectors made in this process (questions, sends)
        self.lock = threading.RLock()  # the caches are shared by the server's threads
        self._made = threading.Lock()

    def embedder(self, config: RecallConfig) -> Embedder:
        """The embedding model of the settings `config`, with the account's own key and
        policy for an endpoint it named (one made per model, key and policy)."""
        if config.source == "openai" and not same_endpoint(
            config.endpoint or operator_endpoint(), operator_endpoint()
        ):
            own_key = self.keys.key_for(config.owner, config.endpoint) if self.keys else ""
            policy = self.outbound.for_owner(config.owner) if self.outbound else None
            config = replace(config, key=own_key, policy=policy)
        own = hashlib.sha256(config.key.encode()).hexdigest() if config.key else ""
        key = (config.source, config.endpoint, config.model, own, config.policy)
        with self._made:  # one model each, whichever thread asks first
            found = self._embedders.get(key)
            if found is None:
                found = self._embedders[key] = self._embedder_for(config)
        return found

    def foresee(self, chat_id: str, speaker: str, text: str) -> Future[None] | None:
        """A message is being sent (or typed) in the chat: while recall is on, embed it now,
        on a thread of its own, so the turn's question finds its vector made. `speaker`
        empty: the chat's person."""
        if not text.strip():
            return None

        def named() -> tuple[Embedder, str] | None:
            config = self._config_of(chat_id)
            if not config.enabled:
                return None
            name = speaker or self.store.get_chat(chat_id).user_name
            return self.embedder(config), embedded_text(name, text)

        return self.texts.ahead(named)

    def _config_of(self, chat_id: str) -> RecallConfig:
        """The recall settings of the chat's account (kept while the library is unchanged)."""
        if self._enabled is None:
            return stored_config(self.store, self.store.get_chat(chat_id).owner)
        with self.lock:
            owner = self._owners.get(chat_id)
        if owner is None:
            owner = self.store.get_chat(chat_id).owner
            with self.lock:
                self._owners[chat_id] = owner
                while len(self._owners) > OWNERS_KEPT:
                    self._owners.popitem(last=False)
        return self._enabled.get(owner, lambda: stored_config(self.store, owner))

    def close(self) -> None:
        self.texts.close()

    # ------------------------------------------------------------------ caches

    def chat_vectors(self, chat_id: str, model: str) -> ChatVectors:
        key = (chat_id, model)
        found = self._chats.get(key)
        if found is None:
            found = self._chats[key] = ChatVectors(chat_id, model)
            while len(self._chats) > CHATS_KEPT:
                self._chats.popitem(last=False)
        self._chats.move_to_end(key)
        found.refresh(self.store)
        return found

    def chat_bits(self, chat_id: str, model: str) -> ChatBits | None:
        """The chat's sign bits, up to date, if they are in memory (else, in the
        background mode, their read is started and the database searches meanwhile)."""
        key = (chat_id, model)
        with self.lock:
            found = self._bits.get(key)
            if found is not None:
                self._bits.move_to_end(key)
                found.refresh(self.store)
                return found
            if self.bits_mode == "never":
                return None
            if self.bits_mode == "at once":
                return self._keep_bits(key, self._read_bits(chat_id, model))
            if key not in self._loading:
                self._loading.add(key)
                threading.Thread(
                    target=self._load_bits, args=key, name="recall-bits", daemon=True
                ).start()
        return None

    def _read_bits(self, chat_id: str, model: str) -> ChatBits:
        bits = ChatBits(chat_id, model)
        with single_threaded():
            bits.refresh(self.store)
        return bits

    def _keep_bits(self, key: tuple[str, str], bits: ChatBits) -> ChatBits:
        self._bits[key] = bits
        while len(self._bits) > CHATS_KEPT:
            self._bits.popitem(last=False)
        return bits

    def _load_bits(self, chat_id: str, model: str) -> None:
        key = (chat_id, model)
        try:
            bits = self._read_bits(chat_id, model)  # outside the lock: turns go on meanwhile
            with self.lock:
                self._keep_bits(key, bits)
        except Exception:  # the store closed, the chat gone: the database searches
            log.debug("reading the sign bits of chat %s failed", chat_id, exc_info=True)
        finally:
            with self.lock:
                self._loading.discard(key)

    def path(
        self, chat_id: str, leaf: str | None, parents: Mapping[str, str | None] = {}
    ) -> PathIndex:
        found = self._paths.get(chat_id)
        if found is None:
            found = self._paths[chat_id] = PathIndex(chat_id)
            while len(self._paths) > CHATS_KEPT:
                self._paths.popitem(last=False)
        self._paths.move_to_end(chat_id)
        found.follow(self.store, leaf, parents)
        return found

    def _text_vector(self, embedder: Embedder, text: str) -> Vectors:
        return self.texts.vector(embedder, text)

    # ------------------------------------------------------------------- a turn

    def query_vector(
        self, config: RecallConfig, vectors: ChatVectors | None, recent: Sequence[Node]
    ) -> Vectors | None:
        """The mean of the last `query` non-empty visible messages' vectors (those not yet
        embedded are embedded now, kept in memory only). `vectors` None: the stored
        vectors are read from the store."""
        embedder = self.embedder(config)
        picked = [
            n for n in reversed(recent) if not n.hidden and not n.deleted and n.content.strip()
        ]
        picked = picked[: config.query]
        if not picked:
            return None
        saved: dict[str, bytes] = {}
        if vectors is None:
            saved = self.store.node_vectors(embedder.model, [n.id for n in picked])
        rows = []
        for node in picked:
            if vectors is None:
                raw = saved.get(node.id)
                stored = None if raw is None else np.frombuffer(raw, dtype=np.float32)
            else:
                stored = vectors.vector(node.id)
            if stored is None:
                stored = self._text_vector(embedder, embedded_text(node.speaker, node.content))
            rows.append(stored)
        mean = np.mean(np.vstack(rows), axis=0)
        query: Vectors = normalised(mean)[0]
        return query

    def for_turn(
        self,
        config: RecallConfig,
        chat_id: str,
        leaf: str | None,
        recent: Sequence[Node],
        books: Mapping[str, Lorebook] = {},
    ) -> TurnRecall | None:
        """What this turn may recall; None when recall is off or there is nothing to ask."""
        if not config.enabled or not recent:
            return None
        with self.lock, single_threaded():
            embedder = self.embedder(config)
            in_store = bool(self.store.vector_search())
            vectors = None if in_store else self.chat_vectors(chat_id, embedder.model)
            bits = (
                self.chat_bits(chat_id, embedder.model)
                if in_store and config.enabled_chats
                else None
            )
            query = self.query_vector(config, vectors, recent)
            if query is None:
                return None
            parents = {n.id: n.parent_id for n in recent}
            path = self.path(chat_id, leaf, parents) if config.enabled_chats else None
            entries = (
                self._entry_scores(config, embedder, query, books)
                if config.enabled_world_info and books
                else {}
            )
        return TurnRecall(
            self,
            config,
            chat_id,
            leaf,
            embedder.model,
            vectors,
            path,
            query,
            entries,
            parents,
            bits,
        )

    def _entry_scores(
        self,
        config: RecallConfig,
        embedder: Embedder,
        query: Vectors,
        books: Mapping[str, Lorebook],
    ) -> dict[tuple[str, int], float]:
        refs: list[tuple[str, int]] = []
        texts: list[str] = []
        for name, book in books.items():
            for entry in book.entries:
                if entry.vectorized and not entry.disable and entry.content.strip():
                    refs.append((name, entry.uid))
                    texts.append(entry.content)
        if not refs or config.max_entries <= 0:
            return {}
        hashes = [hashlib.sha256(text.encode()).hexdigest() for text in texts]
        stored = self.store.text_vectors(embedder.model, hashes)
        missing = sorted(
            {h: t for h, t in zip(hashes, texts, strict=True) if h not in stored}.items()
        )
        if missing:
            made = embedder.embed([t for _, t in missing])
            fresh = {h: to_bytes(made[i]) for i, (h, _) in enumerate(missing)}
            self.store.save_text_vectors(embedder.model, fresh)
            stored.update(fresh)
        matrix = np.vstack([np.frombuffer(stored[h], dtype=np.float32) for h in hashes])
        scores = matrix @ query
        order = np.argsort(-scores, kind="stable")
        out: dict[tuple[str, int], float] = {}
        for row in order[: config.max_entries]:
            score = float(scores[row])
            if score >= config.score_threshold:
                out[refs[row]] = score
        return out


@dataclass(slots=True)
class TurnRecall:
    """One turn's recall: the ranking made once, cut to each window the turn tries."""

    service: RecallService
    config: RecallConfig
    chat_id: str
    leaf: str | None
    model: str
    vectors: ChatVectors | None  # None: the store searches
    path: PathIndex | None
    query: Vectors
    entry_scores: dict[tuple[str, int], float]
    parents: dict[str, str | None] = field(default_factory=dict)  # the turn's own messages
    bits: ChatBits | None = None  # the chat's sign bits in memory, beside the store's search

    def entries_only(self) -> RecallInput:
        """The vectorized lorebook entries alone (no message recalled)."""
        return RecallInput(self.config.placement, (), dict(self.entry_scores))

    def for_window(self, first_depth: int) -> RecallInput:
        """The recall input for a turn whose window starts at depth `first_depth` (only
        messages above it can be recalled: those below are in the window)."""
        placement = self.config.placement
        messages: tuple[RecalledMessage, ...] = ()
        if self.path is not None and placement.insert > 0:
            # Another turn (of this chat, on another branch perhaps) may have moved the
            # shared path index or read new vectors since: set it to this turn's end again.
            with self.service.lock, single_threaded():
                self.path = self.service.path(self.chat_id, self.leaf, self.parents)
                messages = self._messages(first_depth, placement.insert * 3)
        return RecallInput(placement, messages, dict(self.entry_scores))

    def _messages(self, below: int, want: int) -> tuple[RecalledMessage, ...]:
        assert self.path is not None
        store = self.service.store
        vectors = self.vectors
        picked: list[RecalledMessage] = []
        hits: list[tuple[str, float]] = []

        def check() -> None:
            # Hidden or deleted as stored now, and the text: one read for a group of hits.
            nodes = {n.id: n for n in store.get_nodes(self.chat_id, [h[0] for h in hits])}
            for node_id, score in hits:
                node = nodes.get(node_id)
                if node is None or node.hidden or node.deleted or len(picked) >= want:
                    continue
                picked.append(RecalledMessage(node_id, node.speaker, node.content, score))
            hits.clear()

        if vectors is None:
            return self._store_messages(below, want)
        for row, score in vectors.ranked(self.query, below):
            node_id = vectors.ids[row]
            if not self.path.holds(node_id, int(vectors.depths[row])):
                continue  # a sibling branch's message, or a stale row
            hits.append((node_id, score))
            if len(hits) >= want - len(picked):
                check()
                if len(picked) >= want:
                    break
        if hits:
            check()
        out = picked
        return tuple(out)

    def _store_messages(self, below: int, want: int) -> tuple[RecalledMessage, ...]:
        """The store's search: a shortlist, made four times longer while too few of it are
        on the path, visible and live (and more rows are there to offer)."""
        assert self.path is not None
        store = self.service.store
        query = to_bytes(self.query)
        shortlist = max(STORE_SHORTLIST, want * SHORTLIST_PER_WANTED)
        while True:
            found = (
                self.bits.nearest(store, self.query, below_depth=below, shortlist=shortlist)
                if self.bits is not None
                else store.nearest_messages(
                    self.chat_id, self.model, query, below_depth=below, shortlist=shortlist
                )
            )
            if found is None:
                return ()
            near, complete = found
            on_path = [h for h in near if self.path.holds(h.node_id, h.depth)]
            picked: list[RecalledMessage] = []
            # Hidden or deleted as stored now, and the text: read a few hits at a time.
            for start in range(0, len(on_path), want):
                group = on_path[start : start + want]
                nodes = {n.id: n for n in store.get_nodes(self.chat_id, [h.node_id for h in group])}
                for hit in group:
                    node = nodes.get(hit.node_id)
                    if node is None or node.hidden or node.deleted:
                        continue
                    picked.append(
                        RecalledMessage(hit.node_id, node.speaker, node.content, hit.score)
                    )
                    if len(picked) >= want:
                        return tuple(picked)
            if complete or shortlist >= STORE_SHORTLIST_MAX:
                return tuple(picked)
            shortlist = min(shortlist * 4, STORE_SHORTLIST_MAX)
