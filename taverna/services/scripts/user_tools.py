"""The tools a chat offers the model besides the built-in ones: Quick Reply tools and
plugins' tools.

A Quick Reply with a `tool` (name, description, JSON schema) in one of the chat's active
sets (global or the chat's own) is a tool: a call runs the reply's script in the chat,
in the STscript sandbox (its step and time limits, no file, network or process access),
with each argument as a scoped variable; the script's result is the answer. The chat
variables it reads and sets are the generation's own copy: the reply records them, so
they follow that reply (a regenerated one starts again from the message it answers).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from taverna.engine.script import ScriptError
from taverna.errors import TavernaError
from taverna.model.chat import Chat
from taverna.model.quick_reply import QuickReplyTool
from taverna.providers.request import ToolSpec
from taverna.services.chats.service import ChatService
from taverna.services.plugins import EventBus
from taverna.services.plugins.tools import Tool
from taverna.services.scripts.quick_replies import QuickReplyService
from taverna.services.scripts.runner import ScriptService

__all__ = ["UserTools", "script_arguments"]


def script_arguments(arguments: Mapping[str, Any]) -> dict[str, str]:
    """A tool call's arguments as script variables: text as is, anything else as JSON."""
    return {
        str(name): value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for name, value in arguments.items()
    }


class UserTools:
    """Builds the user tools of a chat when a generation asks (they follow the sets)."""

    def __init__(self, chats: ChatService, events: EventBus) -> None:
        self.chats = chats
        self.events = events

    def __call__(self, chat: Chat, variables: dict[str, Any]) -> list[Tool]:
        """The tools for one generation in `chat`; Quick Reply tools read and set the
        chat variables in `variables` (the generation's copy)."""
        found = {tool.spec.name: tool for tool in self.events.tools()}
        for tool in self.quick_reply_tools(chat, variables):
            found[tool.spec.name] = tool  # the person's own tool wins over a plugin's
        return list(found.values())

    def quick_reply_tools(self, chat: Chat, variables: dict[str, Any]) -> list[Tool]:
        """The tools defined by Quick Replies of the sets active in `chat`."""
        replies = QuickReplyService(self.chats, owner=chat.owner)
        by_name = {s.set.name: s.set for s in replies.sets()}
        tools: list[Tool] = []
        for name in dict.fromkeys([*replies.global_sets(), *replies.chat_sets(chat)]):
            qr_set = by_name.get(name)
            if qr_set is None:
                continue
            for reply in qr_set.qr_list:
                if reply.tool is not None and reply.tool.name.strip():
                    tools.append(self._tool(chat, reply.tool, reply.message, variables))
        return tools

    def _tool(
        self, chat: Chat, spec: QuickReplyTool, script: str, variables: dict[str, Any]
    ) -> Tool:
        parameters = spec.parameters or {"type": "object", "properties": {}}
        owner = chat.owner

        def run_script(arguments: Mapping[str, Any]) -> str:
            scripts = ScriptService(self.chats, owner=owner)
            try:
                done = scripts.run(
                    script,
                    chat_id=chat.id,
                    arguments=script_arguments(arguments),
                    variables=variables,
                )
            except ScriptError as exc:
                raise TavernaError(
                    f"the script of tool {spec.name!r} failed: {exc}",
                    code="script_of_tool_failed",
                    params={"name": str(spec.name), "exc": str(exc)},
                ) from None
            return done.result.pipe

        async def call(arguments: Mapping[str, Any]) -> str:
            # a script may wait on the disk: off the event loop
            return await asyncio.to_thread(run_script, arguments)

        return Tool(ToolSpec(spec.name.strip(), spec.description, parameters), call)
