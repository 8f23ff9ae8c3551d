"""Connections to model APIs: add, list, change, test, list models, remove. Keys never come back.

A connection is named in the path by its name, percent-encoded; a name may hold `/`.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from taverna.errors import Forbidden
from taverna.server.context import AppContext, context, current_user
from taverna.server.openapi import upstream_error
from taverna.server.schemas import NAME_MAX, Strict
from taverna.services.connections import gpu_offload
from taverna.services.connections.fields import cache_depth
from taverna.services.connections.local_models import local_models, models_in
from taverna.services.connections.service import Connection, ConnectionService, api_sources

router = APIRouter(prefix="/api/connections", tags=["connections"])


ApiName = Literal[
    "openai",
    "openai-compatible",
    "anthropic",
    "google",
    "mistral",
    "koboldcpp",
    "llamacpp",
    "openai-text",
    "local",
    # sources by name (taverna/providers/sources.py), each on one of the APIs above
    "claude",
    "openrouter",
    "deepseek",
    "xai",
    "groq",
    "mistralai",
    "makersuite",
    "perplexity",
    "cohere",
    "ai21",
    "01ai",
    "custom",
    "ooba",
    "ollama",
    "vllm",
    "aphrodite",
    "tabby",
    "togetherai",
    "mancer",
    "infermaticai",
    "dreamgen",
    "openrouter-text",
    "featherless",
    "huggingface",
]


PostProcessingName = Literal["none", "merge", "semi", "strict", "single", "claude"]


class ConnectionIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    api: ApiName
    url: str = Field(default="", max_length=2000)
    model: str = Field(
        default="", max_length=4096, description="the model's name; for `local`, a .gguf file"
    )
    key: str | None = Field(default=None, max_length=10_000)
    key_env: str | None = Field(default=None, max_length=NAME_MAX)
    default: bool = False
    post_processing: PostProcessingName = "none"


class ConnectionPatch(Strict):
    model: str | None = Field(default=None, max_length=NAME_MAX)
    url: str | None = Field(default=None, max_length=2000)
    key: str | None = Field(
        default=None,
        max_length=10_000,
        description='a new key (needed when the URL moves to another site); `""` removes it',
    )
    default: bool | None = None
    cache_system_prompt: bool | None = Field(
        default=None, description="Claude's prompt cache: a breakpoint on the system prompt"
    )
    caching_at_depth: int | None = Field(
        default=None,
        ge=-1,
        le=1000,
        description="Claude's prompt cache: breakpoints in the history at this depth (-1: none)",
    )


class ConnectionOut(BaseModel):
    name: str
    api: str
    url: str
    model: str
    post_processing: str
    default: bool
    has_key: bool
    key: str = Field(description="where the key comes from, or its last characters; never the key")
    source: str = Field(default="", description="the source it was made from, by name")
    offload: str = Field(
        default="", description="a local model: where llama.cpp runs it (cpu, gpu, gpu:LAYERS)"
    )
    cache_system_prompt: bool = False
    caching_at_depth: int = -1


class ModelOut(BaseModel):
    id: str
    context: int | None = Field(default=None, description="context size, where the API says it")


class SourceOut(BaseModel):
    """A service a connection is made from, as the connection form offers it."""

    name: str
    label: str
    family: str
    api: str
    url: str
    needs_url: bool
    key: str
    key_hint: str
    models: bool
    stop_limit: int | None
    reasoning: str
    post_processing: str
    notes: str
    gone: str


class ConnectionTestOut(BaseModel):
    ok: bool
    message: str
    latency_ms: int
    # Why it failed, in stable words a page translates (`message` is the English).
    cause: str | None = None
    code: str | None = None
    params: dict[str, str | int] = {}
    part: str | None = Field(
        default=None,
        description="which part failed: dns, tls, refused, network, auth, model, timeout, api",
    )


def service(request: Request, ctx: AppContext = Depends(context)) -> ConnectionService:
    return ctx.connections_of(current_user(request))


def out(connections: ConnectionService, connection: Connection) -> ConnectionOut:
    shown = connection.public(connections.key_hint(connection))
    return ConnectionOut(
        name=connection.name,
        api=connection.api.value,
        url=connection.url,
        model=connection.model,
        post_processing=connection.post_processing.value,
        default=connection.default,
        has_key=bool(connection.key_ref),
        key=str(shown.get("key", "none")),
        source=str(connection.options.get("source", "")),
        offload=gpu_offload.describe(connection.options) if connection.api.value == "local" else "",
        cache_system_prompt=bool(connection.options.get("cache_system_prompt", False)),
        caching_at_depth=cache_depth(connection.options.get("caching_at_depth")),
    )


@router.get("/sources", response_model=list[SourceOut])
def list_sources() -> list[SourceOut]:
    """Every service a connection is made from by name, Chat Completion ones first; the
    ones whose service shut down say so (`gone`) and cannot be added."""
    return [SourceOut(**s.public()) for s in api_sources()]


@router.get("/local-models", response_model=list[str])
def list_local_models(request: Request, ctx: AppContext = Depends(context)) -> list[str]:
    """The GGUF files of the server's models folder (`models/` in its data folder), by the
    file name a `local` connection names one. With accounts, an admin's list only."""
    session = getattr(request.state, "session", None)
    if "accounts" in ctx.services and (session is None or not session.account.admin):
        raise Forbidden(
            "only an admin adds a local model from the server's models folder",
            code="local_model_admin_only",
        )
    return models_in(local_models().models_dir)


