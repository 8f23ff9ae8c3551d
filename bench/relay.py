"""What taverna's streaming adds between a model server and the caller.

Against a local stub server (tests/stubs, run in a process of its own so it does not
share this one's interpreter) streaming in each provider's real SSE format:

- first token: from the moment the stub hands its first text chunk to the HTTP server
  to the moment the caller gets the first `TextDelta` event; the same is measured for a
  bare aiohttp client (the one taverna streams with) reading raw bytes, and the
  difference is what taverna adds
  (SSE framing, JSON decoding, event building).
- per token, paced: over 1,000 tokens sent 2 ms apart (a fast model is 10-50 ms), the
  delivery delay of every token through taverna minus the raw client's median delay.
- per token, burst: the 1,000 tokens sent at once, so all bytes are waiting; the gap
  between two events at the caller is then taverna's whole cost of relaying one token
  (read, SSE framing, JSON, event), median and p99, beside the raw client's cost.
- parse: the CPU cost of the provider's stream reader alone for one SSE payload.

Prints a table, then one line of JSON with the figures.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import TextDelta
from taverna.providers.request import Api, HttpRequest, RequestOptions
from taverna.providers.transport import model_session, stream_events

APIS = (Api.OPENAI, Api.ANTHROPIC, Api.GOOGLE, Api.LLAMACPP)
TOKENS = 1000
FIRST_TOKEN_RUNS = 60
STREAM_RUNS = 3
GAP = 0.002


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class RemoteStub:
    """A stub model server in a child process, scripted over its control endpoints."""

    def __init__(self) -> None:
        root = Path(__file__).resolve().parents[1]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.stubs"],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        self.control = httpx.Client(base_url=self.url, timeout=30)

    def base_url(self, api: str) -> str:
        if api in ("openai", "anthropic"):
            return f"{self.url}/v1"
        return f"{self.url}/v1beta" if api == "google" else self.url

    def script(self, tokens: list[str], delay: float = 0.0) -> None:
        self.control.post("/_stub/script", json=[{"tokens": tokens, "delay": delay}])

    @property
    def chunk_times(self) -> list[float]:
        times: list[float] = self.control.get("/_stub/state").json()["chunk_times"]
        return times

    def close(self) -> None:
        self.control.close()
        self.process.terminate()
        self.process.wait(timeout=10)


def request_for(stub: RemoteStub, api: Api) -> HttpRequest:
    if api.is_text_completion:
        prompt = Prompt(kind="text", text="User: hi\nAria:", sampling={"genamt": 2000})
    else:
        messages = (PromptMessage(Role.USER, "hi"),)
        prompt = Prompt(kind="chat", messages=messages, sampling={"openai_max_tokens": 2000})
    options = RequestOptions(model="stub-model")
    return build_request(prompt, api, options, base_url=stub.base_url(api.value), key="k")


async def through_taverna(
    client: aiohttp.ClientSession, request: HttpRequest, api: Api
) -> list[float]:
    """Arrival time of every text event at the caller."""
    times: list[float] = []
    async for event in stream_events(request, stream_parser(api), client=client, secret="k"):
        if isinstance(event, TextDelta):
            times.append(time.perf_counter())
    return times


async def raw_bytes(
    client: aiohttp.ClientSession, request: HttpRequest, tokens: list[str]
) -> list[float]:
    """Arrival time of every token's bytes at a bare aiohttp client (the baseline)."""
    times: list[float] = []
    needles = [t.encode() for t in tokens]
    headers = {"Content-Type": "application/json", **request.headers}
    async with client.post(request.url, json=dict(request.body), headers=headers) as response:
        async for chunk in response.content.iter_any():
            now = time.perf_counter()
            while len(times) < len(needles) and needles[len(times)] in chunk:
                times.append(now)
    return times


def delays(stub: RemoteStub, arrivals: list[float]) -> list[float]:
    # perf_counter is CLOCK_MONOTONIC on Linux: one clock for both processes
    sent = stub.chunk_times
    return [(a - s) * 1000 for a, s in zip(arrivals, sent, strict=False)]


