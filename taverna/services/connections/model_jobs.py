"""Model downloads under way, each in a thread of its own, their progress asked for by id.

A download takes minutes; the page starts one and then asks how far it got, so the work
runs apart from the request that started it. A job belongs to the account that started
it (another account's id is not found), and the finished ones are kept, the newest
`KEEP`, so a page that reloads still reads how its download ended.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from taverna.errors import NotFound, TavernaError

log = logging.getLogger(__name__)

KEEP = 20


@dataclass(slots=True)
class Job:
    """One download: what it fetches, how far it is, how it ended."""

    id: str
    kind: str  # "hub" or "ollama"
    label: str  # what is fetched, as a person reads it
    owner: str = ""
    state: str = "running"  # running, done, failed
    done: int = 0
    total: int | None = None
    status: str = ""  # the server's own word on the step (Ollama's `status`)
    error: str = ""
    code: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)  # model file, connection
    started: float = field(default_factory=time.time)

    def advance(self, done: int, total: int | None, status: str = "") -> None:
        """Note progress (called from the job's thread)."""
        self.done, self.total = done, total
        if status:
            self.status = status

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "label": self.label,
            "state": self.state,
            "done": self.done,
            "total": self.total,
            "status": self.status,
            "error": self.error,
            "code": self.code,
            "params": {k: str(v) for k, v in self.params.items()},
            **self.result,
        }


class ModelJobs:
    """The downloads of one server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}

    def start(
        self, kind: str, label: str, owner: str, work: Callable[[Job], dict[str, Any]]
    ) -> Job:
        """Run `work(job)` in a thread; what it returns is the job's result."""
        job = Job(uuid.uuid4().hex, kind, label, owner)
        with self._lock:
            self._jobs[job.id] = job
            self._forget_old()

        def run() -> None:
            try:
                job.result = work(job)
                job.state = "done"
            except TavernaError as exc:
                job.error, job.code, job.params = exc.message, exc.code or "", dict(exc.params)
                job.state = "failed"
            except Exception as exc:  # said on the job, never lost in a thread
                log.exception("model download %s failed", label)
                job.error, job.state = f"{type(exc).__name__}: {exc}", "failed"

        threading.Thread(target=run, name=f"model-{kind}", daemon=True).start()
        return job

    def get(self, job_id: str, owner: str = "") -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None or job.owner != owner:
            raise NotFound("no such download", code="no_model_download")
        return job

    def list(self, owner: str = "") -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if j.owner == owner]

    def wait(self, job: Job, timeout: float) -> Job:
        """Block until `job` ends or `timeout` passes (for the command line and tests)."""
        ends = time.monotonic() + timeout
        while job.state == "running" and time.monotonic() < ends:
            time.sleep(0.05)
        return job

    def _forget_old(self) -> None:
        ended = [j for j in self._jobs.values() if j.state != "running"]
        for job in sorted(ended, key=lambda j: j.started)[: max(0, len(ended) - KEEP)]:
            del self._jobs[job.id]


_JOBS = ModelJobs()


def model_jobs() -> ModelJobs:
    """The process-wide downloads (one server, one list)."""
    return _JOBS
