"""Activation against SillyTavern 1.12.6's recorded requests (oracle cases).

For each case, the entries whose content appears in the request SillyTavern sent must
be exactly the entries `activate` places, in the same order (algo-world-info.md §4, §9).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.lorebook import BookInPlay, BookSource, ScanMessage, activate
from taverna.engine.macros import MacroContext
from taverna.formats.st_settings import read_world_info_settings
from taverna.formats.world_info import read_world_info
from taverna.model.lorebook import Boundaries

CASES = [
    "01_seraphina_basic",
    "02a_eldoria_keywords",
    "03_world_info_features",
    "09b_persona_at_depth_user",
]


def cl100k_message_count() -> Any:
    tokens = pytest.importorskip("taverna.engine.tokens")
    counter = tokens.MessageCounter("cl100k_base")

    def count(text: str) -> int:
        # SillyTavern counts WI text for Chat Completion as one system message, "full"
        # (tokenizers.js counterWrapperOpenAIAsync).
        if not text:
            return 0
        return int(counter.message({"role": "system", "content": text}, full=True))

    return count


def load_case(folder: Path) -> dict[str, Any]:
    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    settings = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
    lines = (folder / "chat.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    messages = [json.loads(line) for line in lines[1:] if line.strip()]
    wi = settings["world_info_settings"]
    global_names = set(wi.get("world_info", {}).get("globalSelect", []))
    books = []
    for name in case["worlds"]:
        path = folder / name
        book = read_world_info(path.read_bytes(), name=path.stem, file=str(path))
        source = BookSource.GLOBAL if book.name in global_names else BookSource.CHARACTER
        books.append(BookInPlay(book, source))
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))["tokenizer"]
    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    return {
        "books": books,
        "messages": [
            ScanMessage(text=m["mes"], name=m["name"]) for m in messages if not m.get("is_system")
        ],
        "settings": replace(read_world_info_settings(wi), boundaries=Boundaries.ASCII),
        "max_context": meta["chat_completion_max_context"] - meta["chat_completion_max_tokens"],
        "macros": MacroContext(user=header["user_name"], char=header["character_name"]),
        "expected": [m["content"] for m in expected["messages"]],
    }


@pytest.mark.parametrize("name", CASES)
def test_activated_entries_are_the_ones_sillytavern_sent(oracle_cases: Path, name: str) -> None:
    data = load_case(oracle_cases / name)
    count = cl100k_message_count()
    result = activate(
        data["books"],
        data["messages"],
        max_context=data["max_context"],
        count_tokens=count,
        settings=data["settings"],
        macros=data["macros"],
    )
    sent = "\n\x00".join(data["expected"])
    activated = {(a.book, a.uid) for a in result.entries}
    # Every entry whose (expanded) content is in the request was activated, no other one.
    for played in data["books"]:
        for entry in played.book.entries:
            appears = any(
                a.content in sent
                for a in result.entries
                if (a.book, a.uid) == (played.book.name, entry.uid)
            )
            if (played.book.name, entry.uid) in activated:
                assert appears, (entry.uid, entry.comment)
            else:
                raw = entry.content.replace("{{user}}", "User").replace("{{char}}", "Seraphina")
                assert raw not in sent, (entry.uid, entry.comment)
    placement = result.placed()
    # Same order as the request: each slot's text is one message verbatim.
    if placement.before:
        assert placement.before_text in data["expected"]
    if placement.after:
        assert placement.after_text in data["expected"]
    for group in placement.depth:
        # a depth group may share its message with other injections at that depth (09b)
        assert any(group.text in message for message in data["expected"]), group.text


def test_case_03_order_and_exclusions(oracle_cases: Path) -> None:
    """case 03: ascending order, ties in reverse activation order; 5,7,9,11,19,20 absent."""
    data = load_case(oracle_cases / "03_world_info_features")
    result = activate(
        data["books"],
        data["messages"],
        max_context=data["max_context"],
        count_tokens=cl100k_message_count(),
        settings=data["settings"],
    )
    uids = {a.uid for a in result.entries}
    assert uids.isdisjoint({5, 7, 9, 11, 19, 20})
    assert {0, 1, 2, 3, 4, 6, 8, 10, 12, 13, 14, 15, 16, 17, 18} <= uids
    assert data["expected"][1] == result.placed().before_text
    trace = {t.uid: t for t in result.trace()}
    assert trace[19].outcome.value == "probability"
    assert trace[20].outcome.value == "disabled"
    assert trace[5].outcome.value == "secondary keys"
    assert trace[13].loop == 2 and trace[14].loop == 3  # the recursion chain


def test_case_02a_recursive_entry_dropped_by_budget(oracle_cases: Path) -> None:
    """case 02a: entry 0 is found by recursion in pass 2, then overflows the 949-token budget."""
    data = load_case(oracle_cases / "02a_eldoria_keywords")
    result = activate(
        data["books"],
        data["messages"],
        max_context=data["max_context"],
        count_tokens=cl100k_message_count(),
        settings=data["settings"],
        macros=data["macros"],
    )
    assert result.budget == 949
    assert [a.uid for a in result.entries] == [1, 2, 3]
    by_uid = {a.uid: a.content for a in result.entries}
    assert result.placed().before == (by_uid[3], by_uid[2], by_uid[1])  # case.md: 3, 2, 1
    trace = {t.uid: t for t in result.trace()}
    assert trace[0].outcome.value == "budget" and trace[0].loop == 2
    assert result.overflowed
