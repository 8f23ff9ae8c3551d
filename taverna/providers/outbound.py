"""Where a request to a model or an embeddings API may go: the outbound policy.

With accounts, a person who is not an admin names the URLs of their connections and of
their embeddings endpoint; the server must not become their way into the networks it sits
in. Their requests may reach only public addresses: not loopback, private, link-local,
shared, reserved or multicast ones, nor the addresses of this machine, unless the
operator allows them (`outbound_allow` in `server.toml`: addresses or networks, each
with a port or not).

The check is made on the address a connection is opened to, after the name was resolved
(aiohttp's connector and httpcore's network backend below), so a name that resolves to a
public address for a check and to an internal one for the request (DNS rebinding) does
not pass: the address checked is the address connected to. No request is ever made
through the environment's proxy under the policy (the proxy would choose the address).

`describe_failure` words a failed request by what failed (DNS, TLS, refused, the policy,
no HTTP answer) without quoting what a peer that does not speak HTTP sent.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import socket
import ssl
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import httpcore

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundRefused(OSError):
    """A request's address is outside the outbound policy."""


@dataclass(frozen=True, slots=True)
class Allowed:
    """One entry of `outbound_allow`: a network (a single address is a network of one),
    and a port, or every port."""

    network: Network
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> Allowed:
        """`127.0.0.1`, `127.0.0.1:5001`, `10.0.0.0/8`, `10.0.0.0/8:443`, `::1`, `[::1]:8080`,
        `[fd00::/8]:443`; ValueError naming the entry otherwise."""
        entry = text.strip()
        host, port = entry, ""
        if entry.startswith("["):
            host, closed, rest = entry[1:].partition("]")
            if not closed:
                raise ValueError(f"{text!r} opens a [ it does not close")
            if rest:
                if not rest.startswith(":"):
                    raise ValueError(f"{text!r} is not an address, a network or either with :port")
                port = rest[1:]
        elif entry.count(":") == 1:
            host, port = entry.split(":")
        try:
            network = ipaddress.ip_network(host, strict=False)
            number = int(port) if port else None
        except ValueError:
            raise ValueError(
                f"{text!r} is not an IP address or network with an optional port "
                "(such as 127.0.0.1:5001, 10.0.0.0/8 or [::1]:8080)"
            ) from None
        if number is not None and not 0 < number < 65536:
            raise ValueError(f"{text!r}: the port must be from 1 to 65535")
        return cls(network, number)

    def admits(self, address: Address, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        return address.version == self.network.version and address in self.network


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64's well-known prefix)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: Address) -> bool:
    """Whether an address is of the public internet (not loopback, private, link-local,
    shared, reserved, unspecified or multicast)."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = _embedded_v4(address)
        if inner is not None:
            return is_public(inner)
    return address.is_global and not address.is_multicast


# This machine's addresses are read again after this many seconds (interfaces change).
OWN_SECONDS = 30.0
_own: list[tuple[float, frozenset[Address] | None]] = []


def _linux_addresses() -> frozenset[Address] | None:
    """The addresses of this machine's interfaces, from Linux's /proc (None elsewhere)."""
    try:
        trie = Path("/proc/net/fib_trie").read_text(encoding="ascii").splitlines()
        inet6 = Path("/proc/net/if_inet6").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    found: set[Address] = set()
    for before, line in itertools.pairwise(trie):
        # "|-- 192.0.2.2" followed by "/32 host LOCAL": an address of this machine
        if line.strip().startswith("/32 host LOCAL") and "-- " in before:
            with contextlib.suppress(ValueError):
                found.add(ipaddress.IPv4Address(before.split("-- ", 1)[1].strip()))
    for line in inet6:
        with contextlib.suppress(ValueError, IndexError):
            found.add(ipaddress.IPv6Address(int(line.split()[0], 16)))
    return frozenset(found)


def is_own(address: Address) -> bool:
    """Whether the address is one of this machine's own: one of its interfaces' (Linux),
    else one a socket can be bound to (where that is not allowed for other addresses)."""
    now = time.monotonic()
    if not _own or now - _own[0][0] > OWN_SECONDS:
        _own[:] = [(now, _linux_addresses())]
    known = _own[0][1]
    if known is not None:
        return address in known
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(address), 0))
    except OSError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class OutboundPolicy:
    """Public addresses, and those the operator allowed."""

    allowed: tuple[Allowed, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> OutboundPolicy:
        return cls(tuple(Allowed.parse(entry) for entry in entries))

    def admits(self, address: str, port: int) -> bool:
        try:
            parsed = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        if any(entry.admits(parsed, port) for entry in self.allowed):
            return True
        return is_public(parsed) and not is_own(parsed)

    def check(self, host: str, addresses: Sequence[str], port: int) -> list[str]:
        """The addresses `host` resolved to that the policy admits; OutboundRefused
        naming the host when there is none."""
        admitted = [address for address in addresses if self.admits(address, port)]
        if not admitted:
            raise OutboundRefused(
                f"{host} leads to an address this server does not reach for you (a local, "
                "private or internal one; the operator may allow it with outbound_allow "
                "in server.toml)"
            )
        return admitted


# ------------------------------------------------------------------ aiohttp


class PolicedConnector(aiohttp.TCPConnector):
    """aiohttp's connector that opens connections only to addresses the policy admits.
    The check is on the resolved addresses (an address written in the URL included),
    which are the ones connected to."""

    def __init__(self, policy: OutboundPolicy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.policy = policy

    async def _resolve_host(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        found = await super()._resolve_host(host, port, *args, **kwargs)
        admitted = set(self.policy.check(host, [str(r["host"]) for r in found], port))
        return [r for r in found if str(r["host"]) in admitted]


# ------------------------------------------------------------------ httpx (httpcore)


async def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise httpcore.ConnectError(f"the name {host} could not be resolved (DNS)") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _resolve_now(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise httpcore.ConnectError(f"the name {host} could not be resolved (DNS)") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class PolicedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend that resolves a name itself and connects only to an
    address the policy admits (TLS still checks the certificate against the name)."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self.policy = policy
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        admitted = self.policy.check(host, await _resolve(host, port), port)
        failure: Exception | None = None
        for address in admitted:
            try:
                return await self.inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise OutboundRefused("a local socket is not reached under the outbound policy")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class PolicedSyncBackend(httpcore.NetworkBackend):
    """`PolicedBackend` for blocking clients (the embeddings requests)."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self.policy = policy
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        admitted = self.policy.check(host, _resolve_now(host, port), port)
        failure: Exception | None = None
        for address in admitted:
            try:
                return self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise OutboundRefused("a local socket is not reached under the outbound policy")


def policed_async_transport(policy: OutboundPolicy, tls: ssl.SSLContext) -> Any:
    """An httpx transport whose connections go only where the policy admits."""
    import httpx

    transport = httpx.AsyncHTTPTransport(verify=tls)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=tls, network_backend=PolicedBackend(policy)
    )
    return transport


