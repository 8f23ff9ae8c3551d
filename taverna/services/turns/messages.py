"""A stored message as the engine reads it, and whether a kept reading still holds."""

from __future__ import annotations

from collections.abc import Mapping

from taverna.engine.assembly.context import ChatMessage, Speaker
from taverna.model.chat import Node, NodeRole

__all__ = ["engine_message", "made_from"]

_SPEAKERS = {
    NodeRole.USER: Speaker.USER,
    NodeRole.NARRATOR: Speaker.NARRATOR,
    NodeRole.SYSTEM: Speaker.NARRATOR,
}


def engine_message(node: Node) -> ChatMessage:
    """The message the engine reads for `node`."""
    forced, bias = _carried(node)
    return ChatMessage(
        id=node.id,
        speaker=_SPEAKERS.get(node.role, Speaker.CHARACTER),
        name=node.speaker,
        text=node.content,
        hidden=node.hidden,
        forced_avatar=forced,
        bias=bias,
    )


def _carried(node: Node) -> tuple[bool, str]:
    """What a SillyTavern message carries into the prompt besides its text, kept in the
    node's extras by an import: `force_avatar` (sent under another name: `/sendas`, a
    persona), which the default names behaviour prefixes with the name, and `extra.bias`,
    the message's prompt bias."""
    extras = node.extras
    if not extras:
        return False, ""
    extra = extras.get("extra")
    bias = extra.get("bias") if isinstance(extra, Mapping) else None
    return bool(extras.get("force_avatar")), bias if isinstance(bias, str) else ""


def made_from(message: ChatMessage, node: Node) -> bool:
    """Whether `message` is what `engine_message(node)` makes (the node read again,
    unchanged)."""
    return (
        message.text == node.content
        and message.hidden == node.hidden
        and message.name == node.speaker
        and message.speaker is _SPEAKERS.get(node.role, Speaker.CHARACTER)
        and (message.forced_avatar, message.bias) == _carried(node)
    )
