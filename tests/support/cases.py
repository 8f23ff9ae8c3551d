"""The oracle cases (SillyTavern's recorded prompts) as `taverna prompt` is given them."""

from __future__ import annotations

from pathlib import Path


def case_prompt_args(case: Path, *more: str, card: str = "Aria.json") -> list[str]:
    """`taverna prompt` over an oracle case's settings, card and chat, then `more`."""
    files = ("--settings", case / "settings.json", "--card", case / card)
    return ["prompt", *map(str, files), "--chat", str(case / "chat.jsonl"), *more]
