"""The local model's own process: one GGUF model run by llama.cpp, answering on 127.0.0.1.

It speaks the llama.cpp server's `/completion` protocol (SSE chunks `{"content", "stop"}`),
so taverna's `llamacpp` request builder and stream reader serve it unchanged, plus
`/tokenize` (exact counts from the model's own vocabulary) and `/props` (the chat template
the GGUF file carries). Being a process of its own, generation never holds the server's
event loop or interpreter; `local_models.py` beside it starts it on first use, passes a
secret that every request must carry, and stops it when idle. A closed connection stops
the generation at the next token.

Run as `python -m taverna.services.connections.local_process --model PATH --port N
[--n-ctx N] [--threads N] [--slots N]` with the secret in the `TAVERNA_LOCAL_SECRET` environment variable.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from taverna.services.connections.local_slots import PrefixSlots

SECRET_ENV = "TAVERNA_LOCAL_SECRET"
# Conversations whose computed prefix is kept beside the live one (see local_slots.py).
DEFAULT_SLOTS = 4
# The shortest run of computed tokens moved into place after a difference (llama.cpp's
# `--cache-reuse`): the last reply, which the volatile parts before it used to precede.
REUSE_CHUNK = 16

# llama.cpp server field -> llama-cpp-python's `create_completion` argument
_SAMPLING = {
    "temperature": "temperature",
    "top_k": "top_k",
    "top_p": "top_p",
    "min_p": "min_p",
    "typical_p": "typical_p",
    "tfs_z": "tfs_z",
    "repeat_penalty": "repeat_penalty",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "mirostat": "mirostat_mode",
    "mirostat_tau": "mirostat_tau",
    "mirostat_eta": "mirostat_eta",
    "seed": "seed",
}


# What a request that names no sampler gets: llama.cpp's own defaults leave a small model
# repeating itself (no repetition penalty); these keep it varied and on topic.
DEFAULT_SAMPLING = {"temperature": 0.7, "top_p": 0.9, "min_p": 0.05, "repeat_penalty": 1.15}


def completion_arguments(
    body: Mapping[str, Any], n_ctx: int, max_tokens: int = 0
) -> dict[str, Any]:
    """`create_completion` arguments for a `/completion` body (unknown fields ignored);
    `max_tokens` caps the reply's length (0: no cap but the context)."""
    arguments: dict[str, Any] = dict(DEFAULT_SAMPLING)
    for field, name in _SAMPLING.items():
        value = body.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            arguments[name] = value
    if arguments.get("seed", 0) < 0:
        arguments.pop("seed")  # -1: a random seed, llama.cpp's default
    n_predict = body.get("n_predict")
    if isinstance(n_predict, int) and n_predict > 0:
        arguments["max_tokens"] = n_predict
    else:
        arguments["max_tokens"] = n_ctx
    if max_tokens:
        arguments["max_tokens"] = min(arguments["max_tokens"], max_tokens)
    stop = body.get("stop")
    if isinstance(stop, list):
        arguments["stop"] = [s for s in stop if isinstance(s, str) and s]
    return arguments


