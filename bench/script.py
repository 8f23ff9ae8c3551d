"""STscript: how fast the interpreter runs commands, parses scripts, and stops a runaway.

Four figures, each the best of `--repeat` runs in this process:
- a counting loop (`/while` with the guard off, `/incvar` each turn) of `--turns` turns:
  commands run per second;
- a closure called with arguments `--turns` times through `/times`: calls per second;
- parsing a 2,000-line script of mixed commands: lines read per second;
- an endless loop stopped at the default step limit (100,000 commands): seconds until
  the error, the time a person waits for it.

Prints a table and the machine's load, then one line of JSON with the figures.

    python bench/script.py [--turns 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taverna.engine.script import CATALOGUE, Limits, ScriptContext, ScriptError, run_script
from taverna.engine.script.parser import parse


def best(repeat: int, work: object) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--turns", type=int, default=10_000)
    options.add_argument("--repeat", type=int, default=3)
    args = options.parse_args()
    turns = args.turns
    limits = Limits(max_steps=10 * turns + 100, max_seconds=3600)

    loop = (
        "/setvar key=i 0 | "
        f"/while left=i right={turns} rule=lt guard=off {{: /incvar i :}} | /getvar i"
    )
    assert run_script(loop, ScriptContext(limits=limits)).pipe == str(turns)
    loop_s = best(args.repeat, lambda: run_script(loop, ScriptContext(limits=limits)))
    loop_commands = 2 * turns  # each turn: the body's /incvar and the condition's re-read

    calls = f"/let f {{: a=1 /add {{{{var::a}}}} 1 :}} | /times guard=off {turns} {{: /:f a=2 :}}"
    assert run_script(calls, ScriptContext(limits=limits)).pipe == "3"
    calls_s = best(args.repeat, lambda: run_script(calls, ScriptContext(limits=limits)))

    lines = [
        '/setvar key=x{n} "value {n}" |',
        '/if left=x{n} right="value {n}" rule=eq {{: /addvar key=hits 1 :}} |',
        "/add {n} 2 3 | /mul {{{{pipe}}}} 2 |",
        "// a comment {n} |",
    ]
    text = "\n".join(lines[n % 4].format(n=n) for n in range(2000))

    def shape(name: str) -> object:
        command = CATALOGUE.get(name)
        return None if command is None else command.shape

    parse_s = best(args.repeat, lambda: parse(text, shape))  # type: ignore[arg-type]

    def runaway() -> None:
        try:
            run_script("/while left=1 right=1 rule=eq guard=off {: /pass :}")
        except ScriptError:
            return
        raise AssertionError("the endless loop was not stopped")

    stop_s = best(args.repeat, runaway)

    figures = {
        "loop_commands_per_s": round(loop_commands / loop_s),
        "closure_calls_per_s": round(turns / calls_s),
        "parse_lines_per_s": round(2000 / parse_s),
        "endless_loop_stopped_after_s": round(stop_s, 3),
        "step_limit": Limits().max_steps,
        "load_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }
    print(f"{'counting loop':<32}{figures['loop_commands_per_s']:>12,} commands/s")
    print(f"{'closure calls with arguments':<32}{figures['closure_calls_per_s']:>12,} calls/s")
    print(f"{'parsing':<32}{figures['parse_lines_per_s']:>12,} lines/s")
    print(
        f"{'endless loop stopped after':<32}{figures['endless_loop_stopped_after_s']:>12} s"
        f" ({figures['step_limit']:,} commands)"
    )
    print(f"machine load (1 min) {figures['load_1m']} on {figures['cpus']} cores")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
