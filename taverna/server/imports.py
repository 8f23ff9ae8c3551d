"""Importing a whole SillyTavern user data folder as a task of its own, with progress events.

The browser uploads the folder's files (with their paths inside it); they are written
to a temporary folder in the data folder's `tmp/`, the library imports it in a worker
thread, and every step is published as an event a page can follow (and follow again
after a reload).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import new_id
from taverna.services.connections.service import ConnectionService
from taverna.services.house.scratch import ScratchFolder
from taverna.services.interchange.library_import import LibraryImport, is_user_data_folder
from taverna.services.interchange.report import ImportReport, Progress
from taverna.services.library.service import LibraryService

log = logging.getLogger(__name__)


@dataclass
class ImportJob:
    """One import: its events so far (`progress`, then `done` or `error`)."""

    id: str
    owner: str = ""  # the account importing (only it may follow the import)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    done: bool = False
    _signal: asyncio.Event = field(default_factory=asyncio.Event)

    def publish(self, name: str, data: dict[str, Any]) -> None:
        self.events.append((name, data))
        if name in ("done", "error"):
            self.done = True
        signal, self._signal = self._signal, asyncio.Event()
        signal.set()

    async def follow(self, since: int = 0) -> AsyncIterator[tuple[int, str, dict[str, Any]]]:
        """Every event from index `since` on, each once: those so far, then live ones."""
        index = max(0, since)
        while True:
            signal = self._signal
            while index < len(self.events):
                name, data = self.events[index]
                yield index, name, data
                index += 1
            if self.done:
                return
            await signal.wait()


class ImportJobs:
    """The imports of this process by id."""

    def __init__(self) -> None:
        self._jobs: dict[str, ImportJob] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def get(self, job_id: str) -> ImportJob:
        job = self._jobs.get(job_id)
        if job is None:
            raise NotFound("no such import", code="no_such_import")
        return job

    def start(
        self,
        folder: Path,
        library: LibraryService,
        *,
        cleanup: ScratchFolder | None,
        connections: ConnectionService | None = None,
    ) -> ImportJob:
        """Import the user data folder in `folder` (or one level in) on a thread of its own;
        `cleanup` is removed when it ends. `connections`: the account's, for the connections
        its settings bring."""

        def work(publish: Publish) -> dict[str, Any]:
            def progress(step: Progress) -> None:
                publish("progress", {"done": step.done, "total": step.total, "item": step.current})

            report, root = _import(library, folder, progress, connections)
            return {"report": report_json(report, root)}

        return self.run(library.owner, work, cleanup=cleanup)

    def run(
        self,
        owner: str,
        work: Callable[[Publish], dict[str, Any]],
        *,
        cleanup: ScratchFolder | None = None,
    ) -> ImportJob:
        """Run `work` on a thread of its own as an import of `owner`'s: it publishes its
        progress through the function it is given, and what it returns is the `done`
        event's data (a failure, the `error` event's: the message, its code and the file
        and field it names). `cleanup` is removed when it ends."""
        job = ImportJob(new_id(), owner=owner)
        self._jobs[job.id] = job
        loop = asyncio.get_running_loop()

        def publish(name: str, data: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(job.publish, name, data)

        async def run() -> None:
            # The uploaded folder goes before the end is told, so nothing is left after it.
            ending: tuple[str, dict[str, Any]]
            try:
                ending = ("done", await asyncio.to_thread(work, publish))
            except TavernaError as exc:
                ending = ("error", error_json(exc))
            except Exception as exc:
                log.exception("the import %s failed", job.id)
                ending = ("error", {"message": f"the import failed: {exc}"})
            finally:
                if cleanup is not None:
                    await asyncio.to_thread(cleanup.remove)
            job.publish(*ending)

        task = asyncio.create_task(run(), name=f"import {job.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job


Publish = Callable[[str, dict[str, Any]], None]


def error_json(error: TavernaError) -> dict[str, Any]:
    """An import's failure as its `error` event: the English message, and the code, its
    params and the file and field it names, for a page to say it in its language."""
    return {
        "message": str(error),
        "code": error.code or None,
        "params": dict(error.params),
        "file": error.file,
        "field": error.field,
    }


def import_jobs(services: dict[str, Any]) -> ImportJobs:
    """The server's imports (made on first use)."""
    found = services.setdefault("imports", ImportJobs())
    assert isinstance(found, ImportJobs)
    return found


def _import(
    library: LibraryService,
    folder: Path,
    progress: Callable[[Progress], None],
    connections: ConnectionService | None = None,
) -> tuple[ImportReport, Path]:
    root = import_root(folder)
    return LibraryImport(library, connections).import_path(root, progress=progress), root


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return Path(path).name


def report_json(report: ImportReport, root: Path) -> dict[str, Any]:
    """What was stored and what was skipped, with paths relative to the imported folder."""
    return {
        "stored": [{"kind": s.kind, "name": s.name, "replaced": s.replaced} for s in report.stored]
        + [
            {
                "kind": "chat",
                "name": c.chat.title,
                "messages": c.messages,
                "branches": len(c.branches),
            }
            for c in report.chats
        ],
        "skipped": [
            {
                "path": _relative(s.path, root),
                "reason": s.reason,
                "code": s.code or None,
                "params": _shown_params(s.params, root),
            }
            for s in report.skipped
        ],
        "warnings": [
            {
                "path": _relative(w.file or "", root),
                "field": w.field,
                "message": w.message,
                "code": w.code or None,
                "params": dict(w.params),
            }
            for w in report.warnings
        ],
    }


def _shown_params(params: Mapping[str, str | int], root: Path) -> dict[str, str | int]:
    """A skip reason's params as a page shows them: a file named relative to the folder."""
    shown = dict(params)
    if shown.get("file"):
        shown["file"] = _relative(str(shown["file"]), root)
    return shown


def import_root(folder: Path) -> Path:
    """The user data folder inside what was uploaded (the chosen folder itself is one level in)."""
    if is_user_data_folder(folder):
        return folder
    children = [p for p in folder.iterdir() if p.is_dir()]
    if len(children) == 1 and is_user_data_folder(children[0]):
        return children[0]
    return folder
