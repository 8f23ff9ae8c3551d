"""The ledger as a person reads it: every part, its source, its tokens, what was cut and why."""

from __future__ import annotations

from taverna.engine.assembly.recall import RECALLED_KIND
from taverna.model.prompt import Ledger, Prompt


def included_tokens(ledger: Ledger) -> int:
    """The tokens of every part that went in (the priming overhead included)."""
    return sum(
        item.tokens
        for item in ledger.items
        if item.included and item.kind not in ("lorebook_entry", RECALLED_KIND)
    )


def render_ledger(prompt: Prompt, width: int = 60) -> str:
    """A plain-text table of the ledger, then what was cut, then the lorebook entries."""
    ledger = prompt.ledger
    lines = [f"{'#':>3}  {'kind':<12} {'tokens':>6}  source / text"]
    cut = []
    entries = []
    recalled = []
    for item in ledger.items:
        if item.kind == "lorebook_entry":
            entries.append(item)
            continue
        if item.kind == RECALLED_KIND:
            recalled.append(item)
            continue
        if not item.included:
            cut.append(item)
            continue
        where = "" if item.position is None else str(item.position)
        preview = " ".join(item.text.split())
        if len(preview) > width:
            preview = preview[: width - 1] + "…"
        lines.append(f"{where:>3}  {item.kind:<12} {item.tokens:>6}  {item.source}  {preview}")
    lines.append(
        f"total {included_tokens(ledger)} tokens of a budget of {ledger.budget}"
        + (f" (prompt total {ledger.total_tokens})" if ledger.total_tokens else "")
    )
    if cut:
        lines.append("")
        lines.append(f"cut ({len(cut)}):")
        for item in cut:
            lines.append(f"     {item.kind:<12} {item.tokens:>6}  {item.source}  {item.reason}")
    if entries:
        lines.append("")
        lines.append("lorebook entries:")
        for item in entries:
            lines.append(f"     {item.source:<24} {item.tokens:>6}  {item.reason}")
    if recalled:
        lines.append("")
        lines.append("recalled messages:")
        for item in recalled:
            mark = "in " if item.included else "cut"
            preview = " ".join(item.text.split())
            if len(preview) > width:
                preview = preview[: width - 1] + "…"
            lines.append(
                f"     {mark} {item.source:<36} {item.tokens:>6}  {item.reason}  {preview}"
            )
    if ledger.skipped_regexes:
        lines.append("")
        lines.append("user regexes stopped by a time limit:")
        for note in ledger.skipped_regexes:
            times = f" ×{note.count}" if note.count > 1 else ""
            lines.append(f"     {note.kind} {note.source} {note.pattern}{times}: {note.reason}")
    if ledger.scanned_books and not ledger.trace:
        lines.append("")
        lines.append(f"lorebooks scanned, nothing matched: {', '.join(ledger.scanned_books)}")
    if ledger.trace:
        lines.append("")
        lines.append("lorebook decisions:")
        for step in ledger.trace:
            where = f"{step.book}/{step.uid}"
            comment = f"  ({step.comment})" if step.comment else ""
            lines.append(f"     {where:<24} {step.outcome.value:<14} {step.reason}{comment}")
    return "\n".join(lines)
