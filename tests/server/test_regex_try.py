"""The regex test box (`/api/regex/try`) under the same time budget as a turn's scripts:
a few scripts at most, their time together bounded, what the limits stopped listed."""

from __future__ import annotations

from fastapi.testclient import TestClient

from taverna.server.context import AppContext
from taverna.server.routes.regex import TRY_SCRIPTS_MAX
from tests.server.test_regex import rule

# Backtracks without end on a long run of "a" that does not end the text; each distinct.
TRAP = "/(a+)+$|q{}z/"
LONG = "a" * 5000 + "b"


def test_a_try_holds_a_few_scripts(client: TestClient) -> None:
    scripts = [rule(f"r{i}", "/a/g", "b") for i in range(TRY_SCRIPTS_MAX + 1)]
    refused = client.post("/api/regex/try", json={"scripts": scripts, "text": "a"})
    assert refused.status_code == 422
    assert "scripts" in str(refused.json()["detail"])
    tried = client.post("/api/regex/try", json={"scripts": scripts[:-1], "text": "a"})
    assert tried.status_code == 200 and tried.json() == {"result": "b", "skipped": []}


def test_runaway_scripts_spend_a_turns_regex_time_together(
    client: TestClient, ctx: AppContext
) -> None:
    assert ctx.turns is not None
    ctx.turns.regex_budget = 0.3  # as `regex_turn_seconds = 0.3` in server.toml
    scripts = [rule(f"Runaway {i}", TRAP, "X") for i in range(20)]
    tried = client.post("/api/regex/try", json={"scripts": scripts, "text": LONG})
    assert tried.status_code == 200, tried.text
    answer = tried.json()
    assert answer["result"] == LONG
    codes = {item["script"]: item["code"] for item in answer["skipped"]}
    # every script is listed: a few stopped at their own limit, the rest not run at all
    # once the try's 0.3 s were spent (without the budget all 20 ran to their 250 ms)
    assert set(codes) == {f"Runaway {i}" for i in range(20)}
    assert list(codes.values()).count("regex_script_not_run") >= 17
    stopped = [item for item in answer["skipped"] if item["code"] == "regex_script_stopped"]
    assert all(item["params"] == {"ms": "250"} for item in stopped)
    assert all("left as it was" in item["reason"] for item in answer["skipped"])
