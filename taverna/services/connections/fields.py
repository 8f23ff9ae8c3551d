"""The fields of a connection as a person gives them, checked and settled before it is stored.

A URL must be one a request can go to, a key one an HTTP header can carry; a source by
name (`sources.py`) brings its URL, post-processing and options. A key is bound to the
origin its requests go to (`origin`), so a connection moved to another site does not
take its key along.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from taverna.errors import FormatError, TavernaError
from taverna.providers import sources
from taverna.providers.registry import provider
from taverna.providers.request import Api, PostProcessing


@dataclass(frozen=True, slots=True)
class Settled:
    """A connection's API, URL, post-processing and options once a named source has
    filled in what it brings."""

    api: Api
    url: str
    post_processing: PostProcessing
    options: dict[str, Any]


def connection_name(name: str) -> str:
    """A connection's name without its outer spaces; an empty one is refused."""
    name = name.strip()
    if not name:
        raise TavernaError("a connection needs a name", field="name", code="connection_needs_name")
    return name


def settle(
    api: Api | str,
    url: str,
    post_processing: PostProcessing | str,
    options: Mapping[str, Any] | None,
) -> Settled:
    """The fields as given, with a source by name bringing its URL, post-processing and
    options where the person gave none (FormatError for a URL no request can go to)."""
    chosen, named = (api, None) if isinstance(api, Api) else sources.resolve(api)
    mode = (
        post_processing
        if isinstance(post_processing, PostProcessing)
        else PostProcessing.parse(post_processing)
    )
    url = check_url(url.strip())
    if named is not None:
        url = url or named.default_url
        mode = mode if mode is not PostProcessing.NONE else named.post_processing
        options = {**named.options(), **(options or {})}
    return Settled(chosen, url, mode, dict(options or {}))


def check_url(url: str) -> str:
    """A connection's base URL as given, or FormatError (field `url`) when it is no
    http(s) URL a request can go to."""
    if not url:
        return url
    if any(ord(c) < 0x21 or c == "\x7f" for c in url):
        raise FormatError(
            "the URL holds a space or a control character",
            field="url",
            code="url_holds_space_or_control",
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError as exc:
        raise FormatError(
            f"not a URL: {exc}", field="url", code="not_url", params={"exc": str(exc)}
        ) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise FormatError(
            "the URL must start with http:// or https:// and name a host",
            field="url",
            code="url_must_start_with_http",
        )
    return url


def check_key(key: str) -> str:
    """An API key as given, or FormatError (field `key`) when an HTTP header cannot carry it."""
    if not key.isascii() or any(ord(c) < 0x20 or c == "\x7f" for c in key):
        raise FormatError(
            "an API key holds only printable ASCII characters (no accents, no line breaks)",
            field="key",
            code="api_key_not_printable_ascii",
        )
    return key


def origin(api: Api, url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) that a connection's requests go to: its URL's, or its API's own."""
    parts = urlsplit(provider(api).models_request(url, "").url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:  # a URL stored before URLs were checked: no origin matches it
        return scheme, url, None
    return scheme, (parts.hostname or "").lower(), port


def mask(key: str) -> str:
    """A key as shown to a person: its last four characters only."""
    if not key:
        return ""
    return f"…{key[-4:]}" if len(key) > 8 else "…"


def shown_origin(api: Api, url: str) -> str:
    """An origin as a person reads it in a message: `scheme://host:port`."""
    scheme, host, port = origin(api, url)
    return f"{scheme}://{host}:{port}"


def cache_depth(value: Any) -> int:
    """A connection's `caching_at_depth` option as a depth: a whole number from 0, or -1
    (no cache breakpoint in the history) for anything else, as SillyTavern reads
    `claude.cachingAtDepth`."""
    if isinstance(value, bool):
        return -1
    try:
        depth = int(value)
    except (TypeError, ValueError):
        return -1
    return depth if depth >= 0 and str(value).strip().lstrip("+").isdigit() else -1
