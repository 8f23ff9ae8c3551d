"""Stores of a test's own, to stop and start without touching anyone else's: a private
PostgreSQL (initdb/pg_ctl on a free port, in a temporary folder), a private Redis, and a
small data volume (a tmpfs mounted for the test). Each skips cleanly when it cannot be made."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stubs.taverna_server import free_port


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, its commands run as `postgres`."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


class PrivatePostgres:
    """A PostgreSQL cluster of one test module's own; `stop` and `start` it at will."""

    def __init__(self, bin_dir: Path, folder: Path) -> None:
        self.bin = bin_dir
        self.folder = folder
        self.data = folder / "data"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), *args]),
            check=True,
            capture_output=True,
            timeout=60,
        )

    def init(self) -> None:
        subprocess.run(
            _as_postgres(
                [str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
            "-c fsync=off -c full_page_writes=off"
        )
        self._ctl("-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def stop(self) -> None:
        """Stop at once: open connections are closed (as a restart or a crash does)."""
        self._ctl("-m", "fast", "-w", "stop")

    def running(self) -> bool:
        found = subprocess.run(
            _as_postgres([str(self.bin / "pg_ctl"), "-D", str(self.data), "status"]),
            capture_output=True,
        )
        return found.returncode == 0


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.skip("needs PostgreSQL's initdb and pg_ctl (/usr/lib/postgresql/*/bin)")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("PostgreSQL will not run as root and there is no postgres user")
        if shutil.which("runuser") is None:
            pytest.skip("needs runuser to run PostgreSQL as postgres")
    folder = Path(tempfile.mkdtemp(prefix="taverna-pg-"))
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    server = PrivatePostgres(Path(found[-1]).parent, folder)
    try:
        server.init()
        server.start()
    except (subprocess.SubprocessError, OSError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"a private PostgreSQL could not be started: {exc}")
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            if server.running():
                server._ctl("-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


class PrivateRedis:
    """A redis-server of one test's own, keeping nothing on disk: stopped, it comes back
    empty (as a Redis restarted without persistence does)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        import redis

        command = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(self.folder),
        ]  # fmt: skip
        with (self.folder / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        client = redis.Redis.from_url(self.url, socket_timeout=0.5)
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                if client.ping():
                    client.close()
                    return
            time.sleep(0.05)
        raise RuntimeError("the private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@contextlib.contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server")
    folder = Path(tempfile.mkdtemp(prefix="taverna-redis-"))
    server = PrivateRedis(folder)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def small_volume(megabytes: int) -> Iterator[Path]:
    """A tmpfs of `megabytes` mounted for the test (skipped where mounting is not allowed)."""
    folder = Path(tempfile.mkdtemp(prefix="taverna-volume-"))
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0700", "tmpfs", str(folder)],
        capture_output=True,
    ) if shutil.which("mount") else None  # fmt: skip
    if made is None or made.returncode != 0:
        folder.rmdir()
        pytest.skip("a small volume cannot be mounted here (needs root and tmpfs)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)
        with contextlib.suppress(OSError):
            folder.rmdir()


def fill(volume: Path) -> Path:
    """Fill `volume` to its last byte with one file; removing it frees the space."""
    filler = volume / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 65536, 4096, 512, 1):
            chunk = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    os.write(descriptor, chunk)
    finally:
        os.close(descriptor)
    return filler


def wal_emptied(data: Path) -> None:
    """Checkpoint the SQLite write-ahead log of the data folder `data` and cut it to nothing,
    so the server's next write needs new space (a log still holding earlier writes' pages
    would take it in place)."""
    database = sqlite3.connect(data / "taverna.db", timeout=10)
    try:
        database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        database.close()
