"""Chat jump benchmark: how long the ends and the middle of a 20,000-message chat take to
reach in the page.

The page holds a window of the path; Home, End, the rail's "to the first / last message"
buttons and a drag of the rail's thumb read the page at the place asked for. A real
`taverna serve` over a chat of 20,000 messages (bulk import in a temporary data folder),
Chromium at 1280×800: each way is timed from the key press, click or drop until the
message is in sight (the test's own steps, tests/support/long_chat.py), `--repeat` times,
the worst kept. Target: each ≤ 1 s.

Prints each figure with the target and its ratio and the machine's load; then one line of
JSON.

    python bench/chat_jump.py [--messages 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.stubs.taverna_server import TavernaServer
from tests.support.long_chat import IN_SIGHT, build_long_chat, time_jumps

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
TARGET_S = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    worst: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        chat_id, _ = build_long_chat(data, args.messages)
        server = TavernaServer(data, start_timeout=300).start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
                )
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 800})
                    page.goto(f"{server.url}/#/chat/{chat_id}")
                    page.wait_for_function(IN_SIGHT, arg=args.messages - 1, timeout=60_000)
                    for _ in range(args.repeat):
                        for name, took in time_jumps(page, args.messages).items():
                            worst[name] = max(worst.get(name, 0.0), took)
                finally:
                    browser.close()
        finally:
            server.stop()
    load = os.getloadavg()
    print(f"chat of {args.messages:,} messages, worst of {args.repeat} (load {load[0]:.2f})")
    over = 0
    for name, took in worst.items():
        ratio = took / TARGET_S
        over += ratio > 1
        print(
            f"  {name[:-2]:>14}: {took * 1000:.0f} ms, target {TARGET_S * 1000:.0f} ms, ratio {ratio:.2f}"
        )
    figures = {
        "messages": args.messages,
        **{name: round(took, 3) for name, took in worst.items()},
        "target_s": TARGET_S,
        "load": [round(x, 2) for x in load],
    }
    print(json.dumps(figures))
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
