"""What a prompt builder gets for one generation, and what it may answer with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.engine.tokens.cache import CountCache
from taverna.model.chat import Chat, Node, PathTail
from taverna.model.prompt import Prompt
from taverna.providers.request import Api
from taverna.services.connections.backend_tokens import BackendTokenizer

# Enough messages to mean "the whole path" for `TurnRequest.path`.
WHOLE_PATH = 1 << 40


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What a prompt builder gets for one generation.

    The path ends at node `end` (None: an empty chat) and is read from its end:
    `tail(n)` gives at least its last `n` live messages (fewer only when that is the
    whole path), hidden ones included (they carry `hidden=True`; the builder leaves
    them out), with how many messages came before and the state in force at `end`.
    A builder reads as far back as its prompt reaches; `path` reads it all, for
    builders that need no more than a short chat.

    For a swipe or a regenerate the path's last node is the reply being replaced: the
    builder leaves it out of the prompt, as SillyTavern's own assembly does
    (algo-chat-ops.md §1.3), and the assembly engine does from the generation type;
    `history` is the path without it. `prefill` tells a continue whether the API
    continues the last message in place (else the builder adds the continue nudge).
    `dry_run` is true for a preview: the builder assembles without lorebook timers
    (`AssemblyContext.dry_run`); on a real generation the prompt's `state` (timers,
    variables) is recorded on the new node. `counts` is the service's long-lived
    token-count cache, for `assemble(counts=...)`, so a turn only tokenizes text no
    earlier turn (of any chat) counted. `speaker`: the group member the prompt is
    assembled for. `model` is the connection's model, when known.
    """

    chat: Chat
    end: str | None
    kind: GenerationType
    api: Api
    prefill: bool
    read: Callable[[int], PathTail]
    dry_run: bool = False
    counts: CountCache | None = None
    # In a group chat, the member who speaks (None: the chat's first character).
    speaker: str | None = None
    # A quiet generation's instruction (a summary's prompt), last in the prompt; with
    # `skip_wi_an` it goes without lorebooks and the author's note.
    quiet_prompt: str = ""
    skip_wi_an: bool = False
    model: str = ""  # the connection's model ("" when unknown): it decides whether pictures go
    # the connection's options (a local model's context size)
    options: Mapping[str, Any] = field(default_factory=dict)
    # the connection's server's own tokenizer, where it has one: what counts the prompt
    # when SillyTavern's tokenizer setting is the API's
    backend: BackendTokenizer | None = None

    def tail(self, want: int) -> PathTail:
        """At least the last `want` live messages of the path (all, if it is shorter)."""
        return self.read(want)

    @property
    def path(self) -> tuple[Node, ...]:
        """The whole path, root first (a read of every message)."""
        return self.read(WHOLE_PATH).nodes

    @property
    def history(self) -> tuple[Node, ...]:
        """The path the model should see: without the reply a swipe or regenerate replaces."""
        path = self.path
        if self.kind in (GenerationType.SWIPE, GenerationType.REGENERATE) and path:
            return path[:-1]
        return path


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """A builder's answer when it has more to say than the prompt.

    `tools`: the function tools the preset offers. `request`: request options the
    preset sets (its provider's `preset_options`); the connection's own choices win over them.
    `function_calling`: the preset turns function calling on, so the chat's user tools
    (Quick Reply and plugin tools) are offered too.
    """

    prompt: Prompt
    tools: tuple[str, ...] = ()
    request: Mapping[str, Any] = field(default_factory=dict)
    function_calling: bool = False


PromptBuilder = Callable[[TurnRequest], Prompt | PreparedTurn]
