"""`{{pick}}` draws what SillyTavern draws for an imported chat (algo-chat-ops.md §2.1, §8)."""

from __future__ import annotations

from dataclasses import replace

from taverna.engine.assembly.context import AssemblyContext, ChatMetadata
from taverna.engine.assembly.macros_bridge import chat_id_hash, substitute_for
from taverna.engine.macros import chat_seed
from taverna.engine.macros.seeded import SeededRandom, string_hash

from .helpers import chat, context

SPEC_CHAT = "Seraphina - 2024-9-28@10h00m00s"
SPEC_HASH = 5140172430254442  # the spec's H_chat for SPEC_CHAT
COLOURS = "::".join(f"c{i}" for i in range(10))


def _st_pick(h_chat: int, raw: str, items: list[str], offset: int) -> str:
    """SillyTavern's draw, from the spec's formula: H(H_chat-H(raw)-offset)."""
    seed = string_hash(f"{h_chat}-{string_hash(raw)}-{offset}")
    return items[int(SeededRandom(seed).random() * len(items))]


def _imported(**meta: object) -> AssemblyContext:
    return replace(context(), chat_id="a-renamed-copy", metadata=ChatMetadata(extras=meta))


def test_cached_hash_is_used_as_it_is() -> None:
    """macros.js getChatIdHash: the cached `chat_id_hash` seeds picks, never hashed again."""
    ctx = _imported(chat_id_hash=SPEC_HASH)
    assert chat_id_hash(ctx) == SPEC_HASH
    substitute = substitute_for(ctx)
    assert substitute("I like {{pick::red::green::blue}}.", {}) == "I like red."
    items = [f"c{i}" for i in range(10)]
    for n in range(6):
        raw = f"{'x' * n}{{{{pick::{COLOURS}}}}}"
        assert substitute(raw, {}) == "x" * n + _st_pick(SPEC_HASH, raw, items, n)


def test_without_a_cached_hash_main_chat_then_the_chat_id() -> None:
    """§2.1: no cached hash: the hash of `main_chat`, else of the chat's id (file name)."""
    branch = _imported(main_chat=SPEC_CHAT)
    assert chat_id_hash(branch) == SPEC_HASH
    assert chat_id_hash(_imported(chat_id_hash=0)) == chat_seed("a-renamed-copy")
    named = replace(context(), chat_id=SPEC_CHAT)
    assert substitute_for(named)("I like {{pick::red::green::blue}}.", {}) == "I like red."


def test_a_chat_made_here_is_seeded_by_its_root() -> None:
    """No hash, no id: the root message's id, so every branch of the tree draws the same."""
    one = context(messages=chat(("character", "Hi."), ("user", "A")))
    other = context(messages=chat(("character", "Hi."), ("user", "B"), ("character", "C")))
    assert chat_id_hash(one) == chat_id_hash(other) == chat_seed(one.messages[0].id)
    raw = f"{{{{pick::{COLOURS}}}}}"
    assert substitute_for(one)(raw, {}) == substitute_for(other)(raw, {})
