"""The address of the client a request comes from, for the login limits.

The peer that opened the connection is the client, unless it is one of the proxies the
operator trusts (`trusted_proxies` in server.toml). Only then are the forwarded headers
read: `X-Forwarded-For` from its right end (each proxy appends the address it was
reached from), skipping the trusted proxies, and the first address that is not one is
the client; without that header, `X-Real-IP`. Anything further left in the chain was
written by the client itself and is never believed. uvicorn's own reading of these
headers is switched off (`taverna serve` runs it with proxy_headers=False), so this rule
alone decides.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from starlette.requests import HTTPConnection

from taverna.server.config import ProxyNetwork

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _parsed(text: str) -> Address | None:
    text = text.strip().strip('"')
    if text.startswith("["):  # "[2001:db8::1]" or "[2001:db8::1]:4711"
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # "192.0.2.1:4711"
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address: Address, proxies: Sequence[ProxyNetwork]) -> bool:
    return any(address.version == net.version and address in net for net in proxies)


def forwarded_chain(connection: HTTPConnection) -> list[str]:
    """The addresses the forwarded headers name, the client's first, the last proxy's
    last: every `X-Forwarded-For` header in order, else `X-Real-IP`."""
    chain = [
        hop.strip()
        for header in connection.headers.getlist("x-forwarded-for")
        for hop in header.split(",")
        if hop.strip()
    ]
    if not chain:
        real = connection.headers.get("x-real-ip", "").strip()
        chain = [real] if real else []
    return chain


def client_address(connection: HTTPConnection, proxies: Sequence[ProxyNetwork]) -> str:
    """The address of the client behind `connection` (see the module's note): the peer's,
    or, when the peer is a trusted proxy, the right-most untrusted address its headers
    name. "" when the server does not know the peer (an in-process call)."""
    peer_text = connection.client.host if connection.client else ""
    peer = _parsed(peer_text)
    if peer is None:
        return peer_text
    if not proxies or not _trusted(peer, proxies):
        return str(peer)
    address = peer
    for hop in reversed(forwarded_chain(connection)):
        found = _parsed(hop)
        if found is None:
            # not an address: no proxy of ours wrote it, so the one that passed it on
            # is as far as the chain can be believed
            break
        address = found
        if not _trusted(found, proxies):
            break
    return str(address)
