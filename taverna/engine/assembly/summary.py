"""The chat's summary as an extension prompt (SillyTavern's Summarize extension).

algo-chat-ops.md §3.1: the summary is registered under `1_memory` with the settings'
position, depth, role and scan flag, its text the template with `{{summary}}` filled
(`Summary: …` when the template is empty). Where it then lands (before or after the
main prompt or the story string, or in the chat at a depth) is the extension-prompt
placement every other source shares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.injections import SUMMARY_KEY, Injection, InjectionTable

Substitute = Callable[[str, Mapping[str, str]], str]


def summary_text(context: AssemblyContext, substitute: Substitute) -> str:
    """The summary prompt's text before placement, "" when nothing goes in."""
    settings = context.summary_settings
    summary = context.summary
    if not summary or not settings.places_summary:
        return ""
    if settings.template:
        # memory/index.js formatMemoryValue: `{{summary}}` in the template prints the
        # registered macro (the stored summary as written), not the trimmed value.
        return substitute(settings.template, {"summary": summary})
    return f"Summary: {summary.strip()}"


def with_summary(
    table: InjectionTable, context: AssemblyContext, substitute: Substitute
) -> InjectionTable:
    """The table with the summary prompt registered, when the chat has a summary to place."""
    text = summary_text(context, substitute)
    if not text:
        return table
    settings = context.summary_settings
    return table.with_(
        Injection(
            SUMMARY_KEY,
            text,
            settings.position,
            settings.depth,
            settings.role,
            scan=settings.scan,
            kind="summary",
            source=context.summary_at or "summary",
        )
    )


def summary_of(injection: Injection) -> str:
    """The message a summary belongs to; "" for any other extension prompt."""
    return injection.source if injection.kind == "summary" and injection.source else ""


def named_source(names: Sequence[tuple[str, str]]) -> tuple[str, dict[str, str | int]]:
    """Prompts named in a ledger source: the English words and the values a page reads.

    `names` holds each prompt's name and, for a summary, its message (`summary_of`): the
    words name a summary with its message; the values keep the names as written
    (`names`) and the summaries' messages apart (`summary`), for the page's own words.
    """
    words = ",".join(f"{name} (summary of message {of})" if of else name for name, of in names)
    params: dict[str, str | int] = {"names": ",".join(name for name, _ in names)}
    summaries = [of for _, of in names if of]
    if summaries:
        params["summary"] = ",".join(summaries)
    return words, params


def depth_source(
    depth: int, role: str, names: Sequence[tuple[str, str]]
) -> tuple[str, dict[str, str | int]]:
    """A depth injection's ledger source (`depth_injection`): its words and values."""
    words, params = named_source(names)
    return f"depth {depth} {role}: {words}", {"depth": depth, "role": role, **params}
