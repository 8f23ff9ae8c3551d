"""The local model's computed prefixes: the live one, and one kept per recent conversation.

llama.cpp keeps the keys and values it computed for the last prompt (and reply); a
prompt that starts with the same tokens is computed only from where it differs. One
context serves every chat, so switching to another chat (or making a summary) would throw
the first chat's prefix away. Before that happens its sequence state (the cache of those
tokens only, without logits) is copied out; when a later prompt starts with more of a kept
prefix than of the live one, the kept state is copied back in. Nothing needs naming the
chat: a prompt picks the prefix it shares most with, as llama.cpp's own slots do with
`cache_prompt`.

Kept states are bounded by a number and by bytes (the memory free when the model loaded,
a share of it); the least recently used goes first.

Within one conversation, the cache-aware prompt layout puts the parts that change after
the newest message, so the last reply, generated after them, follows a difference; it is
moved into place rather than computed again (`_shift_chunks`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# A live prefix shorter than this is not worth keeping when another prompt replaces it.
KEEP_AT_LEAST = 64


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def chunk_moves(
    live: Sequence[int], tokens: Sequence[int], shared: int, chunk: int
) -> list[tuple[int, int, int]]:
    """The runs of `live` that `tokens` continues with after their first `shared` tokens:
    (where the run is in `live`, where it goes in `tokens`, its length), each at least
    `chunk` long and each following the last with nothing between in `tokens`."""
    moves: list[tuple[int, int, int]] = []
    if chunk <= 0:
        return moves
    at_cache = at_prompt = shared
    while at_cache < len(live) and at_prompt < len(tokens):
        length = 0
        while (
            at_cache + length < len(live)
            and at_prompt + length < len(tokens)
            and live[at_cache + length] == tokens[at_prompt + length]
        ):
            length += 1
        if length >= chunk:
            moves.append((at_cache, at_prompt, length))
            at_cache += length
            at_prompt += length
        else:
            at_cache += 1
    return moves


def _can_shift(ctx: Any) -> bool:
    """Whether the model's cache can move entries to other positions (RoPE models can)."""
    import llama_cpp

    memory = getattr(ctx, "memory", None)
    return memory is not None and bool(llama_cpp.llama_memory_can_shift(memory))


@dataclass
class Kept:
    """One conversation's computed prefix: its tokens and llama.cpp's sequence state."""

    tokens: list[int]
    state: bytes


@dataclass(frozen=True, slots=True)
class Reuse:
    """What a prompt found computed: `reused` of its `total` tokens, and whether that came
    from a kept conversation (`restored`)."""

    reused: int
    total: int
    restored: bool = False


class PrefixSlots:
    """The live prefix of one llama-cpp-python `Llama` and the prefixes kept beside it.

    Not thread-safe: the caller holds the model's lock around `prepare` and generation.
    """

    def __init__(self, model: Any, *, slots: int, budget_bytes: int, chunk: int = 0) -> None:
        self.model = model
        self.chunk = max(0, chunk)  # 0: no run of tokens is moved (see `_shift_chunks`)
        self.slots = max(0, slots)
        self.budget = max(0, budget_bytes)
        self.kept: list[Kept] = []  # least recently used first

    def live(self) -> list[int]:
        """The tokens whose keys and values the context holds now."""
        return list(self.model.input_ids[: self.model.n_tokens])

    def prepare(self, tokens: Sequence[int]) -> Reuse:
        """Make the context hold the computed prefix that `tokens` shares most with; the
        live one is kept when it belongs to another conversation. Returns what is reused
        (llama.cpp computes at least the last token again, for its logits)."""
        live = self.live()
        shared = shared_prefix(live, tokens)
        best = max(self.kept, key=lambda k: shared_prefix(k.tokens, tokens), default=None)
        best_shared = shared_prefix(best.tokens, tokens) if best is not None else 0
        restored = False
        if best is not None and best_shared > shared:
            self._keep(live, shared)
            if self._restore(best):
                shared, restored = best_shared, True
            else:
                shared = 0
        else:
            self._keep(live, shared)
        if self.chunk and not restored:
            shared = self._shift_chunks(live, tokens, shared)
        return Reuse(min(shared, max(len(tokens) - 1, 0)), len(tokens), restored)

    def _shift_chunks(self, live: list[int], tokens: Sequence[int], shared: int) -> int:
        """Reuse what follows a difference, as llama.cpp's `--cache-reuse` does: a run of
        at least `chunk` live tokens that the prompt continues with (the last reply, after
        the volatile parts that stood before it) is moved back to follow the shared prefix
        (its cache entries shifted, the gap dropped) instead of being computed again. The
        moved entries were computed after the dropped ones: an approximation llama.cpp makes
        too. Returns how many of the prompt's tokens the context now holds."""
        moves = chunk_moves(live, tokens, shared, self.chunk)
        if not moves:
            return shared
        ctx = self.model._ctx
        if not _can_shift(ctx):
            return shared
        head = shared
        for cached_at, prompt_at, length in moves:
            ctx.kv_cache_seq_rm(0, prompt_at, cached_at)
            ctx.kv_cache_seq_shift(0, cached_at, cached_at + length, prompt_at - cached_at)
            head = prompt_at + length
        ctx.kv_cache_seq_rm(0, head, -1)
        self.model.input_ids[:head] = tokens[:head]
        self.model.n_tokens = head
        self.model._requires_eval = True
        return head

    def _keep(self, live: list[int], shared: int) -> None:
        """Copy out the live prefix if the next prompt leaves most of it (another chat)."""
        if not self.slots or len(live) < KEEP_AT_LEAST or shared * 2 >= len(live):
            return
        state = self._save()
        if state is None:
            return
        # an older prefix of the same conversation is replaced
        self.kept = [k for k in self.kept if shared_prefix(k.tokens, live) * 2 < len(k.tokens)]
        self.kept.append(Kept(live, state))
        while self.kept and (
            len(self.kept) > self.slots or sum(len(k.state) for k in self.kept) > self.budget
        ):
            self.kept.pop(0)

    def _save(self) -> bytes | None:
        import llama_cpp

        ctx = self.model._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        if not size or size > self.budget:
            return None
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        return bytes(buffer)[:written] if written else None

    def _restore(self, kept: Kept) -> bool:
        """Load a kept prefix into the context (it leaves the kept ones: it is live now)."""
        import llama_cpp

        if kept in self.kept:
            self.kept.remove(kept)
        model = self.model
        model._ctx.kv_cache_seq_rm(0, 0, -1)
        buffer = (ctypes.c_uint8 * len(kept.state)).from_buffer_copy(kept.state)
        if not llama_cpp.llama_state_seq_set_data(model._ctx.ctx, buffer, len(kept.state), 0):
            model.reset()
            return False
        count = len(kept.tokens)
        model.input_ids[:count] = kept.tokens
        model.n_tokens = count
        model._requires_eval = True  # the logits are not the kept prefix's: compute again
        return True
