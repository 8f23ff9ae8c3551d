"""KoboldCpp's native API (`/api/v1/generate`, streamed by `/api/extra/generate/stream`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers import text_body
from taverna.providers.events import ErrorKind, Event, FinishReason, StreamError, TextDelta
from taverna.providers.request import HttpRequest, RequestOptions, bearer_headers
from taverna.providers.wire import JsonChunkStream

DEFAULT_URL = "http://127.0.0.1:5001"

# canonical sampling name -> KoboldCpp's field
_FIELDS = (
    ("max_context", "max_context_length"),
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("top_k", "top_k"),
    ("top_a", "top_a"),
    ("min_p", "min_p"),
    ("typical_p", "typical"),
    ("tfs", "tfs"),
    ("repetition_penalty", "rep_pen"),
    ("repetition_penalty_range", "rep_pen_range"),
    ("repetition_penalty_slope", "rep_pen_slope"),
    ("mirostat_mode", "mirostat"),
    ("mirostat_tau", "mirostat_tau"),
    ("mirostat_eta", "mirostat_eta"),
    ("dry_multiplier", "dry_multiplier"),
    ("dry_base", "dry_base"),
    ("dry_allowed_length", "dry_allowed_length"),
    ("dry_penalty_last_n", "dry_penalty_last_n"),
    ("xtc_threshold", "xtc_threshold"),
    ("xtc_probability", "xtc_probability"),
)


BODY = text_body.TextBody(
    layout=(
        text_body.prompt_text,
        text_body.max_tokens,
        text_body.samplers,
        text_body.dry_sequence_breakers,
        text_body.sampler_order,
        text_body.seed,
        text_body.stop,
    ),
    max_tokens="max_length",
    stop="stop_sequence",
    seed="sampler_seed",
    samplers=_FIELDS,
    # KoboldCpp keeps a matched stop string in the text unless told otherwise
    fixed={"trim_stop": True},
)


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The JSON body of a KoboldCpp generate request."""
    return BODY.build(prompt, options)


def endpoint(base_url: str, options: RequestOptions) -> str:
    base = (base_url or DEFAULT_URL).rstrip("/")
    for suffix in ("/api/v1", "/api"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return f"{base}/api/extra/generate/stream" if options.stream else f"{base}/api/v1/generate"


# KoboldCpp's optional --password is checked as a bearer token
auth_headers = bearer_headers


def models_request(base_url: str, key: str) -> HttpRequest:
    """The GET request that names the one model KoboldCpp has loaded."""
    base = (base_url or DEFAULT_URL).rstrip("/").removesuffix("/api/v1")
    return HttpRequest(f"{base}/api/v1/model", {}, auth_headers(key), "GET", False)


def parse_models(body: Mapping[str, Any]) -> list[str]:
    """The loaded model's name, without KoboldCpp's `koboldcpp/` prefix."""
    result = body.get("result")
    return [str(result).removeprefix("koboldcpp/")] if result else []


_FINISH = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


class GenerateStream(JsonChunkStream):
    """Reads `event: message` / `data: {"token": ...}` events.

    KoboldCpp closes the stream when done; newer versions also send a `finish_reason`.
    A clean end of the body is therefore a finish.
    """

    def _read_chunk(self, chunk: dict[str, Any]) -> list[Event]:
        token = chunk.get("token")
        self._note_finish(chunk.get("finish_reason"), _FINISH)
        return [TextDelta(token)] if isinstance(token, str) and token else []

    def end(self) -> list[Event]:
        return self._close()

    def parse_response(self, body: Any) -> list[Event]:
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list) or not results:
            return [StreamError(ErrorKind.PROTOCOL, "the response had no results")]
        first = results[0]
        self._note_finish(first.get("finish_reason"), _FINISH)
        return [TextDelta(str(first.get("text", ""))), *self._close()]
