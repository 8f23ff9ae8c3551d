"""What each part of a Chat Completion prompt costs, counted the way SillyTavern counts.

SillyTavern budgets a Chat Completion prompt message by message, each message
counted with a per-message overhead that depends on the tokenizer family
(algo-prompt-assembly.md §3.7). Using the same overhead makes the same messages
survive the cut.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from taverna.engine.assembly.memo import TurnMemo

CountText = Callable[[str], int]


@dataclass(slots=True)
class MessageCost:
    """Counts one chat message `{role, content, name}` as SillyTavern's client does.

    `family` picks the server's rule (algo-prompt-assembly.md §3.7): `tiktoken`
    (3 per message, every value, 1 more for a name, 3 padding), `tiktoken-0301`
    (gpt-3.5-turbo-0301's 4 per message and -1 per name), `transcript` (the message
    as a legacy `Human:` transcript) or `joined` (the values joined by blank lines).
    The client starts at -1 and takes 2 off unless counting "full"; the Claude
    tokenizer always counts full (`always_full`).
    Counts are cached per (role, content, name) so a turn only counts what is new.
    """

    count_text: CountText
    family: str = "tiktoken"
    always_full: bool = False
    _cache: TurnMemo = field(default_factory=TurnMemo)
    # Work on unchanged chat messages kept for the next turn (prompt parts, macro texts),
    # keyed by what it depends on (a part by its message's id, checked against the object).
    memo: TurnMemo = field(default_factory=TurnMemo)

    def next_turn(self) -> None:
        """A new turn begins: counts and work the last turn did not use are let go."""
        self._cache.next_turn()
        self.memo.next_turn()

    def message(self, role: str, content: str, name: str = "") -> int:
        """Tokens of one message as the budget sees it; empty content costs nothing."""
        if not content:
            return 0
        key = (role, content, name)
        cached: int | None = self._cache.get(key)
        if cached is not None:
            return cached
        tokens = self._count(role, content, name, full=False)
        self._cache[key] = tokens
        return tokens

    def text(self, text: str) -> int:
        """Tokens of a bare text wrapped as one system message, counted "full".

        This is how SillyTavern counts lorebook entries and extension prompts under
        Chat Completion (algo-prompt-assembly.md §3.7).
        """
        key = ("", text, "\x00full")
        cached: int | None = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._count("system", text, "", full=True)
        return cached

    def _count(self, role: str, content: str, name: str, full: bool) -> int:
        if self.family == "transcript":
            # src/prompt-converters.js convertClaudePrompt: a lone message becomes "Human:".
            server = self.count_text("\n\nHuman: " + (f"{name}: " if name else "") + content)
        elif self.family == "joined":
            server = self.count_text("\n\n".join([role, content] + ([name] if name else [])))
        else:
            per_message, per_name = (4, -1) if self.family == "tiktoken-0301" else (3, 1)
            server = per_message + self.count_text(role) + self.count_text(content) + 3
            if name:
                server += self.count_text(name) + per_name
        # public/scripts/tokenizers.js: the client starts at -1 and, unless "full", takes 2 off.
        return -1 + server - (0 if (full or self.always_full) else 2)
