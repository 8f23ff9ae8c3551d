"""The login limits count real clients: forwarded headers are believed only from the
proxies `trusted_proxies` names, uvicorn's own reading of them is off, and the admin sees
and lifts an address's lockout. A real `taverna serve --accounts` process, reached from
two loopback addresses: 127.0.0.1 (a client the server does not trust) and 127.0.0.2 (the
proxy it does)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.requests import HTTPConnection

from taverna.errors import FormatError
from taverna.server.client_address import client_address
from taverna.server.config import load_config, proxy_network
from tests.stubs.taverna_server import TavernaServer
from tests.support.served import serving

TAVERNA = str(Path(sys.executable).parent / "taverna")
ADMIN = ("root", "the admin's long secret")
PERSON = ("pia", "pia's long secret")
WRONG = "a wrong guess"
PROXY = "127.0.0.2"


def _add_user(data: Path, name: str, password: str, *extra: str) -> None:
    subprocess.run(
        [TAVERNA, "user", "add", name, "--data", str(data), *extra],
        input=password + "\n",
        text=True,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TavernaServer]:
    data = tmp_path_factory.mktemp("proxies") / "data"
    _add_user(data, *ADMIN, "--admin")
    _add_user(data, *PERSON)
    (data / "server.toml").write_text(f'trusted_proxies = ["{PROXY}"]\n')
    with serving(data, args=("--accounts",)) as started:
        yield started


def _client(server: TavernaServer, source: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=source)
    return httpx.Client(base_url=server.url, transport=transport, timeout=30)


def _login(client: httpx.Client, name: str, password: str, **headers: str) -> int:
    answer = client.post("/api/login", json={"name": name, "password": password}, headers=headers)
    return answer.status_code


def _admin(server: TavernaServer) -> httpx.Client:
    """The admin, logged in from a client address no test makes fail."""
    admin = _client(server, PROXY)
    answer = admin.post(
        "/api/login",
        json={"name": ADMIN[0], "password": ADMIN[1]},
        headers={"X-Forwarded-For": "198.18.0.1"},
    )
    assert answer.status_code == 200, answer.text
    admin.headers["X-CSRF-Token"] = answer.json()["csrf"]
    return admin


def _lockouts(admin: httpx.Client) -> dict[str, dict[str, int]]:
    answer = admin.get("/api/address-lockouts")
    assert answer.status_code == 200, answer.text
    return {item["address"]: item for item in answer.json()}


def test_addresses_an_untrusted_peer_makes_up_are_that_one_peer(server: TavernaServer) -> None:
    admin = _admin(server)
    spoofer = _client(server, "127.0.0.1")
    answers = [
        _login(spoofer, f"nobody-{i}", WRONG, **{"X-Forwarded-For": f"203.0.113.{i + 1}"})
        for i in range(60)
    ]
    # the peer's own limit (20 a window) holds, whatever addresses it names
    assert answers[:20] == [401] * 20
    assert set(answers[20:]) == {429}
    seen = _lockouts(admin)
    assert seen["127.0.0.1"]["failures"] == 20 and seen["127.0.0.1"]["locked_seconds"] > 0
    assert not any(address.startswith("203.0.113.") for address in seen)
    # the admin lifts the peer's lockout: it may try at once
    lifted = admin.delete("/api/address-lockouts/127.0.0.1")
    assert lifted.status_code == 200, lifted.text
    assert "127.0.0.1" not in {item["address"] for item in lifted.json()}
    assert _login(spoofer, *PERSON) == 200
    again = admin.delete("/api/address-lockouts/127.0.0.1")
    assert again.status_code == 404
    assert again.json()["detail"]["code"] == "no_failed_logins_from_address"


def test_a_spoofed_victim_address_does_not_lock_the_victim_out(server: TavernaServer) -> None:
    victim = "192.0.2.7"
    attacker = _client(server, "127.0.0.1")
    for i in range(20):
        spoofed = {"X-Forwarded-For": victim, "X-Real-IP": victim}
        assert _login(attacker, f"guess-{i}", WRONG, **spoofed) in (401, 429)
    # the victim, behind the proxy the server trusts, logs in
    proxy = _client(server, PROXY)
    assert _login(proxy, *PERSON, **{"X-Forwarded-For": victim}) == 200
    _admin(server).delete("/api/address-lockouts/127.0.0.1")


def test_clients_behind_a_trusted_proxy_are_limited_each_apart(server: TavernaServer) -> None:
    admin = _admin(server)
    proxy = _client(server, PROXY)
    noisy, quiet = "192.0.2.10", "192.0.2.11"
    answers = [
        # what the client wrote itself (left of the proxy's address) is not believed
        _login(proxy, f"someone-{i}", WRONG, **{"X-Forwarded-For": f"10.9.8.{i}, {noisy}"})
        for i in range(21)
    ]
    assert answers == [401] * 20 + [429]
    assert _login(proxy, *PERSON, **{"X-Forwarded-For": noisy}) == 429
    assert _login(proxy, *PERSON, **{"X-Forwarded-For": quiet}) == 200
    seen = _lockouts(admin)
    assert seen[noisy]["failures"] == 20 and seen[noisy]["locked_seconds"] > 0
    assert quiet not in seen and not any(a.startswith("10.9.8.") for a in seen)
    # only X-Real-IP (no X-Forwarded-For): that names the client
    assert _login(proxy, *PERSON, **{"X-Real-IP": noisy}) == 429
    assert admin.delete(f"/api/address-lockouts/{noisy}").status_code == 200
    assert _login(proxy, *PERSON, **{"X-Forwarded-For": noisy}) == 200


def test_only_an_admin_sees_or_lifts_address_lockouts(server: TavernaServer) -> None:
    person = _client(server, PROXY)
    answer = person.post(
        "/api/login",
        json={"name": PERSON[0], "password": PERSON[1]},
        headers={"X-Forwarded-For": "198.18.0.2"},
    )
    assert answer.status_code == 200
    person.headers["X-CSRF-Token"] = answer.json()["csrf"]
    assert person.get("/api/address-lockouts").status_code == 403
    assert person.delete("/api/address-lockouts/127.0.0.1").status_code == 403


# --------------------------------------------------------------- the rule itself


def _connection(peer: str, headers: list[tuple[str, str]]) -> HTTPConnection:
    scope = {
        "type": "http",
        "client": (peer, 50000) if peer else None,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
    }
    return HTTPConnection(scope)


PROXIES = (proxy_network("127.0.0.1"), proxy_network("10.0.0.0/8"), proxy_network("::1"))


@pytest.mark.parametrize(
    ("peer", "headers", "expected"),
    [
        # no proxies trusted: the peer, whatever it says
        ("192.0.2.1", [("X-Forwarded-For", "203.0.113.1")], "192.0.2.1"),
        # a trusted peer: the right-most address that is not a trusted proxy
        ("127.0.0.1", [("X-Forwarded-For", "203.0.113.1, 198.51.100.2, 10.1.2.3")], "198.51.100.2"),
        # several headers read as one chain, in order
        (
            "127.0.0.1",
            [("X-Forwarded-For", "203.0.113.1"), ("X-Forwarded-For", "10.0.0.5")],
            "203.0.113.1",
        ),
        # nothing but trusted proxies: the farthest of them
        ("127.0.0.1", [("X-Forwarded-For", "10.0.0.9, 10.0.0.5")], "10.0.0.9"),
        # something not an address ends the chain at the last proxy that passed it on
        ("127.0.0.1", [("X-Forwarded-For", "203.0.113.1, junk, 10.0.0.5")], "10.0.0.5"),
        # X-Real-IP only without X-Forwarded-For
        ("127.0.0.1", [("X-Real-IP", "203.0.113.8")], "203.0.113.8"),
        (
            "127.0.0.1",
            [("X-Real-IP", "203.0.113.8"), ("X-Forwarded-For", "203.0.113.9")],
            "203.0.113.9",
        ),
        # ports and brackets as some proxies write them; IPv4 mapped into IPv6
        ("::1", [("X-Forwarded-For", "[2001:db8::7]:4711")], "2001:db8::7"),
        ("127.0.0.1", [("X-Forwarded-For", "203.0.113.4:5123")], "203.0.113.4"),
        ("::ffff:127.0.0.1", [("X-Forwarded-For", "::ffff:203.0.113.6")], "203.0.113.6"),
        # a trusted peer with no header is the client itself
        ("127.0.0.1", [], "127.0.0.1"),
    ],
)
def test_the_client_address_rule(peer: str, headers: list[tuple[str, str]], expected: str) -> None:
    proxies = () if peer == "192.0.2.1" else PROXIES
    assert client_address(_connection(peer, headers), proxies) == expected


def test_an_untrusted_peer_is_itself_even_with_proxies_configured() -> None:
    spoofed = [("X-Forwarded-For", "127.0.0.1"), ("X-Real-IP", "127.0.0.1")]
    assert client_address(_connection("198.51.100.9", spoofed), PROXIES) == "198.51.100.9"
    assert client_address(_connection("", spoofed), PROXIES) == ""


def test_trusted_proxies_in_the_config(tmp_path: Path) -> None:
    (tmp_path / "server.toml").write_text(
        'trusted_proxies = ["127.0.0.1", "10.0.0.0/8", "[::1]"]\n'
    )
    assert load_config(None, tmp_path).trusted_proxies == ("127.0.0.1/32", "10.0.0.0/8", "::1/128")
    assert load_config(None, tmp_path / "none").trusted_proxies == ()
    (tmp_path / "server.toml").write_text('trusted_proxies = ["127.0.0.1", "my-proxy"]\n')
    with pytest.raises(FormatError) as raised:
        load_config(None, tmp_path)
    assert raised.value.field == "trusted_proxies" and "my-proxy" in str(raised.value)


def test_a_wrong_trusted_proxy_stops_the_start_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "server.toml").write_text('trusted_proxies = "127.0.0.1"\n')
    done = subprocess.run(
        [TAVERNA, "serve", "--port", "1", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "server.toml" in done.stderr and "trusted_proxies" in done.stderr
    (tmp_path / "server.toml").unlink()
    done = subprocess.run(
        [TAVERNA, "serve", "--port", "1", "--data", str(tmp_path), "--trust-proxy", "proxy.lan"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--trust-proxy" in done.stderr and "proxy.lan" in done.stderr
