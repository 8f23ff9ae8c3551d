"""How far up the path a turn reads: the window of the path's end a prompt needs.

The path is read newest first only as far as the prompt reaches. A turn starts from
the window its chat needed last time and widens it while the lorebook scan needs more
visible messages, a macro looks back for a speaker not yet read, or the budget has
room for older messages (`Ledger.history_stopped`).
"""

from __future__ import annotations

from collections.abc import Sequence

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.lorebook.scan import MAX_SCAN_DEPTH
from taverna.model.chat import Node, NodeRole, PathTail
from taverna.model.prompt import Prompt
from taverna.services.turns.choices import TurnLibrary

__all__ = [
    "covered_above",
    "has_both_speakers",
    "oldest_included",
    "scan_floor",
    "widened",
]


def scan_floor(library: TurnLibrary) -> int:
    """Visible messages the lorebook scan may read: the window must hold them (no scan
    reads past its buffer's own limit, algo-world-info.md §2)."""
    if not library.lorebooks and not any(c.embedded_lorebook for c in library.characters):
        return 0
    world = library.settings.world_info
    deepest = max(world.depth, library.deepest_scan)
    if world.min_activations > 0:
        # Min activations scan deeper until enough entries fire, up to the whole chat.
        deepest = max(deepest, world.min_activations_depth_max or MAX_SCAN_DEPTH)
    return min(deepest, MAX_SCAN_DEPTH) + 1


def has_both_speakers(nodes: Sequence[Node]) -> bool:
    """Whether the window holds a visible message of the person and of a character
    (`{{lastUserMessage}}`, `{{lastCharMessage}}` look back for them)."""
    user = char = False
    for node in reversed(nodes):
        if node.hidden:
            continue
        if node.role is NodeRole.USER:
            user = True
        else:
            char = True
        if user and char:
            return True
    return False


def oldest_included(prompt: Prompt, tail: PathTail) -> int:
    """The depth of the oldest message the prompt's history holds (past the path's end
    if none): only messages above it fell outside the context."""
    included = {i.source for i in prompt.ledger.items if i.kind == "history" and i.included}
    depths = [node.depth for node in tail.nodes if node.id in included]
    if depths:
        return min(depths)
    return tail.nodes[-1].depth + 1 if tail.nodes else 0


def widened(want: int, tail: PathTail, prompt: Prompt | None = None) -> int:
    """A wider window: enough for the unused budget at the window's own tokens per message."""
    grown = max(want * 2, len(tail.nodes) * 2, 16)
    if prompt is not None and tail.nodes:
        used = sum(i.tokens for i in prompt.ledger.items if i.kind == "history" and i.included)
        room = prompt.ledger.budget - prompt.ledger.total_tokens
        if used > 0 and room > 0:
            per_message = max(used / len(tail.nodes), 1.0)
            grown = max(grown, int(len(tail.nodes) + 1.25 * room / per_message) + 8)
    return grown


def covered_above(context: AssemblyContext, tail: PathTail) -> bool:
    """Whether everything above the path's end read is hidden by the summary in force
    (its message is in the end read): reading further would add nothing to the prompt."""
    settings = context.summary_settings
    at = context.summary_at
    return bool(
        settings.hide_covered
        and settings.places_summary
        and at
        and any(node.id == at for node in tail.nodes)
    )
