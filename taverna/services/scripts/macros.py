"""The macros a script sees in a chat: the context the chat's next turn is built with.

SillyTavern resolves a script's `{{description}}`, `{{persona}}`, `{{lastMessage}}`,
`{{currentSwipeId}}`, `{{chatStart}}`... (in `/pass`, `/echo`, a Quick Reply) with the
page's whole macro environment, the same one a prompt uses. A script run in a chat here
gets the same: the turn context of the chat's active path (card fields with their own
macros resolved, the chat's scenario override, the persona, the chat's last messages and
swipes, the instruct and context templates), plus what the chat input holds.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from taverna.engine.assemble import tokenizer_name
from taverna.engine.assembly.context import GenerationType
from taverna.engine.assembly.macros_bridge import substitute_for
from taverna.engine.assembly.turn import card_fields
from taverna.engine.macros import MacroContext
from taverna.model.chat import Chat, PathTail
from taverna.providers.request import Api
from taverna.services.turns import TurnRequest
from taverna.services.turns.context import TurnContexts
from taverna.store.repository import Store

# Messages read back from the end of the path: the last message, the last one of each
# side and the swipes are among them (hidden ones count too).
_TAIL = 64


def script_macros(
    store: Store, chat: Chat, *, typed: str = "", now: datetime | None = None
) -> tuple[MacroContext, str]:
    """The macro context of a script run in `chat` (`typed`: the chat input's text), and
    the tokenizer its prompt is counted with (`/tokens`)."""
    contexts = TurnContexts(store, owner=chat.owner)
    library = contexts.library(chat)
    leaf = chat.active_leaf_id
    if leaf is None:
        tail = PathTail((), 0, 0, chat.base_state)
    else:
        tail = contexts.paths.tail(chat, leaf, _TAIL)
    turn = TurnRequest(chat, leaf, GenerationType.NORMAL, Api.OPENAI, False, lambda _want: tail)
    context = contexts.context(turn, library, tail, now or datetime.now(UTC))
    if tail.nodes and context.messages:
        # The last message's swipes are its parent's children ({{currentSwipeId}}...).
        last = tail.nodes[-1]
        siblings = [n.id for n in store.children(chat.id, last.parent_id)]
        if last.id in siblings:
            shown = replace(
                context.messages[-1],
                swipe_index=siblings.index(last.id),
                swipe_count=len(siblings),
            )
            context = replace(context, messages=(*context.messages[:-1], shown))
    macros = substitute_for(context)
    macros.use_card_fields(card_fields(context, macros))
    return replace(macros.context, input=typed), tokenizer_name(context)
