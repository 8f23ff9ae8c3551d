"""Run every benchmark script in this folder, one after another, and echo their output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Scripts run again with these arguments after their default run: load.py's default is
# the burst (the stress figure); a short steady run gives the figure of real use, with a
# busy neighbour on one core, recall on and a burst of 200 sends after it (its targets).
AGAIN: dict[str, list[list[str]]] = {
    "load.py": [["--steady", "30", "--busy-core", "--recall", "--burst", "200"]]
}


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = 0
    for script in sorted(here.glob("*.py")):
        if script.name == Path(__file__).name or script.name.startswith("_"):
            continue
        for extra in [[], *AGAIN.get(script.name, [])]:
            print(f"== {' '.join([script.name, *extra])}", flush=True)
            result = subprocess.run([sys.executable, str(script), *extra], check=False)
            failed += result.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
