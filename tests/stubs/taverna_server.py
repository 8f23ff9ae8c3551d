"""A real `taverna serve` subprocess on a free port over one data folder, for the browser
tests and the benchmarks: started, stopped and started again, its memory read."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TavernaServer:
    """`taverna serve` on a free port; `ready_ms` is the last start's time to answering."""

    def __init__(
        self,
        data: Path,
        log: Path | None = None,
        *,
        start_timeout: float = 60,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.data = data
        self.args = args
        self.env = env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = log or data.parent / "serve.log"
        self.start_timeout = start_timeout
        self.ready_ms = 0.0

    def start(self) -> TavernaServer:
        command = [
            str(Path(sys.executable).parent / "taverna"),
            "serve",
            "--port",
            str(self.port),
            "--data",
            str(self.data),
            *self.args,
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        began = time.perf_counter()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"taverna serve exited:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200:
                    # imports, opening the store, preparing the recent chats
                    self.ready_ms = (time.perf_counter() - began) * 1000
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.kill()  # not left running unwatched after the caller gives up on it
        raise RuntimeError(f"taverna serve did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """End the process at once (SIGKILL): nothing of it runs after."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def api(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        response = httpx.request(method, f"{self.url}/api{path}", timeout=10, **kwargs)  # type: ignore[arg-type]
        response.raise_for_status()
        return response

    def memory_mb(self) -> tuple[float, float]:
        """(VmRSS, VmHWM) of the server process in MB."""
        assert self.process is not None
        values: dict[str, float] = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(rest.split()[0]) / 1024
        return values["VmRSS"], values["VmHWM"]