def policed_transport(policy: OutboundPolicy, tls: ssl.SSLContext) -> Any:
    """A blocking httpx transport whose connections go only where the policy admits."""
    import httpx

    transport = httpx.HTTPTransport(verify=tls)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=tls, network_backend=PolicedSyncBackend(policy)
    )
    return transport


# ------------------------------------------------------------------ what failed


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        os_error = getattr(current, "os_error", None)
        current = current.__cause__ or current.__context__ or os_error
    return seen


def describe_failure(exc: BaseException, url: str) -> str:
    """What failed in a request to `url`, in a person's words: the policy, DNS, TLS, a
    refused or reset connection, an answer that is not HTTP. Never what the peer sent:
    a server that does not speak HTTP (a database, a mail server) is not quoted."""
    chain = _chain(exc)
    refused = next((e for e in chain if isinstance(e, OutboundRefused)), None)
    if refused is not None:
        return f"the request to {url} was not sent: {refused.strerror or refused}"
    names = {type(e).__name__ for e in chain}
    if any(isinstance(e, socket.gaierror) for e in chain) or "ClientConnectorDNSError" in names:
        return f"the name in {url} could not be resolved (DNS)"
    if any(
        "could not be resolved (DNS)" in str(e)
        for e in chain
        if isinstance(e, httpcore.ConnectError)
    ):
        return f"the name in {url} could not be resolved (DNS)"
    if any(isinstance(e, ssl.SSLCertVerificationError) for e in chain):
        return f"the TLS certificate of {url} was not accepted (not trusted or not for this name)"
    if any(isinstance(e, ssl.SSLError) for e in chain) or "ClientSSLError" in names:
        return f"the TLS handshake with {url} failed (is it https on a port that speaks it?)"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return f"{url} refused the connection (nothing listens there?)"
    if any(isinstance(e, ConnectionResetError) for e in chain):
        return f"{url} reset the connection"
    if any(isinstance(e, TimeoutError) for e in chain) or "ConnectTimeout" in names:
        return f"timed out connecting to {url}"
    if names & {
        "RemoteProtocolError",
        "ClientResponseError",
        "BadStatusLine",
        "LocalProtocolError",
    }:
        return f"{url} did not answer in HTTP"
    if "ServerDisconnectedError" in names:
        return f"{url} closed the connection without an answer"
    if any(isinstance(e, OSError) for e in chain):
        error = next(e for e in chain if isinstance(e, OSError))
        return f"could not connect to {url}: {error.strerror or type(error).__name__}"
    return f"the request to {url} failed ({type(exc).__name__})"
