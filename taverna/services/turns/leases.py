"""Which process generates in which chat, kept in the database beside Redis.

Processes that share their runs through Redis claim a chat there before they generate
in it (`shared_runs`). Redis can go away, or come back empty after a restart: the
claims then vanish while runs still stream, and another process would start a second
generation in a busy chat. So each run also holds a lease on its chat in the database
(a document of kind `generation_lease` named after the chat, naming the run and its
process), and each process beats a heart there (`generation_worker`, renewed every `BEAT` seconds): a lease
counts while its run streams in this process, or while another process that holds it
still beats. A finished run lets its lease go; a dead process's leases lapse with its
heartbeat.

Leases are documents of kinds that no turn reads, so writing them tells no cache that the
library changed (`QUIET_KINDS` in the store).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable

from taverna.errors import Conflict, NotFound, StaleRevision, TavernaError
from taverna.store.repository import Store

logger = logging.getLogger(__name__)

LEASE_KIND = "generation_lease"
WORKER_KIND = "generation_worker"
# A process's heartbeat is renewed this often and counts this long.
BEAT = 2.0
BEAT_LASTS = 8.0


# Lease and heartbeat documents have ids made from the chat's and the process's.
_IDS = uuid.UUID("5f0e2a4c-6d1b-4c8e-9a57-3b2d1e0f4a69")


def lease_id(chat_id: str) -> str:
    return str(uuid.uuid5(_IDS, f"{LEASE_KIND}:{chat_id}"))


def worker_id(worker: str) -> str:
    return str(uuid.uuid5(_IDS, f"{WORKER_KIND}:{worker}"))


class ChatLeases:
    """The leases of one process (`worker`) over `store`; `running(run_id)` says whether a
    run of this process still streams."""

    def __init__(
        self,
        store: Store,
        worker: str,
        running: Callable[[str], bool],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.worker = worker
        self.running = running
        self.clock = clock
        self._lock = threading.Lock()
        # Leases a finished run could not give back (the database was away): retried on
        # each beat, and never counted meanwhile by this process.
        self._unreleased: dict[str, str] = {}

    def beat(self) -> None:
        """Renew this process's heartbeat, and give back what could not be given back."""
        key = worker_id(self.worker)
        data = {"until": self.clock() + BEAT_LASTS}
        try:
            current = self.store.get_document(key)
        except NotFound:
            self.store.put_document(WORKER_KIND, self.worker, data, id=key)
        else:
            self.store.put_document(
                WORKER_KIND, self.worker, data, id=key, revision=current.revision
            )
        with self._lock:
            unreleased = dict(self._unreleased)
        for chat_id, run_id in unreleased.items():
            self.release(chat_id, run_id)

    def beats(self, worker: str) -> bool:
        """Whether the process `worker` beat recently (this one always does)."""
        if worker == self.worker:
            return True
        try:
            found = self.store.get_document(worker_id(worker))
        except NotFound:
            return False
        until = found.data.get("until")
        return isinstance(until, int | float) and until > self.clock()

    def holder(self, chat_id: str) -> tuple[str, str] | None:
        """The run and process that hold the chat's lease, if it still counts."""
        try:
            found = self.store.get_document(lease_id(chat_id))
        except NotFound:
            return None
        run, worker = found.data.get("run"), str(found.data.get("worker") or "")
        if not run:
            return None
        if worker == self.worker:
            return (run, worker) if self.running(run) else None
        return (run, worker) if self.beats(worker) else None

    def take(self, chat_id: str, run_id: str, *, owner: str = "") -> None:
        """Hold the chat for `run_id`; Conflict if a run that still counts holds it."""
        key = lease_id(chat_id)
        try:
            current = self.store.get_document(key)
        except NotFound:
            current = None
        if current is not None:
            run, worker = current.data.get("run"), str(current.data.get("worker") or "")
            if run and run != run_id and self._counts(str(run), worker):
                raise _busy()
        data = {"chat_id": chat_id, "run": run_id, "worker": self.worker}
        try:
            self.store.put_document(
                LEASE_KIND,
                chat_id,
                data,
                id=key,
                revision=current.revision if current is not None else None,
                owner=owner,
            )
        except StaleRevision as exc:
            raise _busy() from exc  # another process took it meanwhile
        except TavernaError:
            raise
        except Exception as exc:
            if current is None and "unique" in str(exc).lower():
                raise _busy() from exc  # made by another process meanwhile
            raise
        with self._lock:
            self._unreleased.pop(chat_id, None)

    def _counts(self, run: str, worker: str) -> bool:
        if worker == self.worker:
            return self.running(run)
        return self.beats(worker)

    def release(self, chat_id: str, run_id: str) -> None:
        """Give the chat's lease back if `run_id` still holds it (retried later if the
        database is away)."""
        key = lease_id(chat_id)
        try:
            current = self.store.get_document(key)
            if current.data.get("run") == run_id:
                data = {"chat_id": chat_id, "run": None, "worker": ""}
                with contextlib.suppress(StaleRevision):
                    self.store.put_document(
                        LEASE_KIND, chat_id, data, id=key, revision=current.revision
                    )
        except NotFound:
            pass
        except Exception as exc:
            logger.warning("the lease of chat %s is given back later: %s", chat_id, exc)
            with self._lock:
                self._unreleased[chat_id] = run_id
            return
        with self._lock:
            if self._unreleased.get(chat_id) == run_id:
                del self._unreleased[chat_id]


def _busy() -> Conflict:
    return Conflict(
        "a generation is already running in this chat; stop it first",
        code="generation_running",
    )
