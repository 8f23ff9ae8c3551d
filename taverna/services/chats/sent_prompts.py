"""The prompt each stored reply was generated from, exactly as it was sent.

Kept beside the tree, compressed, and read only when the inspector asks for one
reply's prompt: reading a chat never loads them. A record holds the provider-neutral
prompt with its ledger and lorebook trace, and the request body the API received.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from taverna.model.prompt import Prompt

FORMAT = 1


def _starts(prompt: Prompt) -> dict[int, int]:
    """Where each included part of a text prompt begins in its text (by the part's index
    in the ledger), found in order: what lets a record tell which part holds a character."""
    starts: dict[int, int] = {}
    if prompt.kind != "text":
        return starts
    cursor = 0
    for index, item in enumerate(prompt.ledger.items):
        if item.included and item.text:
            found = prompt.text.find(item.text, cursor)
            if found >= 0:
                starts[index] = found
                cursor = found + len(item.text)
    return starts


def prompt_json(prompt: Prompt) -> dict[str, Any]:
    """A Prompt as plain JSON (what the inspector shows)."""
    ledger = prompt.ledger
    starts = _starts(prompt)
    return {
        "kind": prompt.kind,
        "messages": [
            {"role": m.role.value, "content": m.content, "name": m.name, "source": m.source}
            for m in prompt.messages
        ],
        "text": prompt.text,
        "stop": list(prompt.stop),
        "prefill": prompt.prefill,
        "sampling": dict(prompt.sampling),
        "ledger": {
            "items": [
                {
                    "kind": i.kind,
                    "source": i.source,
                    "tokens": i.tokens,
                    "included": i.included,
                    "reason": i.reason,
                    "code": i.code,
                    "params": dict(i.params),
                    "source_code": i.source_code,
                    "source_params": dict(i.source_params),
                    "position": i.position,
                    # the part's place in a text prompt and its length, so a record
                    # tells which part holds a character
                    "at": starts.get(index),
                    "chars": len(i.text),
                }
                for index, i in enumerate(ledger.items)
            ],
            "total_tokens": ledger.total_tokens,
            "budget": ledger.budget,
            "trace": [t.to_json() for t in ledger.trace],
            "skipped_regexes": [note.to_json() for note in ledger.skipped_regexes],
            "scanned_books": list(ledger.scanned_books),
            "tokenizer": ledger.tokenizer,
            "tokenizer_note": ledger.tokenizer_note,
            "slot_tokens": dict(ledger.slot_tokens),
            "aborted": (
                {"by": ledger.aborted[0], "reason": ledger.aborted[1]} if ledger.aborted else None
            ),
        },
    }


def encode(prompt: Prompt, *, url: str, bodies: Sequence[Mapping[str, Any]]) -> bytes:
    """One reply's record: the prompt and the request sent (the last, when tool rounds
    sent several). Its size follows the prompt's, never the chat's length."""
    record = {
        "format": FORMAT,
        "prompt": prompt_json(prompt),
        "request": {"url": url, "body": dict(bodies[-1])} if bodies else None,
        "rounds": len(bodies),
    }
    return zlib.compress(json.dumps(record, ensure_ascii=False).encode("utf-8"), 6)


def decode(data: bytes) -> dict[str, Any]:
    """A record written by `encode`."""
    record: dict[str, Any] = json.loads(zlib.decompress(data).decode("utf-8"))
    return record
