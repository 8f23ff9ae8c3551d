"""A GGUF model fetched from Hugging Face by repository and file, checked, and made a local model.

The `huggingface_hub` client does the fetching: it keeps the file in its own cache
(`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`), asks the hub named
by `HF_ENDPOINT` (read at each download, so a server started with it set uses it), and
when the connection breaks during a download it asks again for the rest only, by a Range
request from the bytes it has (again and again while each try brings more); what arrived
is kept when it gives up, so the next download of the file starts where it stopped. A
file already in its cache is not fetched again. Once
whole, the file is checked against the hub's own checksum: the SHA-256 an LFS file's ETag
is (`X-Linked-Etag`), or the git blob id of a small file's. A file that does not match is
deleted and refused. A file that matches is linked into the data folder's models folder
by its file name, where a `local` connection names it.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taverna.errors import FormatError, NotFound, ProviderError, TavernaError

# owner/name as the hub spells repositories
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")

Progress = Callable[[int, int | None], None]  # bytes on disk, bytes in all (None: unknown)


@dataclass(frozen=True, slots=True)
class HubFile:
    """One file of a model repository on the hub, at a revision (a branch, tag or commit)."""

    repo: str
    file: str
    revision: str = "main"

    def checked(self) -> HubFile:
        """The same, or FormatError naming the field that is not a GGUF file of a repository."""
        repo, file, revision = self.repo.strip(), self.file.strip(), self.revision.strip()
        if not _REPO.match(repo) or ".." in repo:
            raise FormatError(
                f"{repo[:200]!r} is not a repository name (owner/name)",
                field="repo",
                code="hub_repo_not_a_name",
                params={"repo": repo[:200]},
            )
        parts = file.split("/")
        if (
            not file.lower().endswith(".gguf")
            or any(p in ("", ".", "..") for p in parts)
            or "\\" in file
            or "\x00" in file
        ):
            raise FormatError(
                f"{file[:200]!r} is not a .gguf file of the repository",
                field="file",
                code="hub_file_not_gguf",
                params={"file": file[:200]},
            )
        if not revision or ".." in revision or len(revision) > 200:
            raise FormatError("not a revision", field="revision", code="hub_revision_invalid")
        return HubFile(repo, file, revision)

    @property
    def name(self) -> str:
        """The file's own name (without the repository's folders)."""
        return self.file.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class Fetched:
    """A file fetched and checked: where the hub's cache holds it, its size and checksum."""

    path: Path
    size: int
    checksum: str  # "sha256:…" or "git-sha1:…"
    commit: str


def hub_endpoint() -> str | None:
    """The hub asked ($HF_ENDPOINT, read now; None: the client's default)."""
    return os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or None


def cache_dir() -> str | None:
    """The hub client's cache, from the environment as it is now (None: its default)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return None


def _progress_class(report: Progress) -> Any:
    """A tqdm class whose bars report to `report` (and draw nothing)."""
    from tqdm.auto import tqdm

    class Reporting(tqdm):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = False
            kwargs["file"] = open(os.devnull, "w")  # noqa: SIM115  closed with the bar
            super().__init__(*args, **kwargs)
            report(int(self.n), self.total)

        def update(self, n: float | None = 1) -> bool | None:
            done: bool | None = super().update(n)
            report(int(self.n), self.total)
            return done

        def close(self) -> None:
            stream = self.fp
            super().close()
            stream.close()

    return Reporting


def _hub_error(exc: Exception, target: HubFile) -> TavernaError:
    """The client's exception as what a person reads."""
    kind = type(exc).__name__
    where = f"{target.repo}/{target.file}"
    if kind in ("RepositoryNotFoundError", "GatedRepoError"):
        return NotFound(
            f"no repository {target.repo!r} on the hub (or it needs a login)",
            field="repo",
            code="hub_repo_not_found",
            params={"repo": target.repo},
        )
    if kind in ("EntryNotFoundError", "RemoteEntryNotFoundError", "RevisionNotFoundError"):
        return NotFound(
            f"no file {target.file!r} in {target.repo} at {target.revision}",
            field="file",
            code="hub_file_not_found",
            params={"repo": target.repo, "file": target.file},
        )
    said = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else kind
    return ProviderError(
        f"the download of {where} failed: {said}; start it again to resume",
        code="hub_download_failed",
        params={"file": where, "why": said},
    )


def expected_checksum(etag: str | None) -> str:
    """The checksum the hub's ETag gives: an LFS file's SHA-256, a small file's git blob id."""
    value = (etag or "").strip().strip('"').removeprefix("W/").strip('"').lower()
    if _SHA256.match(value):
        return f"sha256:{value}"
    if _GIT_SHA1.match(value):
        return f"git-sha1:{value}"
    return ""


def file_checksum(path: Path, kind: str) -> str:
    """The file's checksum of the kind `expected_checksum` gave (read in 1 MiB pieces)."""
    size = path.stat().st_size
    digest = hashlib.sha256() if kind == "sha256" else hashlib.sha1(usedforsecurity=False)
    if kind != "sha256":
        digest.update(f"blob {size}\0".encode())
    with path.open("rb") as stream:
        while piece := stream.read(1 << 20):
            digest.update(piece)
    return f"{kind}:{digest.hexdigest()}"


def _remove_cached(path: Path) -> None:
    """Delete a cached file: its snapshot link and the blob it points to."""
    blob = path.resolve()
    for item in (path, blob):
        with contextlib.suppress(OSError):
            item.unlink()


