"""Token counts of chat messages with SillyTavern's per-message overhead.

SillyTavern's server counts a list of `{role, content, name}` messages one of three
ways depending on the tokenizer (src/endpoints/tokenizers.js `/openai/count`), and
its client sends every message on its own and adjusts the sum
(public/scripts/tokenizers.js `countTokensOpenAI`; algo-prompt-assembly.md §3.7).
Counting the same way makes the same messages survive the budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from taverna.engine.tokens.cache import CountCache
from taverna.engine.tokens.registry import get_tokenizer
from taverna.engine.tokens.selection import message_family

Message = Mapping[str, str]


def claude_transcript(messages: Sequence[Message]) -> str:
    """The messages as the legacy `Human:`/`Assistant:` transcript SillyTavern counts.

    This is SillyTavern's old Claude prompt conversion with every option off, used
    only to count tokens for the Claude, Llama 3, Qwen 2, Command-R and Nemo
    tokenizers.
    """
    if not messages:
        return ""
    roles = [m.get("role", "") for m in messages]
    roles[0] = "system"
    first_assistant = -1
    for i in range(len(messages)):
        if roles[i] == "assistant" and i > 0:
            first_assistant = i
            break
    # Without the system-prompt format the first message is always the human's.
    roles[0] = "user"
    if first_assistant > 0:
        before = first_assistant - 1
        if before != 0 and roles[before] == "user":
            roles[before] = "FixHumMsg"
    parts: list[str] = []
    for i, message in enumerate(messages):
        role = roles[i]
        name = message.get("name", "")
        if role == "assistant":
            prefix = "\n\nAssistant: "
        elif role == "user":
            prefix = "\n\nHuman: "
        elif role == "system":
            if i == 0:
                prefix = ""
            elif name == "example_assistant":
                prefix = "\n\nA: "
            elif name == "example_user":
                prefix = "\n\nH: "
            else:
                prefix = "\n\n"
        elif role == "FixHumMsg":
            prefix = "\n\nFirst message: "
        else:
            prefix = ""
        speaker = f"{name}: " if name and role != "system" else ""
        parts.append(prefix + speaker + message.get("content", ""))
    return "".join(parts)


@dataclass(slots=True)
class MessageCounter:
    """Counts chat messages as SillyTavern does for one tokenizer.

    `tokenizer` is a taverna tokenizer name (see `selection`); `model` is the name
    the client sent to the server (it only matters for gpt-3.5-turbo-0301).
    """

    tokenizer: str
    model: str = ""
    cache: CountCache = field(default_factory=CountCache)
    _messages: dict[tuple[str, str, str], int] = field(default_factory=dict)

    @property
    def family(self) -> str:
        """`tiktoken`, `tiktoken-0301`, `transcript` or `joined`."""
        return message_family(self.tokenizer, self.model)

    def text(self, text: str) -> int:
        """The count of a bare text."""
        return self.cache.count(get_tokenizer(self.tokenizer), text)

    def server_count(self, messages: Sequence[Message]) -> int:
        """What SillyTavern's `/api/tokenizers/openai/count` answers for these messages."""
        family = self.family
        if family == "transcript":
            return self.text(claude_transcript(messages))
        if family == "joined":
            return self.text("\n\n".join(v for m in messages for v in m.values()))
        old = family == "tiktoken-0301"
        per_message, per_name = (4, -1) if old else (3, 1)
        total = 0
        for message in messages:
            total += per_message
            for key, value in message.items():
                total += self.text(value)
                if key == "name":
                    total += per_name
        total += 3
        # src/endpoints/tokenizers.js: gpt-3.5-turbo-0301 adds 9 more since late 2023.
        return total + 9 if old else total

    def message(self, message: Message, full: bool = False) -> int:
        """One message as SillyTavern's client counts it for the budget.

        The client starts from -1, adds the server's count of the message alone and,
        unless `full`, takes 2 off; the Claude tokenizer always counts "full".
        """
        full = full or self.tokenizer == "claude"
        return -1 + self._single(message) - (0 if full else 2)

    def messages(self, messages: Sequence[Message], full: bool = False) -> int:
        """Several messages, each sent on its own, as the client sums them."""
        full = full or self.tokenizer == "claude"
        return -1 + sum(self._single(m) for m in messages) - (0 if full else 2)

    def _single(self, message: Message) -> int:
        key = (message.get("role", ""), message.get("content", ""), message.get("name", ""))
        server = self._messages.get(key)
        if server is None:
            server = self.server_count([message])
            if len(self._messages) >= self.cache.max_entries:
                self._messages.clear()
            self._messages[key] = server
        return server
