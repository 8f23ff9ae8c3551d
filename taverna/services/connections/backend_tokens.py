"""Counting tokens as the backend counts them: SillyTavern's API tokenizers (current API,
KoboldCpp, text-generation-webui) ask the Text Completion server to tokenize.

A `BackendTokenizer` asks the connection's server (`providers/tokenize.py`), remembers each
text's count (per server and model, for the life of the process), and asks for many texts
at once (`prime`: the requests run side by side). Where the server does not answer, a text
is counted with SillyTavern's estimate and the tokenizer says so (`failed`), so the ledger
can; such a count is never remembered as the server's.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from threading import Lock
from urllib.parse import urlsplit

from taverna.engine.tokens.base import EstimateTokenizer
from taverna.providers.request import Api
from taverna.providers.tokenize import TokenizeEndpoint, endpoint_for

# SillyTavern's tokenizer ids that mean "ask the API" (`power_user.tokenizer`): the current
# API's, text-generation-webui's, KoboldCpp's
API_TOKENIZERS = frozenset({6, 9, 10})
# How long one count may take before the estimate stands in
TIMEOUT_SECONDS = 5.0
# Requests side by side when many texts are counted at once
PARALLEL = 8
# Texts remembered per server and model
KEPT = 20_000
_ESTIMATE = EstimateTokenizer()


@dataclass
class _Counts:
    """The counts one server gave, least recently used first."""

    counts: OrderedDict[str, int] = field(default_factory=OrderedDict)
    lock: Lock = field(default_factory=Lock)

    def get(self, text: str) -> int | None:
        with self.lock:
            found = self.counts.get(text)
            if found is not None:
                self.counts.move_to_end(text)
            return found

    def put(self, text: str, count: int) -> None:
        with self.lock:
            self.counts[text] = count
            while len(self.counts) > KEPT:
                self.counts.popitem(last=False)


_SERVERS: dict[tuple[str, str, str], _Counts] = {}
_SERVERS_LOCK = Lock()


def _counts_of(kind: str, url: str, model: str) -> _Counts:
    with _SERVERS_LOCK:
        return _SERVERS.setdefault((kind, url, model), _Counts())


class BackendTokenizer:
    """A Text Completion server's own tokenizer, as the engine's `Tokenizer`.

    `name` names the server (the count caches key on it); `exact` is true; `failed` says
    the server did not answer some count (the estimate stood in), `asked` how many
    requests went out.
    """

    def __init__(self, endpoint: TokenizeEndpoint, base_url: str, key: str, model: str) -> None:
        self.endpoint = endpoint
        self.base_url, self.key, self.model = base_url, key, model
        origin = urlsplit(base_url).netloc or base_url
        self.name = f"api:{endpoint.kind}@{origin}/{model}"
        self.exact = True
        self.failed = ""
        self.asked = 0
        self._counts = _counts_of(endpoint.kind, base_url, model)

    @property
    def label(self) -> str:
        """The tokenizer as the ledger names it: the backend's, or the estimate that stood in."""
        return "estimate" if self.failed else f"api:{self.endpoint.kind}"

    def count(self, text: str) -> int:
        """`text`'s tokens as the server counts them (the estimate where it does not answer)."""
        if not text:
            return 0
        found = self._counts.get(text)
        if found is not None:
            return found
        asked = self._ask(text)
        return asked if asked is not None else _ESTIMATE.count(text)

    def prime(self, texts: Iterable[str]) -> None:
        """Count many texts at once (those not counted before), side by side."""
        wanted = list(dict.fromkeys(t for t in texts if t and self._counts.get(t) is None))
        if not wanted or self.failed:
            return
        if len(wanted) == 1:
            self._ask(wanted[0])
            return
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(wanted))) as pool:
            list(pool.map(self._ask, wanted))

    def _ask(self, text: str) -> int | None:
        """One count from the server, remembered; None (and `failed` set) without one."""
        if self.failed:
            return None
        request = self.endpoint.request(self.base_url, self.key, self.model, text)
        self.asked += 1
        try:
            sent = urllib.request.Request(
                request.url,
                data=json.dumps(dict(request.body)).encode("utf-8"),
                headers=dict(request.headers),
                method="POST",
            )
            with urllib.request.urlopen(sent, timeout=TIMEOUT_SECONDS) as answer:
                count = self.endpoint.count(json.loads(answer.read()))
        except (OSError, ValueError, urllib.error.URLError) as exc:
            self.failed = f"{type(exc).__name__}: {exc}"[:200]
            return None
        if count is None:
            self.failed = "the answer said no count"
            return None
        self._counts.put(text, count)
        return count


def backend_tokenizer(
    api: Api, source: str, base_url: str, key: str, model: str
) -> BackendTokenizer | None:
    """The tokenizer of a connection's server, where its backend has a tokenize endpoint."""
    if api is Api.LOCAL or not base_url:
        return None
    endpoint = endpoint_for(api, source)
    return BackendTokenizer(endpoint, base_url, key, model) if endpoint else None