def _takes_tqdm(function: Any) -> bool:
    return "tqdm_class" in inspect.signature(function).parameters


def _fetch_keeping_partial(
    hub: Any, target: HubFile, metadata: Any, blob_id: str, progress: Progress | None
) -> None:
    """Fetch the file into the client's cache as the client lays it out (`blobs/<etag>`,
    `snapshots/<commit>/<file>`, `refs/<revision>`), through the client's own `http_get`,
    keeping what arrived in `blobs/<etag>.partial` when the download fails: the next try
    asks for the rest only (the client itself drops a partial file once it gives up)."""
    from huggingface_hub import file_download

    root = Path(cache_dir() or hub.constants.HF_HUB_CACHE)
    folder = root / f"models--{target.repo.replace('/', '--')}"
    blob = folder / "blobs" / blob_id
    if not blob.exists():
        partial = blob.with_name(f"{blob_id}.partial")
        partial.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("ab") as out:
            arguments: dict[str, Any] = {
                "resume_size": out.tell(),
                "expected_size": metadata.size,
                "headers": hub.utils.build_hf_headers(),
            }
            if progress is not None and _takes_tqdm(file_download.http_get):
                arguments["tqdm_class"] = _progress_class(progress)
            file_download.http_get(metadata.location, out, **arguments)
        partial.replace(blob)
    link = folder / "snapshots" / metadata.commit_hash / target.file
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(os.path.relpath(blob, link.parent))
    if target.revision != metadata.commit_hash:
        ref = folder / "refs" / target.revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(metadata.commit_hash)


def fetch(target: HubFile, progress: Progress | None = None) -> Fetched:
    """Download `target` into the hub client's cache (resuming what a broken download left),
    then check it against the hub's checksum. Raises ProviderError or NotFound."""
    target = target.checked()
    try:
        import huggingface_hub as hub
    except ImportError:
        raise TavernaError(
            "the Hugging Face client is not installed: pip install huggingface_hub",
            code="hub_client_missing",
        ) from None
    endpoint = hub_endpoint()
    try:
        url = hub.hf_hub_url(target.repo, target.file, revision=target.revision, endpoint=endpoint)
        metadata = hub.get_hf_file_metadata(url)
        arguments: dict[str, Any] = {
            "revision": target.revision,
            "endpoint": endpoint,
            "cache_dir": cache_dir(),
        }
        if progress is not None:
            progress(0, metadata.size)
        expected = expected_checksum(metadata.etag)
        if expected and metadata.commit_hash:
            _fetch_keeping_partial(hub, target, metadata, expected.split(":", 1)[1], progress)
        elif progress is not None and _takes_tqdm(hub.hf_hub_download):
            arguments["tqdm_class"] = _progress_class(progress)
        path = Path(hub.hf_hub_download(target.repo, target.file, **arguments))
    except TavernaError:
        raise
    except Exception as exc:  # the client's own errors and the network's
        raise _hub_error(exc, target) from None
    if not expected:
        _remove_cached(path)
        raise ProviderError(
            f"the hub gave no checksum for {target.file}, so it cannot be checked; not kept",
            code="hub_no_checksum",
            params={"file": target.file},
        )
    got = file_checksum(path, expected.split(":", 1)[0])
    if got != expected:
        _remove_cached(path)
        raise ProviderError(
            f"{target.file} does not match the hub's checksum ({expected}, the file "
            f"{got}); it was deleted: download it again",
            code="hub_checksum_mismatch",
            params={"file": target.file, "expected": expected, "got": got},
        )
    size = path.stat().st_size
    if progress is not None:
        progress(size, size)
    return Fetched(path, size, expected, str(metadata.commit_hash or ""))


def install(fetched: Fetched, target: HubFile, models_dir: Path) -> str:
    """Link the fetched file into the models folder; the file name a connection names it by
    (the file's own name, or with the repository's in front where another file has it)."""
    models_dir.mkdir(parents=True, exist_ok=True)
    source = fetched.path.resolve()
    for name in (target.name, f"{target.repo.replace('/', '--')}--{target.name}"):
        link = models_dir / name
        if link.exists() or link.is_symlink():
            if link.resolve() == source:
                return name
            continue
        try:
            link.symlink_to(source)
        except OSError:  # a system without symbolic links: a hard link, else a copy
            try:
                os.link(source, link)
            except OSError:
                import shutil

                shutil.copyfile(source, link)
        return name
    raise ProviderError(
        f"the models folder already has other files named {target.name}",
        code="model_name_taken",
        params={"name": target.name},
    )


def repo_files(repo: str, revision: str = "main") -> list[dict[str, Any]]:
    """The GGUF files of a model repository on the hub, each with its size where the hub
    says it (`/api/models/{repo}` with the files' metadata)."""
    target = HubFile(repo, "x.gguf", revision).checked()
    try:
        import huggingface_hub as hub

        info = hub.HfApi(endpoint=hub_endpoint()).model_info(
            target.repo, revision=target.revision, files_metadata=True
        )
    except Exception as exc:  # the client's own errors and the network's
        raise _hub_error(exc, target) from None
    return [
        {"file": sibling.rfilename, "size": sibling.size}
        for sibling in info.siblings or []
        if sibling.rfilename.lower().endswith(".gguf")
    ]
