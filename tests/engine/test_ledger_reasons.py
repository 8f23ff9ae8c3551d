"""Each reason a prompt ledger line can carry has a code whose English sentence the line
keeps, and the page's words for it in English and Chinese."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from taverna.model.prompt import LEDGER_REASONS, LedgerItem, ledger_reason

CATALOGS = Path(__file__).resolve().parents[2] / "taverna" / "web" / "i18n"
# A value a sentence names: `{name}`, or `{name, plural, ...}` (a count's forms).
FIELDS = re.compile(r"\{(\w+)(?:\}|, plural,)")


def test_a_coded_line_reads_as_its_codes_sentence() -> None:
    line = LedgerItem(
        "history", "0..9", 12, False, code="older_not_sent", params={"why": "context_full", "n": 10}
    )
    assert line.reason == "context full: 10 older message(s) not sent"
    assert ledger_reason("recall_below", {"score": "0.120", "threshold": "0.5"}) == (
        "score 0.120; below the threshold of 0.5"
    )
    # a line given its own words keeps them
    assert LedgerItem("x", "y", 0, reason="as written").reason == "as written"


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_every_ledger_code_has_the_pages_words(language: str) -> None:
    catalog = json.loads((CATALOGS / f"{language}.json").read_text(encoding="utf-8"))
    for code, english in LEDGER_REASONS.items():
        said = catalog.get(f"reason.{code}")
        assert said, f"{language}: reason.{code} has no words"
        # the page's sentence names the same values the engine gives
        assert set(FIELDS.findall(said)) == set(FIELDS.findall(english)), code
