"""The outbound policy: which addresses a policed request may reach, checked on the
address connected to (after the name was resolved), and failures that say what failed
without quoting a peer that does not speak HTTP."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import httpx
import pytest

from taverna.errors import ProviderError
from taverna.providers.builders import stream_parser
from taverna.providers.events import StreamError
from taverna.providers.outbound import (
    Allowed,
    OutboundPolicy,
    OutboundRefused,
    PolicedConnector,
    is_public,
)
from taverna.providers.request import Api, HttpRequest
from taverna.providers.transport import fetch_json, stream_events
from tests.stubs.model_server import Reply, start_stub

BANNER = b"SSH-2.0-OpenSSH_9.6 db-secret-banner-31337\r\n"
STRICT = OutboundPolicy()


@contextmanager
def banner_server(banner: bytes = BANNER) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that greets every connection with `banner` (as a
    database or SSH server does), reads what it is sent and closes; its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                peer, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            with peer:
                peer.sendall(banner)
                peer.settimeout(0.5)
                try:
                    peer.recv(65536)
                    peer.sendall(b"\x00\x00\x00\x0cprotocol error")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.parametrize(
    "text",
    [
        "127.0.0.1",
        "127.0.0.1:5001",
        "10.0.0.0/8",
        "10.0.0.0/8:443",
        "::1",
        "[::1]:8080",
        "[fd00::/8]",
    ],
)
def test_allow_entries_are_read(text: str) -> None:
    Allowed.parse(text)


@pytest.mark.parametrize("text", ["localhost", "127.0.0.1:http", "1.2.3.4:70000", "[::1", "x/8"])
def test_a_wrong_allow_entry_is_named(text: str) -> None:
    with pytest.raises(ValueError, match=r"127\.0\.0\.1:5001|port|not an IP|does not close"):
        Allowed.parse(text)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.0.0.2",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # a cloud's metadata service
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    ],
)
def test_internal_addresses_are_refused_and_public_ones_admitted(address: str) -> None:
    assert not STRICT.admits(address, 80)
    assert STRICT.admits("93.184.215.14", 443)
    assert STRICT.admits("2606:4700::6810:84e5", 443)


def test_the_allow_list_admits_what_it_names_and_no_more() -> None:
    policy = OutboundPolicy.of(["127.0.0.1:5001", "10.0.0.0/8"])
    assert policy.admits("127.0.0.1", 5001)
    assert not policy.admits("127.0.0.1", 5002)
    assert policy.admits("10.9.8.7", 22)
    assert not policy.admits("192.168.0.1", 5001)
    assert not is_public(__import__("ipaddress").ip_address("::ffff:10.0.0.1"))


def test_this_machines_own_addresses_are_refused() -> None:
    own = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    for address in own:
        assert not STRICT.admits(str(address), 80)


class Rebinding(aiohttp.abc.AbstractResolver):
    """A name that resolves to an admitted address first and to a refused one after."""

    def __init__(self) -> None:
        self.asked = 0

    async def resolve(self, host: str, port: int = 0, family: Any = socket.AF_INET) -> Any:
        self.asked += 1
        address = "127.0.0.1" if self.asked == 1 else "127.0.0.2"
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": family,
                "proto": 0,
                "flags": 0,
            }
        ]

    async def close(self) -> None:
        pass


def test_a_name_that_rebinds_is_checked_at_each_connection_after_dns() -> None:
    """The address a connection is opened to is the one checked: a name admitted once
    and resolved to another address later is refused then, before connecting."""
    with start_stub() as stub:
        port = int(stub.base_url("openai").split(":")[2].split("/")[0])
        policy = OutboundPolicy.of([f"127.0.0.1:{port}"])

        async def run() -> list[str]:
            resolver = Rebinding()
            connector = PolicedConnector(
                policy, resolver=resolver, use_dns_cache=False, force_close=True
            )
            said = []
            async with aiohttp.ClientSession(connector=connector) as session:
                for _ in range(2):
                    try:
                        async with session.get(f"http://rebind.test:{port}/v1/models") as answer:
                            said.append(str(answer.status))
                    except aiohttp.ClientConnectorError as exc:
                        said.append(type(exc.os_error).__name__)
            assert resolver.asked == 2
            return said

        assert asyncio.run(run()) == ["200", OutboundRefused.__name__]


def _request(url: str) -> HttpRequest:
    body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    return HttpRequest(url, body)


async def _errors(url: str, policy: OutboundPolicy | None) -> list[StreamError]:
    events = [
        e async for e in stream_events(_request(url), stream_parser(Api.OPENAI), policy=policy)
    ]
    return [e for e in events if isinstance(e, StreamError)]


def test_a_stream_to_loopback_under_the_policy_says_why_and_sends_nothing() -> None:
    with start_stub() as stub:
        stub.script(Reply(tokens=["hi"]))
        url = f"{stub.base_url('openai')}/chat/completions"
        errors = asyncio.run(_errors(url, STRICT))
        assert len(errors) == 1 and "not sent" in errors[0].message
        assert "outbound_allow" in errors[0].message
        assert stub.requests == []
        named = url.replace("127.0.0.1", "localhost")
        assert "not sent" in asyncio.run(_errors(named, STRICT))[0].message
        assert stub.requests == []
        allowed = OutboundPolicy.of([f"127.0.0.1:{url.split(':')[2].split('/')[0]}"])
        assert asyncio.run(_errors(url, allowed)) == []
        assert len(stub.requests) == 1


def test_a_peer_that_does_not_speak_http_is_named_not_quoted() -> None:
    with banner_server() as port:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        errors = asyncio.run(_errors(url, None))
        assert len(errors) == 1
        message = errors[0].message
        assert "secret-banner" not in message and "SSH" not in message, message
        assert "HTTP" in message or "closed the connection" in message, message
        with pytest.raises(ProviderError) as listed:
            asyncio.run(
                fetch_json(HttpRequest(f"http://127.0.0.1:{port}/v1/models", {}, method="GET"))
            )
        assert "secret-banner" not in str(listed.value) and "SSH" not in str(listed.value)
        assert "secret-banner" not in str(listed.value.params)


def test_a_listing_under_the_policy_is_refused_without_connecting() -> None:
    with start_stub() as stub:
        request = HttpRequest(f"{stub.base_url('openai')}/models", {}, method="GET")
        with pytest.raises(ProviderError, match="not sent"):
            asyncio.run(fetch_json(request, policy=STRICT))
        assert stub.requests == []


def test_a_refused_port_and_an_unknown_name_are_said_as_such() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    errors = asyncio.run(_errors(f"http://127.0.0.1:{port}/v1/chat/completions", None))
    assert "refused the connection" in errors[0].message
    errors = asyncio.run(_errors("http://no-such-host.invalid/v1/chat/completions", None))
    assert "DNS" in errors[0].message


def test_a_blocking_client_under_the_policy_is_refused_too() -> None:
    from taverna.providers.outbound import policed_transport
    from taverna.providers.transport import _certificates

    with (
        start_stub() as stub,
        httpx.Client(transport=policed_transport(STRICT, _certificates())) as client,
    ):
        with pytest.raises(OutboundRefused):
            client.get(f"{stub.base_url('openai')}/models")
        assert stub.requests == []


def test_tls_to_a_port_that_does_not_speak_it_is_said_as_tls() -> None:
    with start_stub() as stub:
        url = stub.base_url("openai").replace("http://", "https://") + "/chat/completions"
        errors = asyncio.run(_errors(url, None))
        assert "TLS" in errors[0].message, errors[0].message
        with pytest.raises(ProviderError, match="TLS"):
            asyncio.run(fetch_json(HttpRequest(url, {}, method="GET")))


def test_a_public_address_of_this_machine_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server on a public address reaches itself there: that address is its own, read
    from its interfaces (not from binding, which some hosts allow for any address)."""
    import ipaddress
    import time

    from taverna.providers import outbound

    mine = ipaddress.ip_address("93.184.215.14")
    monkeypatch.setattr(outbound, "_own", [(time.monotonic(), frozenset({mine}))])
    assert not STRICT.admits("93.184.215.14", 443)
    assert STRICT.admits("93.184.215.15", 443)
