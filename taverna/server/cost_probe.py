"""An opt-in record of what a worker's turns cost, for `bench/load.py`: the SQL statements
and transactions it ran, and where its CPU went (read, build, write, relay, backup).

Off unless `TAVERNA_COST_PROBE` names a folder; then the process writes its running totals
to FOLDER/PID.json every `WRITE_EVERY` seconds. Off, nothing listens to the database and no
thread runs: serving pays one look at the environment at start.

The profile is a sampler thread: every `SAMPLE_EVERY` seconds it reads each thread's CPU
clock and gives the CPU that thread used since the last sample to the part of a turn its
stack is in now (`part_of`). Work shorter than a sample lands on whatever ran next, so the
shares are a sampling profile's, right on average over many turns.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

ENV = "TAVERNA_COST_PROBE"
SAMPLE_EVERY = 0.01
WRITE_EVERY = 0.2

# The parts of a turn, in the order a report lists them; `loop` is the event loop's own
# work (and what ran just before it went idle), `other` anything not recognised.
PARTS = ("read", "build", "write", "relay", "backup", "serve", "loop", "other")

# Where the innermost recognised frame of a stack lies, by the path of its file; the first
# rule that matches a frame decides (store frames: read or write, by the stack around).
_STORE = ("/taverna/store/", "/sqlalchemy/", "/psycopg/", "/alembic/")
# What a turn writes besides the store's own statements: the reply as a record, the journal,
# the chat writer's rules (what the store does for them is told apart by `_WRITES`).
_WRITE = (
    "/taverna/services/turns/records.py",
    "/taverna/services/turns/journal",
    "/taverna/services/chats/generated",
    "/taverna/services/chats/insertion.py",
    "/taverna/services/chats/editing.py",
    "/taverna/services/chats/candidates.py",
    "/taverna/services/chats/write_rules.py",
    "/taverna/services/chats/revisions.py",
)
# The generation's stream: the model's answer read, its events kept and handed on.
_RELAY = (
    "/taverna/providers/",
    "/taverna/services/turns/runs.py",
    "/taverna/services/turns/shared_runs.py",
    "/taverna/services/turns/remote_runs.py",
    "/taverna/services/turns/follow_hub.py",
    "/taverna/services/turns/event_codec.py",
    "/taverna/services/turns/generation_task.py",
    "/taverna/services/turns/tool_rounds.py",
    "/taverna/services/turns/reply_text.py",
    "/taverna/server/session_streams.py",
    "/redis/",
    "/hiredis/",
    "/httpx/",
    "/httpcore/",
    "/aiohttp/",
    "/sse_starlette/",
)
# The prompt: the engine, and the rest of the turns and memory rooms (context, plan, recall).
_BUILD = (
    "/taverna/engine/",
    "/taverna/services/scripts/",
    "/taverna/services/memory/",
    "/taverna/services/turns/",
)
_SERVE = ("/taverna/", "/fastapi/", "/starlette/", "/uvicorn/", "/h11/", "/httptools/")
_LOOP = ("/asyncio/", "/selectors.py", "/anyio/", "/threading.py", "/concurrent/")
_BACKUP = "/taverna/services/chats/backup"
# A stack holding one of these writes (a chat's unit of work, the bulk import, a commit).
_WRITES = (
    *_WRITE,
    "/taverna/store/sql/writer.py",
    "/taverna/store/sql/write_statements.py",
    "/taverna/store/sql/bulk.py",
    "/taverna/store/sql/deletion.py",
    "/taverna/store/sql/change_log.py",
)
_WRITE_CALLS = frozenset({"commit", "_commit_impl", "flush"})
_STREAM_CALLS = frozenset({"follow_task", "frames", "_event"})


def _streaming(stack: list[tuple[str, str]]) -> bool:
    """Whether a stack is sending an event stream (a generation's, to its follower)."""
    return any(
        ("/starlette/responses.py" in file and name == "stream_response")
        or ("/taverna/server/routes/generation.py" in file and name in _STREAM_CALLS)
        or "/taverna/server/session_streams.py" in file
        for file, name in stack
    )


def part_of(files: Iterable[tuple[str, str]]) -> str:
    """The part of a turn a stack is in, from its frames' (file, function), innermost first.
    The HTTP plumbing under an event stream is the relay's."""
    stack = [(file.replace("\\", "/"), name) for file, name in files]
    if any(_BACKUP in file for file, _ in stack):
        return "backup"
    for file, _ in stack:
        if any(mark in file for mark in _STORE):
            writing = any(
                any(mark in f for mark in _WRITES) or (name in _WRITE_CALLS and "/sqlalchemy/" in f)
                for f, name in stack
            )
            return "write" if writing else "read"
        for part, marks in (("write", _WRITE), ("relay", _RELAY), ("build", _BUILD)):
            if any(mark in file for mark in marks):
                return part
        if any(mark in file for mark in _SERVE):
            return "relay" if _streaming(stack) else "serve"
    if _streaming(stack):
        return "relay"
    for file, _ in stack:
        if any(mark in file for mark in _LOOP):
            return "loop"
    return "other"


def _frames(frame: FrameType | None) -> Iterable[tuple[str, str]]:
    while frame is not None:
        yield frame.f_code.co_filename, frame.f_code.co_name
        frame = frame.f_back


class CostProbe:
    """Running totals of one process: statements, transactions, commits, CPU ns per part."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / f"{os.getpid()}.json"
        self.counts: Counter[str] = Counter()
        self.cpu_ns: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._last: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cost-probe", daemon=True)
        self._listeners: list[tuple[str, Any]] = []
        self._probe_ns = 0  # the sampler's own CPU: what probing costs

    def count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    def listen(self) -> None:
        """Count every statement, transaction and commit of every SQLAlchemy engine."""
        import sqlalchemy as sa

        def statement(conn: Any, cursor: Any, text: str, *args: Any) -> None:
            self.count("statements")
            if text.lstrip()[:6].upper() != "SELECT":
                self.count("changes")

        self._listeners = [
            ("before_cursor_execute", statement),
            ("begin", lambda conn: self.count("transactions")),
            ("commit", lambda conn: self.count("commits")),
        ]
        for name, listener in self._listeners:
            sa.event.listen(sa.engine.Engine, name, listener)

    def sample(self) -> None:
        """Give each thread's CPU since the last sample to the part its stack is in now."""
        frames = sys._current_frames()
        mine = threading.get_ident()
        for ident, frame in frames.items():
            if ident == mine:
                continue
            try:
                now = time.clock_gettime_ns(time.pthread_getcpuclockid(ident))
            except OSError:  # the thread ended meanwhile
                continue
            used = now - self._last.get(ident, now)
            self._last[ident] = now
            if used > 0:
                self.cpu_ns[part_of(_frames(frame))] += used
        for gone in self._last.keys() - frames.keys():
            del self._last[gone]

    def totals(self) -> dict[str, Any]:
        with self._lock:
            counts = dict(self.counts)
        return {
            "pid": os.getpid(),
            "process_cpu_ns": time.process_time_ns(),
            "probe_cpu_ns": self._probe_ns,
            **counts,
            "cpu_ns": dict(self.cpu_ns),
        }

    def write(self) -> None:
        spare = self.path.with_suffix(".tmp")
        spare.write_text(json.dumps(self.totals()))
        os.replace(spare, self.path)

    def _run(self) -> None:
        written = time.monotonic()
        while not self._stop.wait(SAMPLE_EVERY):
            self.sample()
            self._probe_ns = time.thread_time_ns()
            if time.monotonic() - written >= WRITE_EVERY:
                self.write()
                written = time.monotonic()

    def start(self) -> CostProbe:
        self.listen()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling and listening; the last totals are written."""
        import sqlalchemy as sa

        for name, listener in self._listeners:
            sa.event.remove(sa.engine.Engine, name, listener)
        self._stop.set()
        self._thread.join()
        self.write()


def start_from_environment() -> CostProbe | None:
    """The probe, started, when `TAVERNA_COST_PROBE` names a folder; else None."""
    folder = os.environ.get(ENV)
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return CostProbe(Path(folder)).start()
