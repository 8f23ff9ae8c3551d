"""The events of a chat, by SillyTavern's names, and what a plugin sees of each.

An `Event` is plain data emitted by the services after the change it reports is
stored. A plugin receives it through an `EventView`, which hands out the message
text only to a plugin granted `read_chats`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from taverna.services.plugins.grants import Grant, GrantRefused

__all__ = ["Event", "EventName", "EventView", "PluginAccess"]


class EventName(StrEnum):
    """The events the services emit, named as SillyTavern's `event_types` values."""

    MESSAGE_SENT = "message_sent"  # the person's message is stored
    MESSAGE_RECEIVED = "message_received"  # a generated reply is stored
    MESSAGE_EDITED = "message_edited"
    MESSAGE_DELETED = "message_deleted"
    MESSAGE_SWIPED = "message_swiped"  # another candidate of a reply is shown
    GENERATION_STARTED = "generation_started"
    GENERATION_ENDED = "generation_ended"  # saved or failed
    GENERATION_STOPPED = "generation_stopped"  # the person stopped it
    CHAT_CHANGED = "chat_id_changed"  # a new chat, a branch switched or a checkpoint opened
    GROUP_MEMBER_DRAFTED = "group_member_drafted"  # a group member is about to write its reply
    CHAT_COMPLETION_PROMPT_READY = "chat_completion_prompt_ready"  # see `PromptView`


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a chat.

    `node_id`: the message concerned (None when none is); `text`: its text (or the
    reply's, for a generation that ended); `kind`: the generation's type (`normal`,
    `swipe`, ...) where there is one; `detail`: anything else worth telling (an
    error, the outcome).
    """

    name: EventName
    chat_id: str
    node_id: str | None = None
    text: str = ""
    kind: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PluginAccess:
    """A plugin's name and grants: every capability handed to it asks here first."""

    name: str
    grants: frozenset[Grant]

    def require(self, grant: Grant, action: str) -> None:
        if grant not in self.grants:
            raise GrantRefused(self.name, grant, action)


class EventView:
    """An event as one plugin sees it: ids and kinds freely, text with `read_chats`."""

    __slots__ = ("_access", "_event")

    def __init__(self, event: Event, access: PluginAccess) -> None:
        self._event = event
        self._access = access

    @property
    def name(self) -> EventName:
        return self._event.name

    @property
    def chat_id(self) -> str:
        return self._event.chat_id

    @property
    def node_id(self) -> str | None:
        return self._event.node_id

    @property
    def kind(self) -> str:
        return self._event.kind

    @property
    def detail(self) -> Mapping[str, Any]:
        return self._event.detail

    @property
    def text(self) -> str:
        self._access.require(Grant.READ_CHATS, f"read the message text of {self.name.value}")
        return self._event.text
