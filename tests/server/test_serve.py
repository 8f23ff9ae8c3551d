"""`taverna serve` on an address other than loopback: refused without --insecure; with it,
the Host check still holds to the names the operator allowed, and the config's limits
and key variables apply. A real `taverna serve` process each time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from taverna.server.config import host_names, is_loopback
from tests.stubs.taverna_server import TavernaServer, free_port

TAVERNA = str(Path(sys.executable).parent / "taverna")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20"])
def test_a_non_loopback_address_is_refused_without_insecure(tmp_path: Path, host: str) -> None:
    done = subprocess.run(
        [TAVERNA, "serve", "--host", host, "--port", str(free_port()), "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"refusing to listen on {host}" in done.stderr
    assert "--insecure" in done.stderr
    assert "running" not in done.stdout


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.org", ""))
    assert host_names("0.0.0.0", ["Taverna.Home.Arpa"]) == {
        "127.0.0.1",
        "localhost",
        "::1",
        "taverna.home.arpa",
    }
    assert "192.168.1.20" in host_names("192.168.1.20", [])


def test_insecure_still_checks_the_host_and_takes_the_config(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "server.toml").write_text(
        'allowed_hosts = ["taverna.home.arpa"]\nkey_env = ["TAVERNA_TEST_ALLOWED_KEY"]\n'
        "[limits]\nbody_mib = 0.5\n"
    )
    server = TavernaServer(
        data, args=("--host", "0.0.0.0", "--insecure", "--allow-host", "lan-box")
    ).start()
    try:
        url = f"{server.url}/api/health"

        def health(host: str) -> int:
            return httpx.get(url, headers={"Host": host}, timeout=10).status_code

        assert health(f"127.0.0.1:{server.port}") == 200
        assert health(f"taverna.home.arpa:{server.port}") == 200  # from the config
        assert health(f"lan-box:{server.port}") == 200  # from --allow-host
        assert health(f"evil.example:{server.port}") == 400
        assert health(f"192.168.1.77:{server.port}") == 400
        # key_env names only what the config allows.
        body = {"name": "c", "api": "openai", "url": "http://127.0.0.1:9/v1"}
        refused = httpx.post(
            f"{server.url}/api/connections", json={**body, "key_env": "HOME"}, timeout=10
        )
        assert refused.status_code == 422
        assert refused.json()["detail"]["field"] == "key_env"
        allowed = httpx.post(
            f"{server.url}/api/connections",
            json={**body, "key_env": "TAVERNA_TEST_ALLOWED_KEY"},
            timeout=10,
        )
        assert allowed.status_code == 201, allowed.text
        # The config's body limit: half a MiB.
        big = httpx.post(
            f"{server.url}/api/personas",
            json={"name": "p", "description": "x" * 600_000},
            timeout=10,
        )
        assert big.status_code == 413
        assert "512 KiB" in big.json()["detail"]["message"]
    finally:
        server.stop()
    log = server.log.read_text()
    assert "--insecure" in log and "taverna.home.arpa" in log and "lan-box" in log


def test_a_bad_config_stops_the_start_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "server.toml").write_text("[limits]\nbody_mib = -1\n")
    done = subprocess.run(
        [TAVERNA, "serve", "--port", str(free_port()), "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "server.toml" in done.stderr and "limits.body_mib" in done.stderr
