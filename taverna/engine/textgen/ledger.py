"""The ledger of a Text Completion prompt: every part, its source and tokens, and what was cut."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace

from taverna.engine.assembly.summary import named_source
from taverna.engine.textgen.history import Entry, History, Item, entry_source
from taverna.model.injection import ExtensionPosition
from taverna.model.prompt import LedgerItem, ledger_source

_NEWLINES = re.compile(r"\n+")


class TextLedger:
    """The ledger lines of a Text Completion prompt, added as the steps place the parts.

    `tokens(text, padding=0)` counts as the prompt is counted; `collapse_newlines` is
    the setting that collapses the prompt's blank lines, so the pieces are cut the same.
    """

    def __init__(self, tokens: Callable[..., int], *, collapse_newlines: bool) -> None:
        self.tokens = tokens
        self.collapse_newlines = collapse_newlines
        self.items: list[LedgerItem] = []
        self.dropped: list[LedgerItem] = []

    def add(
        self,
        kind: str,
        source: str,
        text: str,
        tokens: int,
        included: bool = True,
        code: str = "",
        source_code: str = "",
        source_params: Mapping[str, str | int] | None = None,
    ) -> None:
        """A line; `code` names its reason (`LEDGER_REASONS`) when it has one, and
        `source_code` the words of its source (`LEDGER_SOURCES`), `source` when empty."""
        self.items.append(
            LedgerItem(
                kind,
                source,
                tokens,
                included,
                text=text,
                code=code,
                source_code=source_code,
                source_params=source_params or {},
            )
        )

    def add_entry(
        self, entry: Entry | None, text: str, tokens: int, included: bool = True, code: str = ""
    ) -> None:
        """The line of a message of the prompt: a chat message or an item the steps made."""
        kind = entry.kind if isinstance(entry, Item) else "history"
        coded = entry if isinstance(entry, Item) else None
        self.add(
            kind,
            entry_source(entry),
            text,
            tokens,
            included,
            code,
            coded.source_code if coded else "",
            coded.source_params if coded else None,
        )

    def accounted(self, text: str, padding: int, *, pieces: bool) -> tuple[LedgerItem, ...]:
        """The ledger's items, with what makes their tokens add up to the prompt's total.

        With `pieces`, the included items are the prompt text cut in order: each gets
        its position (the piece index), so `first_difference` can name the part where
        two text prompts part. Counted apart, pieces cost a few tokens more or less than
        counted together (byte-pair merges across a seam); a `joins` line holds that
        difference, and the token padding SillyTavern adds to every count has its own
        line, so the included items sum to exactly the prompt's total.
        """
        items: list[LedgerItem] = []
        position = 0
        for item in self.items:
            if pieces and item.included and item.text:
                piece = item.text.replace("\r", "")
                if self.collapse_newlines:
                    piece = _NEWLINES.sub("\n", piece)
                tokens = self.tokens(piece) if piece != item.text else item.tokens
                item = replace(item, text=piece, tokens=tokens, position=position)
                position += 1
            items.append(item)
        if not text:
            return tuple(items)
        counted = sum(i.tokens for i in items if i.included)
        if padding:
            items.append(
                LedgerItem(
                    "overhead",
                    "",
                    padding,
                    True,
                    code="token_padding",
                    source_code="token_padding",
                )
            )
        rest = self.tokens(text) - counted
        if rest:
            items.append(
                LedgerItem(
                    "overhead",
                    "",
                    rest,
                    True,
                    code="joins" if pieces else "template_markers",
                    source_code="joins" if pieces else "template",
                )
            )
        return tuple(items)

    def record_dropped(
        self, history: History, placed: dict[int, str], stopped_at: int | None, earlier: int
    ) -> None:
        """One ledger line for the history the context could not hold.

        `earlier` counts the visible messages older than the history given (a long chat
        given by its end); they were not sent either.
        """
        size = len(history)
        dropped = size - len(placed)
        if dropped <= 0:
            return
        newest_index = next(i for i in range(size) if i not in placed)
        oldest_index = next(i for i in range(size - 1, -1, -1) if i not in placed)
        oldest = history.entry(oldest_index)
        newest = history.entry(newest_index)
        span = (
            f"{entry_source(oldest)}..{entry_source(newest)}"
            if dropped > 1
            else entry_source(newest)
        )
        first = history.text(newest_index)
        why = "context_full" if stopped_at is not None else "not_placed"
        self.dropped.append(
            LedgerItem(
                "history",
                span,
                self.tokens(first),
                included=False,
                code="older_not_sent",
                params={"why": why, "n": dropped + earlier},
                text=first,
            )
        )

    def record_parts(
        self,
        before_anchor: str,
        story: str,
        story_source: str,
        after_anchor: str,
        examples: list[str],
        example_count: int,
        pinned: str | None,
        summary_at: tuple[ExtensionPosition, str, str] | None = None,
    ) -> None:
        """The lines of the parts before the chat: anchors, story string, example blocks.

        `summary_at`: the anchor that holds the chat's summary, its key and its message
        (`summary_of`), so the ledger says which summary went in."""

        def anchor(where: str, position: ExtensionPosition, text: str) -> None:
            code, words = where, ledger_source(where, {})
            params: dict[str, str | int] = {}
            if summary_at is not None and summary_at[0] is position:
                named, values = named_source([(summary_at[1], summary_at[2])])
                code, words = f"{where}_named", f"{words}: {named}"
                params = {"name": values.pop("names"), **values}
            self.add("anchor", words, text, self.tokens(text), True, "", code, params)

        if before_anchor:
            anchor("before_story_string", ExtensionPosition.BEFORE_PROMPT, before_anchor)
        self.add("story_string", story_source, story, self.tokens(story))
        if after_anchor:
            anchor("after_story_string", ExtensionPosition.IN_PROMPT, after_anchor)
        for index, example in enumerate(examples):
            kept = pinned is not None or index < example_count
            self.add(
                "example",
                "",
                example,
                self.tokens(example),
                included=kept,
                code="" if kept else "context_full",
                source_code="example_block",
                source_params={"block": index + 1},
            )

    def record_sent(self, final: list[str], sources: list[Entry | None]) -> None:
        """The lines of the messages sent, in prompt order."""
        for text, item in zip(final, sources, strict=True):
            self.add_entry(item, text, self.tokens(text))
