"""How fast cards and lorebooks are read and written.

Prints a table, then one line of JSON with the figures (milliseconds per operation).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from taverna.data import SAMPLE_CARD, sample_bytes
from taverna.formats.card_json import card_from_json, read_card_json, write_card_json
from taverna.formats.charx import read_charx, write_charx
from taverna.formats.detect import read_any
from taverna.formats.png_card import read_png_card, write_png_card
from taverna.model.character import CardFile


def timed(action: Callable[[], Any], repeat: int = 7) -> float:
    """Median wall time of `action` in milliseconds."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        runs.append((time.perf_counter() - start) * 1000)
    return statistics.median(runs)


def big_card(entries: int) -> CardFile:
    """The sample card with a generated lorebook of `entries` entries (~1 KiB each)."""
    sample = read_png_card(sample_bytes(SAMPLE_CARD))
    doc = sample.character.to_json()
    text = "The canal lamps burn green; the tide runs backwards at midnight. " * 16
    doc["character_book"] = {
        "name": "Big",
        "entries": [
            {"id": i, "keys": [f"key{i}", f"alias{i}"], "content": text, "enabled": True,
             "insertion_order": 100, "use_regex": True, "extensions": {"position": 0, "depth": 4}}
            for i in range(entries)
        ],
    }  # fmt: skip
    character = card_from_json({"spec": "chara_card_v2", "spec_version": "2.0", "data": doc})
    return CardFile(character, sample.avatar)


def main() -> None:
    figures: dict[str, float] = {}
    sample_png = sample_bytes(SAMPLE_CARD)
    sample = read_png_card(sample_png)
    figures["sample_png_read_ms"] = timed(lambda: read_png_card(sample_png))
    figures["sample_png_write_ms"] = timed(lambda: write_png_card(sample.character, sample.avatar))
    big = big_card(2000)
    big_png = write_png_card(big.character, big.avatar)
    big_json = write_card_json(big.character)
    big_charx = write_charx(big)
    figures["big_card_bytes"] = float(len(big_png))
    figures["big_png_read_ms"] = timed(lambda: read_png_card(big_png), 5)
    figures["big_png_write_ms"] = timed(lambda: write_png_card(big.character, big.avatar), 5)
    figures["big_json_read_ms"] = timed(lambda: read_card_json(big_json), 5)
    figures["big_charx_read_ms"] = timed(lambda: read_charx(big_charx), 5)
    figures["big_detect_and_read_ms"] = timed(lambda: read_any(big_png, "big.png"), 5)
    width = max(map(len, figures))
    print(f"{'figure'.ljust(width)}  value")
    for name, value in figures.items():
        print(f"{name.ljust(width)}  {value:,.1f}")
    print(json.dumps({k: round(v, 2) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
