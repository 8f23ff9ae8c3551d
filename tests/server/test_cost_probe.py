"""The cost probe `bench/load.py` reads: off by default, and when on it counts a real
database's statements and transactions and profiles CPU into the parts of a turn."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import sqlalchemy as sa

from taverna.server import cost_probe
from taverna.server.cost_probe import CostProbe, part_of, start_from_environment


def test_off_without_the_variable(monkeypatch) -> None:
    monkeypatch.delenv(cost_probe.ENV, raising=False)
    assert start_from_environment() is None


def test_counts_statements_transactions_and_commits(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(cost_probe.ENV, str(tmp_path / "probe"))
    probe = start_from_environment()
    assert probe is not None
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
            conn.exec_driver_sql("INSERT INTO t VALUES (1)")
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT x FROM t").all()
    finally:
        probe.stop()
    written = json.loads(probe.path.read_text())
    assert written["statements"] == 3
    assert written["changes"] == 2
    assert written["transactions"] == 2
    assert written["commits"] == 1
    # stopped: it no longer listens
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1").all()
    engine.dispose()
    assert probe.counts["statements"] == 3


def test_cpu_goes_to_the_part_a_thread_runs(tmp_path: Path) -> None:
    probe = CostProbe(tmp_path)
    done = threading.Event()

    def spin() -> None:
        while not done.is_set():
            sum(range(1000))

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        probe.sample()
        time.sleep(0.05)
        probe.sample()
    finally:
        done.set()
        worker.join()
    assert sum(probe.cpu_ns.values()) > 0
    assert set(probe.cpu_ns) <= set(cost_probe.PARTS)


def test_stacks_are_told_apart_by_their_innermost_known_frame() -> None:
    route = ("/x/taverna/server/routes/chats.py", "generate")
    select = ("/x/sqlalchemy/engine/base.py", "_execute_context")
    assert part_of([select, ("/x/taverna/store/sql/chats.py", "path"), route]) == "read"
    writer = ("/x/taverna/store/sql/writer.py", "add_node")
    assert part_of([select, writer, route]) == "write"
    assert part_of([("/x/taverna/engine/assemble.py", "assemble"), route]) == "build"
    assert part_of([("/x/taverna/providers/openai_chat.py", "events"), route]) == "relay"
    task = ("/x/taverna/services/turns/generation_task.py", "run")
    planning = ("/x/taverna/services/turns/planning.py", "plan")
    assert part_of([planning, task]) == "build"
    assert part_of([("/x/taverna/services/turns/runs.py", "publish"), task]) == "relay"
    assert part_of([("/x/taverna/services/turns/records.py", "record"), task]) == "write"
    backup = ("/x/taverna/services/chats/backups.py", "backup")
    assert part_of([select, backup]) == "backup"
    assert part_of([route]) == "serve"
    sending = ("/x/starlette/responses.py", "stream_response")
    assert part_of([("/x/uvicorn/protocols/http/h11_impl.py", "send"), sending]) == "relay"
    assert part_of([("/usr/lib/python3.11/asyncio/selector_events.py", "write"), sending]) == (
        "relay"
    )
    assert part_of([("/usr/lib/python3.11/selectors.py", "select")]) == "loop"
    assert part_of([("/usr/lib/python3.11/json/encoder.py", "encode")]) == "other"