async def measure(stub: RemoteStub, api: Api) -> dict[str, float]:
    request = request_for(stub, api)
    async with model_session() as client:
        first_taverna: list[float] = []
        first_raw: list[float] = []
        short = [f"t{i}x " for i in range(3)]
        for _ in range(FIRST_TOKEN_RUNS):
            stub.script(short)
            arrivals = await through_taverna(client, request, api)
            first_taverna.append(delays(stub, arrivals)[0])
            stub.script(short)
            arrivals = await raw_bytes(client, request, short)
            first_raw.append(delays(stub, arrivals)[0])
        token_taverna: list[float] = []
        token_raw: list[float] = []
        burst_gaps: list[float] = []
        burst_raw: list[float] = []
        many = [f"w{i}x " for i in range(TOKENS)]
        stub.script(many, GAP)
        arrivals = await through_taverna(client, request, api)
        assert len(arrivals) == TOKENS, (api, len(arrivals))
        token_taverna += delays(stub, arrivals)
        stub.script(many, GAP)
        token_raw += delays(stub, await raw_bytes(client, request, many))
        for _ in range(STREAM_RUNS):
            stub.script(many)
            arrivals = await through_taverna(client, request, api)
            burst_gaps += [(b - a) * 1000 for a, b in itertools.pairwise(arrivals)]
            stub.script(many)
            raw = await raw_bytes(client, request, many)
            burst_raw.append((raw[-1] - raw[0]) * 1000 / (len(raw) - 1))
    raw_first = statistics.median(first_raw)
    raw_token = statistics.median(token_raw)
    return {
        "first_token_added_ms_median": statistics.median(first_taverna) - raw_first,
        "first_token_added_ms_p99": percentile(first_taverna, 99) - raw_first,
        "first_token_total_ms_median": statistics.median(first_taverna),
        "per_token_added_ms_median": statistics.median(token_taverna) - raw_token,
        "per_token_added_ms_p99": percentile(token_taverna, 99) - raw_token,
        "burst_ms_per_token_median": statistics.median(burst_gaps),
        "burst_ms_per_token_p99": percentile(burst_gaps, 99),
        "burst_raw_ms_per_token": statistics.median(burst_raw),
        "parse_us_per_token": parse_cost(api),
    }


def parse_cost(api: Api) -> float:
    """CPU microseconds to turn one streamed SSE payload into an event (median of 1,000)."""
    payloads = {
        Api.OPENAI: '{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"word "},"logprobs":null,"finish_reason":null}]}',
        Api.ANTHROPIC: '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word "}}',
        Api.GOOGLE: '{"candidates":[{"content":{"parts":[{"text":"word "}],"role":"model"},"index":0}],"modelVersion":"m"}',
        Api.LLAMACPP: '{"content":"word ","stop":false,"id_slot":0,"index":0}',
    }
    parser = stream_parser(api)
    data = payloads[api]
    samples = []
    for _ in range(TOKENS):
        start = time.perf_counter()
        parser.feed("content_block_delta", data)
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def main() -> int:
    results: dict[str, Any] = {}
    stub = RemoteStub()
    try:
        for api in APIS:
            results[api.value] = asyncio.run(measure(stub, api))
    finally:
        stub.close()
    print(
        f"{'API':<10} {'1st token +ms':>16} {'paced token +ms':>16} "
        f"{'burst ms/token':>16} {'raw ms/token':>12} {'parse us':>9}"
    )
    print(f"{'':<10} {'(med / p99)':>16} {'(med / p99)':>16} {'(med / p99)':>16}")
    for name, r in results.items():
        first = f"{r['first_token_added_ms_median']:.3f} / {r['first_token_added_ms_p99']:.2f}"
        paced = f"{r['per_token_added_ms_median']:.3f} / {r['per_token_added_ms_p99']:.2f}"
        burst = f"{r['burst_ms_per_token_median']:.3f} / {r['burst_ms_per_token_p99']:.3f}"
        print(
            f"{name:<10} {first:>16} {paced:>16} {burst:>16} "
            f"{r['burst_raw_ms_per_token']:>12.4f} {r['parse_us_per_token']:>9.1f}"
        )
    worst = max(r["first_token_added_ms_median"] for r in results.values())
    print(f"target: under 2 ms added to the first token; worst median {worst:.3f} ms")
    summary = {
        "benchmark": "relay",
        "tokens": TOKENS,
        "first_token_runs": FIRST_TOKEN_RUNS,
        "target_first_token_added_ms": 2.0,
        "met": worst < 2.0,
        "apis": {k: {m: round(v, 4) for m, v in r.items()} for k, r in results.items()},
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
