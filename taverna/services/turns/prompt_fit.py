"""Whether a prompt can fit its connection's context before it is sent.

A turn's chat history and lorebook entries shrink to the budget; the rest of the prompt
(the card's description, personality, scenario and kept examples, the persona, the system
prompt and the other fixed slots, the template's own tokens) does not. When that fixed
part alone is larger than the context leaves after the reply, the model can only refuse
it ("requested tokens exceed context window"), and trying again cannot help: the turn is
refused here, before any request, saying what is too big, by how much, and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from taverna.errors import TavernaError
from taverna.model.prompt import Prompt
from taverna.providers.request import Api
from taverna.services.connections.local_models import LocalSpec, trained_context
from taverna.services.connections.service import Connection

# Parts the budget may leave out or shorten: never the reason a prompt cannot fit.
SHRINKING_KINDS = frozenset(
    {"history", "lorebook", "lorebook_entry", "recall", "summary", "example", "error"}
)
REQUIRED_LEFT_OUT = "required_does_not_fit"  # a ledger line's code
CAUSE = "prompt_too_big"  # the failure's cause, which the page says cannot be retried


@dataclass(frozen=True, slots=True)
class Overflow:
    """A prompt whose fixed parts exceed its budget: their tokens, the budget, and the
    biggest of them (kind, source, tokens), biggest first."""

    fixed_tokens: int
    budget: int
    biggest: tuple[tuple[str, str, int], ...]

    @property
    def excess(self) -> int:
        return self.fixed_tokens - self.budget

    def message(self, connection: str, context: tuple[int, int] | None = None) -> str:
        """The explanation a person reads, with the numbers and what to do; `context`:
        a local model's (context it runs with, context it was trained for)."""
        parts = ", ".join(
            f"{_part_name(kind, source)} {tokens:,}" for kind, source, tokens in self.biggest
        )
        if context is not None and context[0] >= context[1]:
            advice = (
                f"The model already runs with all the {context[1]:,} tokens it was trained "
                f"for: trim the card, or switch to a connection with a larger context."
            )
        else:
            limit = (
                f"up to the {context[1]:,} tokens the model was trained for, " if context else ""
            )
            advice = (
                f"Raise the connection's context ({limit}as far as memory allows), trim the "
                f"card, or switch to a connection with a larger context."
            )
        return (
            f"the prompt cannot fit: its fixed parts (the card, persona, system prompt and "
            f"other kept slots) take {self.fixed_tokens:,} tokens, {self.excess:,} more than "
            f"the {self.budget:,} that connection {connection!r} leaves for the prompt once "
            f"the reply's tokens are set aside (biggest: {parts}). {advice}"
        )


def _part_name(kind: str, source: str) -> str:
    if kind == "story_string":
        return "the story string (card and persona)"
    if kind == "card":
        return f"the card's {source}"
    return f"{kind.replace('_', ' ')} {source}".strip()


def overflow(prompt: Prompt) -> Overflow | None:
    """The overflow of `prompt`'s fixed parts, None when they fit (or nothing was counted)."""
    ledger = prompt.ledger
    if ledger.budget <= 0:
        return None
    # Chat Completion leaves out a required part that does not fit (and says so): it
    # counts as fixed all the same, the prompt being useless without it.
    fixed = [
        i
        for i in ledger.items
        if (i.included or i.code == REQUIRED_LEFT_OUT) and i.kind not in SHRINKING_KINDS
    ]
    total = sum(i.tokens for i in fixed)
    if total <= ledger.budget:
        return None
    ranked = sorted((i for i in fixed if i.kind != "overhead"), key=lambda i: -i.tokens)
    biggest = tuple((i.kind, i.source, i.tokens) for i in ranked[:3] if i.tokens * 20 >= total)
    return Overflow(total, ledger.budget, biggest)


def local_context(connection: Connection) -> tuple[int, int] | None:
    """A local connection's (context it runs with, context its model was trained for);
    None for another API, or when the model's file does not say."""
    if connection.api is not Api.LOCAL:
        return None
    try:
        spec = LocalSpec.of(connection.model, connection.options)
    except TavernaError:
        return None
    trained = trained_context(spec.model)
    return (spec.n_ctx, trained) if trained else None
