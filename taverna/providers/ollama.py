"""Ollama's native API: `/api/generate` with the prompt as written (`raw`), `/api/tags`.

SillyTavern's Text Completion type `ollama` speaks this API: the prompt goes as one text
the instruct template already formatted (`raw: true`, so Ollama applies no template of its
own), the samplers under `options` by Ollama's names, and `keep_alive: -1` so the model
stays loaded between turns. A streamed answer is newline-delimited JSON, one object a
line, `{"response": "...", "done": false}`, the last with `"done": true`, the reason and
the token counts; an error is `{"error": "..."}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.model.prompt import Prompt
from taverna.providers import text_body
from taverna.providers.events import ErrorKind, Event, Finish, FinishReason, StreamError, TextDelta
from taverna.providers.request import HttpRequest, RequestOptions, bearer_headers, endpoint_url
from taverna.providers.wire import JsonChunkStream

DEFAULT_URL = "http://127.0.0.1:11434"

# canonical sampling name -> Ollama's option
_FIELDS = (
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("typical_p", "typical_p"),
    ("min_p", "min_p"),
    ("frequency_penalty", "frequency_penalty"),
    ("presence_penalty", "presence_penalty"),
    ("top_k", "top_k"),
    ("mirostat_tau", "mirostat_tau"),
    ("mirostat_eta", "mirostat_eta"),
    ("repetition_penalty", "repeat_penalty"),
    ("tfs", "tfs_z"),
    ("repetition_penalty_range", "repeat_last_n"),
    ("max_context", "num_ctx"),
    ("mirostat_mode", "mirostat"),
)

# The body's `options`: the samplers, the stop strings, the seed (-1: a random one) and
# the reply's length.
OPTIONS = text_body.TextBody(
    layout=(text_body.samplers, text_body.stop, text_body.seed, text_body.max_tokens),
    max_tokens="num_predict",
    samplers=_FIELDS,
    negative_seed=True,
)


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The JSON body POSTed to `/api/generate`."""
    return {
        "model": options.model,
        "prompt": prompt.text,
        "stream": options.stream,
        "keep_alive": -1,
        "raw": True,
        "options": OPTIONS.build(prompt, options),
    }


def _base(base_url: str) -> str:
    base = (base_url or DEFAULT_URL).rstrip("/")
    for tail in ("/api/generate", "/api", "/v1"):
        if base.endswith(tail):
            return base[: -len(tail)]
    return base


def endpoint(base_url: str, options: RequestOptions) -> str:
    return endpoint_url(_base(base_url), DEFAULT_URL, "/api/generate")


auth_headers = bearer_headers


def models_request(base_url: str, key: str) -> HttpRequest:
    """The GET request of `/api/tags`: the models this Ollama has pulled."""
    return HttpRequest(f"{_base(base_url)}/api/tags", {}, auth_headers(key), "GET", False)


def pull_request(base_url: str, key: str, model: str) -> HttpRequest:
    """The POST of `/api/pull` that fetches `model` into Ollama, its progress streamed."""
    return HttpRequest(
        f"{_base(base_url)}/api/pull", {"model": model, "stream": True}, auth_headers(key)
    )


def parse_models(listing: Mapping[str, Any]) -> list[str]:
    """The model names of an `/api/tags` answer."""
    models = listing.get("models")
    if not isinstance(models, list):
        return []
    return [
        str(m.get("name") or m.get("model"))
        for m in models
        if isinstance(m, Mapping) and (m.get("name") or m.get("model"))
    ]


_FINISH = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


class GenerateStream(JsonChunkStream):
    """Reads `/api/generate`'s lines: `response` pieces, then the one with `done: true`."""

    def _read_chunk(self, chunk: dict[str, Any]) -> list[Event]:
        if "error" in chunk:
            self.finished = True
            return [StreamError(ErrorKind.SERVER, f"Ollama reported an error: {chunk['error']}")]
        out: list[Event] = []
        text = chunk.get("response")
        if isinstance(text, str) and text:
            out.append(TextDelta(text))
        if chunk.get("done"):
            self._note_usage(chunk.get("prompt_eval_count"), chunk.get("eval_count"))
            raw = str(chunk.get("done_reason") or "stop")
            out.extend(self._close(Finish(_FINISH.get(raw, FinishReason.OTHER), raw)))
        return out
