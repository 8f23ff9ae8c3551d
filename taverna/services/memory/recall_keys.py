"""Whose key an embedding request carries.

The server's key (`$TAVERNA_EMBEDDINGS_KEY`) goes only to the endpoint the operator
configured (`$TAVERNA_EMBEDDINGS_URL`, OpenAI's API when unset): a person who names an
endpoint of their own in the recall settings never sends the server's key there. They
bring their own key, kept as connection keys are: in the data folder's secrets file,
encrypted with the server key. Its reference is made from the account's id (nothing in
the settings document points to it, so imported settings cannot borrow another
account's key), and it is kept with the site it was given for: an endpoint moved to
another site gets no key until it is given again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from taverna.errors import FormatError, NotFound
from taverna.services.connections import Secrets, check_key, mask

KEY_ENV = "TAVERNA_EMBEDDINGS_KEY"
URL_ENV = "TAVERNA_EMBEDDINGS_URL"
DEFAULT_URL = "https://api.openai.com/v1"


def operator_endpoint(environ: Mapping[str, str] | None = None) -> str:
    """The embeddings API root the operator chose for the server's key."""
    env = os.environ if environ is None else environ
    return (env.get(URL_ENV, "").strip() or DEFAULT_URL).rstrip("/")


def operator_key(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get(KEY_ENV, "")


def _site(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an http(s) URL; ("", "", None) when it is none."""
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        return "", "", None
    return scheme, (parts.hostname or "").lower(), port


def same_endpoint(url: str, other: str) -> bool:
    """Whether two API roots are the same endpoint: same site, same path."""
    if not url or not other:
        return False
    try:
        path, other_path = urlsplit(url.strip()).path, urlsplit(other.strip()).path
    except ValueError:
        return False
    return _site(url) == _site(other) and path.rstrip("/") == other_path.rstrip("/")


def site_of(url: str) -> str:
    """A URL's site as a person reads it: `https://host:443`."""
    scheme, host, port = _site(url)
    return f"{scheme}://{host}:{port}" if host else ""


class RecallKeys:
    """Each account's own key for the embeddings endpoint it names."""

    def __init__(self, folder: Path) -> None:
        self.secrets = Secrets(folder)

    @staticmethod
    def _ref(owner: str) -> str:
        return f"recall:{owner or '-'}"

    def _stored(self, owner: str) -> tuple[str, str]:
        """(site, key) stored for the account; ("", "") when none."""
        try:
            raw = self.secrets.get(self._ref(owner))
        except NotFound:
            return "", ""
        try:
            data = json.loads(raw)
            return str(data["site"]), str(data["key"])
        except (ValueError, KeyError, TypeError):
            return "", ""

    def put(self, owner: str, endpoint: str, key: str) -> None:
        """Keep `key` for the account's endpoint `endpoint` ("" removes the key)."""
        key = key.strip()
        if not key:
            self.remove(owner)
            return
        try:
            check_key(key)
        except FormatError:
            raise FormatError(
                "an API key holds only printable ASCII characters (no accents, no line breaks)",
                field="api_key",
                code="api_key_not_printable_ascii",
            ) from None
        site = site_of(endpoint)
        if not site:
            raise FormatError(
                "give the API's address (alt_endpoint_url) with its key: the key is sent "
                "to that site only",
                field="api_key",
                code="recall_key_needs_endpoint",
            )
        self.secrets.put(json.dumps({"site": site, "key": key}), self._ref(owner))

    def remove(self, owner: str) -> None:
        self.secrets.delete(self._ref(owner))

    def key_for(self, owner: str, endpoint: str) -> str:
        """The account's key when `endpoint` is on the site it was given for, else ""."""
        site, key = self._stored(owner)
        return key if key and site and site == site_of(endpoint) else ""

    def hint(self, owner: str, endpoint: str) -> str:
        """What a person is shown of their key: its last characters, "" when there is
        none for this endpoint's site."""
        return mask(self.key_for(owner, endpoint))
