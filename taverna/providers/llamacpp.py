"""llama.cpp server's native `/completion` endpoint: request body and stream reader."""

from __future__ import annotations

from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers import text_body
from taverna.providers.events import ErrorKind, Event, Finish, FinishReason, StreamError, TextDelta
from taverna.providers.request import HttpRequest, RequestOptions, bearer_headers, endpoint_url
from taverna.providers.wire import JsonChunkStream

DEFAULT_URL = "http://127.0.0.1:8080"

# canonical sampling name -> llama.cpp's field
_FIELDS = (
    ("temperature", "temperature"),
    ("top_k", "top_k"),
    ("top_p", "top_p"),
    ("min_p", "min_p"),
    ("typical_p", "typical_p"),
    ("tfs", "tfs_z"),
    ("repetition_penalty", "repeat_penalty"),
    ("repetition_penalty_range", "repeat_last_n"),
    ("presence_penalty", "presence_penalty"),
    ("frequency_penalty", "frequency_penalty"),
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
        text_body.stream,
        text_body.stop,
        text_body.samplers,
        text_body.dry_sequence_breakers,
        text_body.seed,
    ),
    max_tokens="n_predict",
    samplers=_FIELDS,
    # llama.cpp takes -1 as "a random seed"
    negative_seed=True,
    # reuse the KV cache of the shared prefix: only the new turn is evaluated
    fixed={"cache_prompt": True},
)


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The JSON body POSTed to `/completion`."""
    return BODY.build(prompt, options)


def endpoint(base_url: str, options: RequestOptions) -> str:
    return endpoint_url(base_url, DEFAULT_URL, "/completion")


auth_headers = bearer_headers


def models_request(base_url: str, key: str) -> HttpRequest:
    """The GET request of llama.cpp's OpenAI-style `/v1/models`."""
    base = (base_url or DEFAULT_URL).rstrip("/")
    base = base if base.endswith("/v1") else f"{base}/v1"
    return HttpRequest(f"{base}/models", {}, auth_headers(key), "GET", False)


class CompletionStream(JsonChunkStream):
    """Reads `data: {"content": ..., "stop": false}` chunks; the last has `"stop": true`."""

    def _read_chunk(self, chunk: dict[str, Any]) -> list[Event]:
        if "error" in chunk:
            self.finished = True
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            return [StreamError(ErrorKind.SERVER, f"the model server reported an error: {message}")]
        out: list[Event] = []
        content = chunk.get("content")
        if isinstance(content, str) and content:
            out.append(TextDelta(content))
        if chunk.get("stop"):
            self._note_usage(
                chunk.get("tokens_evaluated"),
                chunk.get("tokens_predicted"),
                # the prompt tokens the server reused from its cache instead of evaluating
                cached=_reused(chunk),
            )
            limited = chunk.get("stopped_limit") or chunk.get("stop_type") == "limit"
            reason = FinishReason.LENGTH if limited else FinishReason.STOP
            out.extend(self._close(Finish(reason, str(chunk.get("stop_type", "")))))
        return out

    def parse_response(self, body: Any) -> list[Event]:
        # a whole response is the last chunk, whether or not it says so
        return super().parse_response({**body, "stop": True} if isinstance(body, dict) else body)


def _reused(chunk: dict[str, Any]) -> int | None:
    """The prompt tokens the server found computed: `timings.cache_n`, or where a server
    gives no such count, all of `tokens_evaluated` but the `timings.prompt_n` it computed
    this time (None when it says neither)."""
    timings = chunk.get("timings")
    if not isinstance(timings, dict):
        return None
    cached = timings.get("cache_n")
    if isinstance(cached, int):
        return cached
    evaluated, computed = chunk.get("tokens_evaluated"), timings.get("prompt_n")
    if isinstance(evaluated, int) and isinstance(computed, int):
        return max(evaluated - computed, 0)
    return None
