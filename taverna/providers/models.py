"""Listing the models an API offers: the request per API and reading its answer."""

from __future__ import annotations

from typing import Any

from taverna.providers import anthropic, google, koboldcpp, mistral, openai_chat
from taverna.providers.request import Api, HttpRequest


def models_request(api: Api, base_url: str, key: str) -> HttpRequest:
    """The GET request that lists `api`'s models."""
    if api is Api.ANTHROPIC:
        base = (base_url or anthropic.DEFAULT_URL).rstrip("/")
        return HttpRequest(f"{base}/models", {}, anthropic.auth_headers(key), "GET", False)
    if api is Api.GOOGLE:
        base = (base_url or google.DEFAULT_URL).rstrip("/")
        return HttpRequest(f"{base}/models", {}, google.auth_headers(key), "GET", False)
    if api is Api.KOBOLDCPP:
        base = (base_url or koboldcpp.DEFAULT_URL).rstrip("/").removesuffix("/api/v1")
        return HttpRequest(f"{base}/api/v1/model", {}, koboldcpp.auth_headers(key), "GET", False)
    if api is Api.LLAMACPP:
        base = (base_url or "http://127.0.0.1:8080").rstrip("/")
        base = base if base.endswith("/v1") else f"{base}/v1"
        return HttpRequest(f"{base}/models", {}, openai_chat.auth_headers(key), "GET", False)
    default = mistral.DEFAULT_URL if api is Api.MISTRAL else openai_chat.DEFAULT_URL
    base = (base_url or default).rstrip("/")
    return HttpRequest(f"{base}/models", {}, openai_chat.auth_headers(key), "GET", False)


def parse_models(api: Api, body: Any) -> list[str]:
    """Model names from a listing, sorted; an unexpected shape gives an empty list."""
    if not isinstance(body, dict):
        return []
    if api is Api.GOOGLE:
        names = []
        for model in body.get("models") or ():
            methods = model.get("supportedGenerationMethods") or ["generateContent"]
            if isinstance(model, dict) and "generateContent" in methods:
                names.append(str(model.get("name", "")).removeprefix("models/"))
        return sorted(n for n in names if n)
    if api is Api.KOBOLDCPP:
        result = body.get("result")
        return [str(result).removeprefix("koboldcpp/")] if result else []
    return sorted(
        {str(m["id"]) for m in body.get("data") or () if isinstance(m, dict) and m.get("id")}
    )
