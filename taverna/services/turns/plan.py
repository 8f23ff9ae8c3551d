"""A generation's plan: everything one generation needs, decided before it starts."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taverna.engine.assembly.context import GenerationType
from taverna.model.chat import Chat, Node
from taverna.model.prompt import Prompt
from taverna.providers.events import ToolCall
from taverna.services.connections.service import Connection
from taverna.services.plugins import GenerationAborted
from taverna.services.plugins.tools import ToolRegistry
from taverna.services.turns.runs import RunningGeneration


@dataclass
class Plan:
    """Everything one generation needs, decided before it starts."""

    run: RunningGeneration
    chat: Chat
    connection: Connection
    kind: GenerationType
    anchor: Node | None  # the node replied to, replaced, or continued
    prompt: Prompt
    tools: tuple[str, ...]
    # the tools this generation can run: the process's, and the chat's own user tools
    registry: ToolRegistry
    request: Mapping[str, Any] = field(default_factory=dict)
    continued_text: str = ""
    # the API continued the message with its trailing whitespace cut (Anthropic's prefill)
    continued_stripped: bool = False
    tool_steps: list[tuple[str, ToolCall, str]] = field(default_factory=list)
    # an interceptor stopped it before anything was sent
    aborted: GenerationAborted | None = None
    # the chat variables the prompt was built over, when user tools (scripts) may change
    # them, and the copy the tools' scripts change (the reply records the changes)
    base_variables: Mapping[str, Any] | None = None
    tool_variables: Mapping[str, Any] | None = None
    # The person's message being written while the model is asked (a send): the reply
    # is stored only once it is. Its result is the chat's revision with the message.
    posted: asyncio.Future[int] | None = None
    # who speaks: the character, or in a group chat the member this reply is for
    speaker: str = ""
    members: tuple[str, ...] = ()  # a group chat's members, in the group's order

    @property
    def anchor_id(self) -> str | None:
        return self.anchor.id if self.anchor else None
