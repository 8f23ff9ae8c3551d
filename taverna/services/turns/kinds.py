"""The kinds a generation starts as, as data: for each, what the path's end makes it
answer (`choose`). Send, regenerate, swipe, continue and impersonate are one start with
a different row of this table."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from taverna.engine.assembly.context import GenerationType
from taverna.errors import TavernaError
from taverna.model.chat import Node, NodeRole, PathTail

# From the end of the active path: the kind the generation is, and the node it answers,
# replaces or continues (None: an empty chat).
Choice = tuple[GenerationType, Node | None]
Chooser = Callable[[PathTail], Choice]


def _leaf(end: PathTail) -> Node | None:
    return end.nodes[-1] if end.nodes else None


def _length(end: PathTail) -> int:
    """Live messages on the whole path."""
    return end.before + len(end.nodes)


def _reply(end: PathTail) -> Choice:
    """A reply to the last message."""
    return GenerationType.NORMAL, _leaf(end)


def _regenerate(end: PathTail) -> Choice:
    """The last reply again; with no reply to replace (or only the greeting), a reply."""
    leaf = _leaf(end)
    if leaf is not None and leaf.role is NodeRole.ASSISTANT and _length(end) > 1:
        return GenerationType.REGENERATE, leaf
    return GenerationType.NORMAL, leaf


def _swipe(end: PathTail) -> Choice:
    """A candidate beside the last reply, which must be a generated one."""
    leaf = _leaf(end)
    if leaf is None or leaf.role is not NodeRole.ASSISTANT:
        raise TavernaError(
            "only a reply of the character can be swiped",
            field="chat",
            code="swipe_needs_character_reply",
        )
    if _length(end) == 1:
        # algo-chat-ops.md §1.2: a greeting's candidates are its alternate greetings
        raise TavernaError(
            "the greeting has no generated swipes; pick an alternate greeting",
            code="greeting_has_no_swipes",
        )
    return GenerationType.SWIPE, leaf


def _continue(end: PathTail) -> Choice:
    """The last message, extended."""
    leaf = _leaf(end)
    if leaf is None:
        raise TavernaError(
            "there is nothing to continue", field="chat", code="there_is_nothing_to_continue"
        )
    return GenerationType.CONTINUE, leaf


def _impersonate(end: PathTail) -> Choice:
    """The person's next message, after the last one."""
    return GenerationType.IMPERSONATE, _leaf(end)


CHOOSERS: Mapping[GenerationType, Chooser] = {
    GenerationType.NORMAL: _reply,
    GenerationType.REGENERATE: _regenerate,
    GenerationType.SWIPE: _swipe,
    GenerationType.CONTINUE: _continue,
    GenerationType.IMPERSONATE: _impersonate,
}

# The kinds a person asks for by name (the generate route's `kind`). A regenerate asked
# for keeps the old reply as a candidate (nothing is lost): it is a swipe.
ASKED: Mapping[str, GenerationType] = {
    "normal": GenerationType.NORMAL,
    "regenerate": GenerationType.SWIPE,
    "swipe": GenerationType.SWIPE,
    "continue": GenerationType.CONTINUE,
    "impersonate": GenerationType.IMPERSONATE,
}

# The kinds a group member answers with (an empty answer is told, not stored).
ANSWERS = (GenerationType.NORMAL, GenerationType.REGENERATE, GenerationType.SWIPE)
# The kinds that put a new reply where the last one was (the old one is not the model's
# to see).
REPLACING = (GenerationType.SWIPE, GenerationType.REGENERATE)