class Generator:
    """One loaded model and one generation at a time (a second waits for the first)."""

    def __init__(
        self,
        model_path: str,
        n_ctx: int,
        threads: int | None,
        max_tokens: int = 0,
        slots: int = DEFAULT_SLOTS,
        n_gpu_layers: int | None = None,
    ) -> None:
        from llama_cpp import Llama

        from taverna.services.connections import gpu_offload

        # every layer on the GPU where llama.cpp can offload, unless the connection chose
        self.n_gpu_layers = gpu_offload.layers({}) if n_gpu_layers is None else n_gpu_layers

        # Half the cores by default: the server and the page keep the rest, and llama.cpp's
        # threads wait for each other at every step, which costs dearly when the machine
        # is busy and a thread loses its core.
        threads = threads or max(1, (os.cpu_count() or 1) // 2)
        self.model = Llama(
            model_path=model_path,
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            n_gpu_layers=self.n_gpu_layers,
            verbose=False,
        )
        self.n_ctx = self.model.n_ctx()
        self.max_tokens = max_tokens
        self.lock = threading.Lock()
        # the computed prefix of each recent conversation, within a share of free memory
        self.slots = PrefixSlots(
            self.model, slots=slots, budget_bytes=_slot_budget(), chunk=REUSE_CHUNK
        )

    def tokenize(self, text: str, *, add_special: bool = False) -> list[int]:
        return list(self.model.tokenize(text.encode("utf-8"), add_bos=add_special, special=True))

    def props(self) -> dict[str, Any]:
        metadata = self.model.metadata or {}
        return {
            "chat_template": metadata.get("tokenizer.chat_template", ""),
            "default_generation_settings": {"n_ctx": self.n_ctx},
            "model_name": metadata.get("general.name", ""),
            "n_gpu_layers": self.n_gpu_layers,
        }

    def run(
        self,
        body: Mapping[str, Any],
        emit: Any,
        cancelled: threading.Event,
    ) -> None:
        """Generate for `body`, calling `emit(chunk)` per piece and once at the end."""
        prompt = str(body.get("prompt") or "")
        arguments = completion_arguments(body, self.n_ctx, self.max_tokens)
        with self.lock:
            began = time.perf_counter()
            tokens = self.tokenize(prompt, add_special=True)
            reuse = self.slots.prepare(tokens)
            first: float | None = None
            predicted = 0
            reason = "eos"
            try:
                given = list(reuse.tokens) or tokens  # blanks as the model wrote them
                stream: Any = self.model.create_completion(given, stream=True, **arguments)
                for chunk in stream:
                    first = first or time.perf_counter()
                    choice: dict[str, Any] = chunk["choices"][0]
                    text = choice.get("text") or ""
                    predicted += 1
                    if text:
                        emit({"content": text, "stop": False})
                    finish = choice.get("finish_reason")
                    if finish == "length":
                        reason = "limit"
                    elif finish == "stop":
                        reason = "word" if arguments.get("stop") else "eos"
                    if cancelled.is_set():
                        reason = "cancelled"
                        break
            except Exception as exc:  # the model refused the request (a prompt over n_ctx)
                emit({"error": {"message": str(exc)}})
                return
            emit(
                {
                    "content": "",
                    "stop": True,
                    "stop_type": reason,
                    "stopped_limit": reason == "limit",
                    "tokens_evaluated": reuse.total,
                    "tokens_predicted": predicted,
                    # as llama.cpp's server reports them: the prompt's tokens found computed,
                    # and in `timings` those computed this time
                    "tokens_cached": reuse.reused,
                    "timings": {
                        "cache_n": reuse.reused,
                        "prompt_n": reuse.total - reuse.reused,
                        "prompt_ms": round(((first or time.perf_counter()) - began) * 1000, 1),
                        "predicted_n": predicted,
                    },
                    "prefix_restored": reuse.restored,
                }
            )


def _slot_budget() -> int:
    """The bytes kept prefixes may take: a quarter of the memory free now, at most 1 GiB."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        free = 0
    return min(free // 4, 1 << 30)


def create_app(generator: Generator, secret: str) -> Any:
    """The worker's HTTP application (Starlette)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    def allowed(request: Request) -> bool:
        given = request.headers.get("authorization", "")
        return secrets.compare_digest(given, f"Bearer {secret}")

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def props(request: Request) -> Response:
        if not allowed(request):
            return JSONResponse({"error": {"message": "unauthorized"}}, status_code=401)
        return JSONResponse(generator.props())

    async def tokenize(request: Request) -> Response:
        if not allowed(request):
            return JSONResponse({"error": {"message": "unauthorized"}}, status_code=401)
        body = await request.json()
        tokens = await asyncio.to_thread(
            generator.tokenize,
            str(body.get("content") or ""),
            add_special=bool(body.get("add_special")),
        )
        return JSONResponse({"tokens": tokens})

    async def completion(request: Request) -> Response:
        if not allowed(request):
            return JSONResponse({"error": {"message": "unauthorized"}}, status_code=401)
        body = await request.json()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        cancelled = threading.Event()

        def emit(chunk: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, chunk)

        def work() -> None:
            try:
                generator.run(body, emit, cancelled)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, None)

        worker = threading.Thread(target=work, name="generation", daemon=True)
        worker.start()

        async def events() -> AsyncIterator[bytes]:
            try:
                while (chunk := await queue.get()) is not None:
                    yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()
            finally:
                cancelled.set()  # the reader went away (Stop): end at the next token

        if body.get("stream"):
            return StreamingResponse(events(), media_type="text/event-stream")
        text: list[str] = []
        last: dict[str, Any] = {}
        while (chunk := await queue.get()) is not None:
            if "error" in chunk:
                return JSONResponse(chunk, status_code=500)
            text.append(str(chunk.get("content") or ""))
            last = chunk
        return JSONResponse({**last, "content": "".join(text)})

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/props", props),
            Route("/tokenize", tokenize, methods=["POST"]),
            Route("/completion", completion, methods=["POST"]),
        ]
    )


def check_model_file(path: str) -> None:
    """Read the file's header and metadata before llama.cpp loads it: a file that is not a
    GGUF model ends this process with the reason on its last line (the server that
    started it reports that line, naming the model)."""
    from taverna.engine.tokens.gguf import read_metadata
    from taverna.errors import FormatError

    try:
        with open(path, "rb") as stream:
            if stream.read(4) != b"GGUF":
                raise SystemExit("not a GGUF model file")
            stream.seek(0)
            read_metadata(stream, file=os.path.basename(path))
    except OSError as exc:
        raise SystemExit(f"cannot read the model file: {exc.strerror}") from None
    except FormatError as exc:
        raise SystemExit(f"not a valid GGUF model file: {exc.message}") from None
    except SystemExit:
        raise
    except Exception as exc:
        raise SystemExit(f"not a valid GGUF model file ({type(exc).__name__})") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="taverna-local-model", description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=0)
    parser.add_argument("--slots", type=int, default=DEFAULT_SLOTS)
    parser.add_argument("--n-gpu-layers", type=int, default=None)
    args = parser.parse_args(argv)
    secret = os.environ.get(SECRET_ENV, "")
    if not secret:
        raise SystemExit(f"{SECRET_ENV} must hold the secret requests carry")
    import uvicorn

    check_model_file(args.model)
    try:
        generator = Generator(
            args.model,
            args.n_ctx,
            args.threads or None,
            args.max_tokens,
            args.slots,
            args.n_gpu_layers,
        )
    except Exception as exc:  # llama.cpp refused the file: said on the last line, for the server
        raise SystemExit(f"llama.cpp cannot load the model: {exc}") from None
    uvicorn.run(
        create_app(generator, secret),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