@router.get("", response_model=list[ConnectionOut])
def list_connections(connections: ConnectionService = Depends(service)) -> list[ConnectionOut]:
    return [out(connections, c) for c in connections.list()]


@router.post("", response_model=ConnectionOut, status_code=201)
def add_connection(
    body: ConnectionIn, connections: ConnectionService = Depends(service)
) -> ConnectionOut:
    connection = connections.add(
        body.name,
        body.api,
        url=body.url,
        model=body.model,
        key=body.key or None,
        key_env=body.key_env or None,
        default=body.default,
        post_processing=body.post_processing,
    )
    return out(connections, connection)


@router.patch("/{name:path}", response_model=ConnectionOut)
def change_connection(
    name: str, body: ConnectionPatch, connections: ConnectionService = Depends(service)
) -> ConnectionOut:
    """Change the model, the URL or the key. A URL that leads to another site needs the
    key again (`key`; `""` removes the key): 422 without it, and nothing changes."""
    current = connections.get(name)
    cached = {
        key: value
        for key, value in (
            ("cache_system_prompt", body.cache_system_prompt),
            ("caching_at_depth", body.caching_at_depth),
        )
        if value is not None
    }
    if body.model is not None or body.url is not None or body.key is not None or cached:
        current = connections.add(
            current.name,
            current.api,
            url=current.url if body.url is None else body.url,
            model=current.model if body.model is None else body.model,
            key=body.key,
            post_processing=current.post_processing,
            options={**current.options, **cached},
        )
    if body.default:
        current = connections.set_default(name)
    return out(connections, current)


@router.delete("/{name:path}", status_code=204)
def remove_connection(name: str, connections: ConnectionService = Depends(service)) -> Response:
    connections.remove(name)
    return Response(status_code=204)


@router.post("/{name:path}/test", response_model=ConnectionTestOut)
async def test_connection(
    name: str, connections: ConnectionService = Depends(service)
) -> ConnectionTestOut:
    result = await connections.test(name)
    return ConnectionTestOut(
        ok=result.ok,
        message=result.message,
        latency_ms=round(result.seconds * 1000),
        cause=result.cause,
        code=result.code,
        params=result.params,
        part=result.part,
    )


@router.get("/{name:path}/models", response_model=list[str], responses=upstream_error())
async def list_models(name: str, connections: ConnectionService = Depends(service)) -> list[str]:
    return await connections.list_models(name)


@router.get("/{name:path}/model-sizes", response_model=list[ModelOut], responses=upstream_error())
async def list_model_sizes(
    name: str, connections: ConnectionService = Depends(service)
) -> list[ModelOut]:
    """The models with their context sizes, where the API's listing says them."""
    return [ModelOut(id=m, context=c) for m, c in await connections.list_model_sizes(name)]
