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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# A live prefix shorter than this is not worth keeping when another prompt replaces it.
KEEP_AT_LEAST = 64
# At most this many blank tokens (spaces, line breaks) may differ before a moved run.
FRESH = 4


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


@dataclass(frozen=True, slots=True)
class Plan:
    """How a prompt takes over computed tokens after its shared prefix: each segment of
    the live tokens (start, length) moves, in order, to follow the last; `tokens` is the
    prompt as the model is then given it (where a segment's blank tokens, a line break
    the model began a reply with, stand in for the stored reply's own), of which the
    first `head` are computed."""

    segments: tuple[tuple[int, int], ...]
    tokens: list[int]
    head: int


def chunk_plan(
    live: Sequence[int],
    tokens: Sequence[int],
    shared: int,
    chunk: int,
    blank: Callable[[int], bool] = lambda _token: False,
    fresh: int = FRESH,
) -> Plan:
    """The runs of `live` that `tokens` continues with after their first `shared` tokens,
    each with at least `chunk` tokens alike and moved only towards the start. Inside a
    run up to `fresh` tokens that are `blank` (spaces, line breaks) may stand on one side
    only: the live ones are kept, so the prompt reads as the model wrote it."""
    segments: list[tuple[int, int]] = []
    out = list(tokens[:shared])
    at_cache = at_prompt = shared
    while chunk > 0 and at_cache < len(live) and at_prompt < len(tokens):
        found = None
        for cached_at in range(max(at_cache, len(out)), len(live)):
            if live[cached_at] != tokens[at_prompt]:
                continue
            alike, cached_end, prompt_end = _run(live, cached_at, tokens, at_prompt, blank, fresh)
            if alike >= chunk:
                found = (cached_at, cached_end, prompt_end)
                break
        if found is None:
            break
        start, cached_end, prompt_end = found
        segments.append((start, cached_end - start))
        out.extend(live[start:cached_end])
        at_cache, at_prompt = cached_end, prompt_end
    return Plan(tuple(segments), out + list(tokens[at_prompt:]), len(out))


def _run(
    live: Sequence[int],
    at_cache: int,
    tokens: Sequence[int],
    at_prompt: int,
    blank: Callable[[int], bool],
    fresh: int,
) -> tuple[int, int, int]:
    """How many tokens `live` from `at_cache` and `tokens` from `at_prompt` have alike,
    passing over at most `fresh` blank ones that only one side has; and where the run ends
    on each side (after its last alike token)."""
    cached, prompted, alike, skipped = at_cache, at_prompt, 0, 0
    ends = (at_cache, at_prompt)
    while cached < len(live) and prompted < len(tokens):
        if live[cached] == tokens[prompted]:
            cached, prompted, alike = cached + 1, prompted + 1, alike + 1
            ends = (cached, prompted)
        elif skipped < fresh and blank(live[cached]):
            cached, skipped = cached + 1, skipped + 1
        elif skipped < fresh and blank(tokens[prompted]):
            prompted, skipped = prompted + 1, skipped + 1
        else:
            break
    return alike, ends[0], ends[1]


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
    # the prompt as the model is given it (see `Plan.tokens`); empty: as it came
    tokens: tuple[int, ...] = ()


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
        self._blanks: dict[int, bool] = {}

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
        given: Sequence[int] = tokens
        if self.chunk and not restored:
            shared, given = self._shift_chunks(live, tokens, shared)
        return Reuse(min(shared, max(len(given) - 1, 0)), len(given), restored, tuple(given))

    def _blank(self, token: int) -> bool:
        """Whether a token is only spaces or line breaks (special tokens are not)."""
        found = self._blanks.get(token)
        if found is None:
            text = self.model.detokenize([token], special=True)
            found = self._blanks[token] = bool(text) and not text.strip()
        return found

    def _shift_chunks(
        self, live: list[int], tokens: Sequence[int], shared: int
    ) -> tuple[int, Sequence[int]]:
        """Reuse what follows a difference, as llama.cpp's `--cache-reuse` does: runs of
        at least `chunk` live tokens that the prompt continues with (the last reply, after
        the volatile parts that stood before it) are moved back to follow the shared
        prefix (their cache entries shifted, the gap dropped) instead of being computed
        again. The moved entries were computed after the dropped ones: an approximation
        llama.cpp makes too. Returns how many of the prompt's tokens the context now
        holds, and the prompt as the model is given it."""
        plan = chunk_plan(live, tokens, shared, self.chunk, self._blank)
        model = self.model
        ctx = model._ctx
        if not plan.segments or not _can_shift(ctx):
            return shared, tokens
        head = shared
        for start, count in plan.segments:
            ctx.kv_cache_seq_rm(0, head, start)
            ctx.kv_cache_seq_shift(0, start, start + count, head - start)
            head += count
        ctx.kv_cache_seq_rm(0, head, -1)
        model.input_ids[:head] = plan.tokens[:head]
        model.n_tokens = head
        model._requires_eval = True
        return head, plan.tokens

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
