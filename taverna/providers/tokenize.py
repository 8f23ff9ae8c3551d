"""Asking a Text Completion backend how many tokens a text is, with its own tokenizer.

Each backend SillyTavern's API tokenizers reach has its endpoint: one text a request, its
count read from the answer (`count` is None for an answer that says none).

| backend | request | count |
|---|---|---|
| KoboldCpp | `POST /api/extra/tokencount {"prompt"}` | `value` |
| text-generation-webui | `POST /v1/internal/token-count {"text"}` | `length` |
| llama.cpp | `POST /tokenize {"content"}` | `tokens` (their number) |
| vLLM | `POST /tokenize {"model", "prompt"}` | `count` |
| Aphrodite | `POST /v1/tokenize {"model", "prompt"}` | `value` |
| TabbyAPI | `POST /v1/token/encode {"text"}` | `length` |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from taverna.providers.request import Api, HttpRequest, bearer_headers


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _listed(answer: Mapping[str, Any], key: str) -> int | None:
    found = answer.get(key)
    return len(found) if isinstance(found, list) else None


@dataclass(frozen=True, slots=True)
class TokenizeEndpoint:
    """One backend's tokenize endpoint: its path under the server's root, the body of a
    text, and where the answer says the count."""

    kind: str
    path: str
    body: Callable[[str, str], dict[str, Any]]  # (text, model) -> body
    read: Callable[[Mapping[str, Any]], int | None]

    def request(self, base_url: str, key: str, model: str, text: str) -> HttpRequest:
        """The POST that counts `text` on the server at `base_url` (its API's base URL)."""
        return HttpRequest(
            f"{server_root(base_url)}{self.path}",
            self.body(text, model),
            {**bearer_headers(key), "Content-Type": "application/json"},
            "POST",
            False,
        )

    def count(self, answer: Any) -> int | None:
        """The count the answer says, or None."""
        return self.read(answer) if isinstance(answer, Mapping) else None


ENDPOINTS: Mapping[str, TokenizeEndpoint] = {
    e.kind: e
    for e in (
        TokenizeEndpoint(
            "koboldcpp",
            "/api/extra/tokencount",
            lambda text, model: {"prompt": text},
            lambda a: _number(a.get("value")),
        ),
        TokenizeEndpoint(
            "ooba",
            "/v1/internal/token-count",
            lambda text, model: {"text": text},
            lambda a: _number(a.get("length")),
        ),
        TokenizeEndpoint(
            "llamacpp",
            "/tokenize",
            lambda text, model: {"content": text},
            lambda a: _listed(a, "tokens"),
        ),
        TokenizeEndpoint(
            "vllm",
            "/tokenize",
            lambda text, model: {"model": model, "prompt": text},
            lambda a: _number(a.get("count")) if "count" in a else _listed(a, "tokens"),
        ),
        TokenizeEndpoint(
            "aphrodite",
            "/v1/tokenize",
            lambda text, model: {"model": model, "prompt": text},
            lambda a: _number(a.get("value")) if "value" in a else _listed(a, "tokens"),
        ),
        TokenizeEndpoint(
            "tabby",
            "/v1/token/encode",
            lambda text, model: {"text": text},
            lambda a: _number(a.get("length")) if "length" in a else _listed(a, "tokens"),
        ),
    )
}

# The endpoint of a connection's API when its source names none (a generic API)
_BY_API = {Api.KOBOLDCPP: "koboldcpp", Api.LLAMACPP: "llamacpp", Api.OPENAI_TEXT: "ooba"}


def endpoint_for(api: Api, source: str = "") -> TokenizeEndpoint | None:
    """The tokenize endpoint of a connection (its API, the source it was made from), or
    None where the backend has none taverna knows."""
    if source in ENDPOINTS:
        return ENDPOINTS[source]
    if source:
        return None  # a service by name (OpenRouter, TogetherAI...): no tokenize endpoint
    kind = _BY_API.get(api)
    return ENDPOINTS[kind] if kind else None


def server_root(base_url: str) -> str:
    """The server's root from a connection's base URL (its OpenAI-style `/v1` taken off)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base
