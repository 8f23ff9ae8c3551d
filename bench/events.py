"""The event bus: what announcing an event, intercepting a generation and handing round a
prompt cost, so extensions stay cheap next to a turn.

Figures, each the best of `--repeat` runs in this process:
- one event emitted with no plugin, and with three plugins' handlers (each reading the
  text, so each asks for its grant): microseconds an event;
- a generation's chat copy of `--messages` messages through one interceptor that changes
  one message: milliseconds a turn (the copy and the grant checks, not the path's read);
- a 200-message prompt through one prompt handler that appends a line: microseconds.

Prints a table and the machine's load, then one line of JSON with the figures.

    python bench/events.py [--messages 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taverna.model.chat import Node, NodeRole
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.services.plugins import Event, EventBus, EventName, Plugins, hookimpl

EVENTS = 10_000


class Reader:
    TAVERNA_GRANTS = ("read_chats", "change_prompts")

    def __init__(self) -> None:
        self.chars = 0

    @hookimpl
    def taverna_event(self, event: Any) -> None:
        self.chars += len(event.text)

    @hookimpl
    def taverna_generate_interceptor(self, chat: Any) -> None:
        chat.set_text(len(chat) - 1, "changed")

    @hookimpl
    def taverna_prompt_ready(self, prompt: Any) -> None:
        prompt.append("system", "one more line")


def best(repeat: int, work: Any) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return min(times)


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--messages", type=int, default=10_000)
    options.add_argument("--repeat", type=int, default=5)
    args = options.parse_args()

    event = Event(EventName.MESSAGE_RECEIVED, "chat", "node", "A reply of some length. " * 8)
    bare = EventBus()

    def emit_all(bus: EventBus) -> None:
        for _ in range(EVENTS):
            bus.emit(event)

    bare_s = best(args.repeat, lambda: emit_all(bare))
    plugins = Plugins()
    for index in range(3):
        plugins.register(Reader(), f"reader{index}")
    loaded = EventBus(plugins)
    loaded_s = best(args.repeat, lambda: emit_all(loaded))

    one = Plugins()
    one.register(Reader(), "reader")
    bus = EventBus(one)
    nodes = [
        Node(
            id=f"n{i}",
            chat_id="chat",
            parent_id=f"n{i - 1}" if i else None,
            role=NodeRole.USER if i % 2 else NodeRole.ASSISTANT,
            content=f"message {i}",
            depth=i,
        )
        for i in range(args.messages)
    ]
    intercept_s = best(args.repeat, lambda: bus.intercept("chat", "normal", nodes))
    prompt = Prompt(
        kind="chat", messages=tuple(PromptMessage(Role.USER, f"line {i}") for i in range(200))
    )
    ready_s = best(
        args.repeat,
        lambda: [
            bus.prompt_ready(prompt, chat_id="c", kind="normal", dry_run=False) for _ in range(100)
        ],
    )
    figures = {
        "emit_us_no_plugins": round(bare_s / EVENTS * 1e6, 2),
        "emit_us_three_plugins": round(loaded_s / EVENTS * 1e6, 2),
        "intercept_ms": round(intercept_s * 1000, 2),
        "intercept_messages": args.messages,
        "prompt_ready_us": round(ready_s / 100 * 1e6, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    print(f"{'emit, no plugin':36} {figures['emit_us_no_plugins']:>10} µs")
    print(f"{'emit, three plugins reading text':36} {figures['emit_us_three_plugins']:>10} µs")
    print(f"{'intercept, ' + str(args.messages) + ' messages':36} {figures['intercept_ms']:>10} ms")
    print(f"{'prompt ready, 200 messages':36} {figures['prompt_ready_us']:>10} µs")
    print(f"load average: {figures['load']}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
