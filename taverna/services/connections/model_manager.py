"""Getting a stronger model: from the hub into the models folder, or pulled into Ollama.

The page and `taverna model` both come here. A model downloaded from the hub becomes a
`local` connection naming its file; a model pulled into Ollama becomes the model of the
Ollama connection it was pulled through (when it had none). On a server with accounts,
only an admin fetches models: they take the server's disk and its network.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from taverna.errors import Forbidden, FormatError, ProviderError
from taverna.providers import ollama
from taverna.providers.request import Api
from taverna.services.connections import gpu_offload
from taverna.services.connections.hub_download import HubFile, fetch, install, repo_files
from taverna.services.connections.local_models import local_models, models_in
from taverna.services.connections.model_jobs import Job, ModelJobs
from taverna.services.connections.recommended_models import recommended, this_machine
from taverna.services.connections.service import ConnectionService

# Ollama's pull sends a line per step; between two a big layer may take long to start
PULL_TIMEOUT = httpx.Timeout(30.0, read=600.0)


class ModelManager:
    """What models there are to get, and getting them, for one account's connections."""

    def __init__(
        self, connections: ConnectionService, jobs: ModelJobs, models_dir: Path | None = None
    ) -> None:
        self.connections = connections
        self.jobs = jobs
        self._models_dir = models_dir

    @property
    def models_dir(self) -> Path:
        folder = self._models_dir or local_models().models_dir
        if folder is None:
            raise FormatError("this server has no models folder", code="no_models_folder")
        return folder

    def allowed(self) -> None:
        """Forbidden unless this account may fetch models (no accounts, or an admin)."""
        rules = self.connections.outbound
        if rules is None or not rules.accounts_on():
            return
        if rules.for_owner(self.connections.owner) is not None:
            raise Forbidden(
                "only an admin downloads models to the server", code="model_download_admin_only"
            )

    def overview(self) -> dict[str, Any]:
        """This machine, its runtime, the recommended models and those already here."""
        gpu = gpu_offload.supported()
        machine = this_machine(gpu=gpu)
        return {
            "machine": {"memory": machine.memory, "cores": machine.cores, "gpu": gpu},
            "offload": gpu_offload.describe({}),
            "recommended": recommended(machine),
            "downloaded": models_in(self.models_dir),
        }

    def files(self, repo: str, revision: str = "main") -> list[dict[str, Any]]:
        """The GGUF files of a repository on the hub, to choose one from."""
        self.allowed()
        return repo_files(repo, revision)

    def download(
        self,
        target: HubFile,
        *,
        connection: str = "",
        default: bool = False,
        progress: Callable[[int, int | None], None] | None = None,
    ) -> dict[str, Any]:
        """Fetch `target`, link it into the models folder and make it a connection (named
        `connection`, else after the file). Blocking; ProviderError when it fails."""
        self.allowed()
        target = target.checked()
        fetched = fetch(target, progress)
        name = install(fetched, target, self.models_dir)
        made = self.connections.add(
            connection.strip() or Path(name).stem, Api.LOCAL, model=name, default=default
        )
        return {
            "model": name,
            "connection": made.name,
            "size": fetched.size,
            "checksum": fetched.checksum,
        }

    def start_download(
        self, target: HubFile, *, connection: str = "", default: bool = False
    ) -> Job:
        """`download` in the background; its progress on the job."""
        self.allowed()
        target = target.checked()
        self.models_dir  # noqa: B018  refused now, not in the thread

        def work(job: Job) -> dict[str, Any]:
            return self.download(
                target, connection=connection, default=default, progress=job.advance
            )

        return self.jobs.start("hub", f"{target.repo}/{target.file}", self.connections.owner, work)

    def pull(
        self,
        connection_name: str,
        model: str,
        progress: Callable[[int, int | None, str], None] | None = None,
    ) -> dict[str, Any]:
        """Pull `model` into the Ollama of connection `connection_name`, reading its progress
        lines; the connection takes the model when it names none. Blocking."""
        self.allowed()
        connection = self.connections.get(connection_name)
        if connection.api is not Api.OLLAMA:
            raise FormatError(
                f"{connection.name!r} is not an Ollama connection",
                field="connection",
                code="not_an_ollama_connection",
                params={"name": connection.name},
            )
        model = model.strip()
        if not model or len(model) > 300 or any(c.isspace() for c in model):
            raise FormatError("name the model to pull", field="model", code="ollama_model_name")
        request = ollama.pull_request(
            connection.url, self.connections.resolve_key(connection), model
        )
        status = _read_pull(request, progress)
        if not connection.model:
            self.connections.add(
                connection.name,
                connection.api,
                url=connection.url,
                model=model,
                default=connection.default,
                post_processing=connection.post_processing,
                options=connection.options,
            )
        return {"model": model, "connection": connection.name, "status": status}

    def start_pull(self, connection_name: str, model: str) -> Job:
        self.allowed()
        self.connections.get(connection_name)  # a missing connection, said now

        def work(job: Job) -> dict[str, Any]:
            return self.pull(connection_name, model, progress=job.advance)

        return self.jobs.start("ollama", model, self.connections.owner, work)


def _read_pull(request: Any, progress: Callable[[int, int | None, str], None] | None) -> str:
    """POST Ollama's `/api/pull` and follow its lines to `success`; the last status."""
    layers: dict[str, tuple[int, int]] = {}  # digest -> (completed, total)
    status = ""
    try:
        with httpx.stream(
            "POST",
            request.url,
            json=dict(request.body),
            headers=dict(request.headers),
            timeout=PULL_TIMEOUT,
        ) as response:
            if response.status_code >= 400:
                said = response.read().decode("utf-8", "replace")
                raise _pull_error(_error_text(said) or f"HTTP {response.status_code}")
            for line in response.iter_lines():
                if not line.strip():
                    continue
                try:
                    step = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(step, dict):
                    continue
                if step.get("error"):
                    raise _pull_error(str(step["error"]))
                status = str(step.get("status") or status)
                digest = step.get("digest")
                if isinstance(digest, str) and isinstance(step.get("total"), int):
                    layers[digest] = (int(step.get("completed") or 0), int(step["total"]))
                if progress is not None:
                    done = sum(c for c, _ in layers.values())
                    total = sum(t for _, t in layers.values()) or None
                    progress(done, total, status)
    except httpx.HTTPError as exc:
        raise _pull_error(f"{type(exc).__name__}: {exc}") from None
    if status != "success":
        raise _pull_error(f"the pull ended at {status or 'its start'}")
    return status


def _error_text(said: str) -> str:
    try:
        found = json.loads(said)
    except json.JSONDecodeError:
        return said.strip()[:300]
    return str(found.get("error", "")) if isinstance(found, dict) else ""


def _pull_error(why: str) -> ProviderError:
    return ProviderError(
        f"Ollama could not pull the model: {why}", code="ollama_pull_failed", params={"why": why}
    )
