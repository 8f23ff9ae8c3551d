"""A turn over a lorebook of runaway regex keys: the turn's time for user regexes bounds it.

A character's lorebook has 200 entries, each keyed by a distinct regex that backtracks
without end on a long run of "a" not at the end of the text (`/(a+)+$|q7z/`); the chat's
greeting and the message sent are 5,000 "a" and a "b". Each key alone stops at its own
50 ms limit; the turn's budget (1 s by default) bounds them together. Through the real
app (FastAPI's test client over SQLite in a temporary folder): a whole turn, `POST
generate` until the reply's stream ends, against a stub model on 127.0.0.1, then the
inspector's preview of the next prompt (what opening the chat builds). Then, for
comparison, the preview with only the per-key limit (a budget of an hour): what it cost
before the turn had a budget (skip it with `--quick`).

Prints a table, then one line of JSON with the figures.

    python bench/regex_budget.py [--keys 200] [--budget 1.0] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taverna.engine.lorebook.regex_budget import TURN_REGEX_BUDGET
from taverna.server.app import create_app
from taverna.server.config import Limits, ServerConfig
from taverna.server.context import open_context
from tests.stubs.model_server import Reply, start_stub

LONG = "a" * 5000 + "b"


def trapped_chat(client: TestClient, keys: int) -> str:
    entries = {
        str(i): {"uid": i, "key": [f"/(a+)+$|q{i}z/"], "content": f"trap {i}"} for i in range(keys)
    }
    book = json.dumps({"entries": entries}).encode()
    imported = client.post(
        "/api/lorebooks/import", files={"file": ("Traps.json", book, "application/json")}
    ).json()
    card = client.post("/api/characters", json={"name": "Mira", "first_mes": LONG}).json()
    client.put(f"/api/characters/{card['id']}/lorebook", json={"lorebook_id": imported["id"]})
    return str(client.post("/api/chats", json={"character_id": card["id"]}).json()["id"])


def preview(client: TestClient, chat_id: str) -> tuple[float, int]:
    """(seconds, regexes listed as stopped) of the next prompt's preview."""
    began = time.perf_counter()
    answer = client.get(f"/api/chats/{chat_id}/prompt")
    took = time.perf_counter() - began
    answer.raise_for_status()
    return took, len(answer.json()["prompt"]["ledger"]["skipped_regexes"])


def turn(client: TestClient, chat_id: str, text: str) -> float:
    """Seconds from `POST generate` to the end of the reply's event stream."""
    revision = client.get(f"/api/chats/{chat_id}").json()["revision"]
    body = {"kind": "normal", "text": text, "revision": revision}
    began = time.perf_counter()
    answer = client.post(f"/api/chats/{chat_id}/generate", json=body)
    answer.raise_for_status()
    started = answer.json()
    with client.stream("GET", f"/api/tasks/{started['task']['id']}/events") as events:
        for line in events.iter_lines():
            if line.startswith("event: done"):
                break
    return time.perf_counter() - began


def measure(keys: int, budget: float, *, with_turn: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder, start_stub() as stub:
        config = ServerConfig(limits=Limits(regex_turn_seconds=budget))
        ctx = open_context(Path(folder) / "data", config)
        with TestClient(create_app(ctx)) as client:
            client.post(
                "/api/connections",
                json={
                    "name": "stub",
                    "api": "openai",
                    "url": stub.base_url("openai"),
                    "model": "stub-model",
                    "default": True,
                },
            ).raise_for_status()
            chat_id = trapped_chat(client, keys)
            figures: dict[str, float] = {}
            if with_turn:
                stub.script(Reply(tokens=["Fine."]))
                figures["turn_s"] = turn(client, chat_id, LONG)
            seconds, stopped = preview(client, chat_id)
            figures["preview_s"] = seconds
            figures["stopped"] = stopped
        ctx.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--budget", type=float, default=TURN_REGEX_BUDGET)
    parser.add_argument("--quick", action="store_true", help="skip the run without a budget")
    args = parser.parse_args()

    bounded = measure(args.keys, args.budget, with_turn=True)
    print(f"{args.keys} runaway regex keys; greeting and message of 5,001 characters")
    print(f"{'':<34} {'seconds':>8} {'stopped':>8}")
    print(f"{'turn, budget ' + str(args.budget) + ' s':<34} {bounded['turn_s']:>8.2f}")
    print(
        f"{'preview, budget ' + str(args.budget) + ' s':<34} "
        f"{bounded['preview_s']:>8.2f} {int(bounded['stopped']):>8}"
    )
    result: dict[str, float | int] = {
        "keys": args.keys,
        "budget_s": args.budget,
        "turn_s": round(bounded["turn_s"], 3),
        "preview_s": round(bounded["preview_s"], 3),
    }
    if not args.quick:
        unbounded = measure(args.keys, 3600.0, with_turn=False)
        print(
            f"{'preview, per-key limit only':<34} "
            f"{unbounded['preview_s']:>8.2f} {int(unbounded['stopped']):>8}"
        )
        result["preview_without_budget_s"] = round(unbounded["preview_s"], 3)
        result["ratio"] = round(unbounded["preview_s"] / bounded["preview_s"], 1)
        print(f"the budget makes the preview {result['ratio']}x faster")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
