"""A reply keeps what the API's prompt cache saved, and the inspector shows it: Claude's
breakpoints set on the connection, the next turn read from the cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from taverna.model.chat import CharacterRef, NodeRole
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.turns import GenerationService, TurnRequest
from taverna.services.turns.inspector import inspect_prompt
from taverna.store.sql import SqlStore
from tests.stubs import Reply, StubServer

KEY = "sk-cache-replies"
pytestmark = pytest.mark.stub_model(key=KEY, models=("claude-3-5-sonnet", "deepseek-chat"))


def _build(turn: TurnRequest) -> Prompt:
    messages = [PromptMessage(Role.SYSTEM, "You are Aria, keeper of the lighthouse. " * 20)]
    for node in turn.history:
        role = Role.USER if node.role is NodeRole.USER else Role.ASSISTANT
        messages.append(PromptMessage(role, node.content))
    return Prompt(kind="chat", messages=tuple(messages), sampling={"openai_max_tokens": 50})


def _service(store: SqlStore, tmp_path: Path, stub: StubServer) -> tuple[GenerationService, str]:
    connections = ConnectionService(store, tmp_path)
    connections.add(
        "claude",
        "claude",
        url=stub.base_url("anthropic"),
        model="claude-3-5-sonnet",
        key=KEY,
        options={"use_system_prompt": True, "cache_system_prompt": True, "caching_at_depth": 0},
    )
    connections.add(
        "deepseek", "deepseek", url=stub.base_url("openai"), model="deepseek-chat", key=KEY
    )
    chats = ChatService(store)
    service = GenerationService(store, connections, _build, chats=chats)
    chat = chats.create_chat("Aria", characters=[CharacterRef("Aria")], greetings=["Welcome."])
    return service, chat.chat.id


def _send(service: GenerationService, chat_id: str, text: str, connection: str) -> str:
    async def main() -> str:
        done = await (await service.send(chat_id, text, connection=connection)).wait()
        assert done.node_id
        return done.node_id

    return asyncio.run(main())


def test_the_second_claude_turn_reads_the_first_ones_prefix_from_the_cache(
    store: SqlStore, tmp_path: Path, stub: StubServer
) -> None:
    stub.prompt_cache.clear()
    service, chat_id = _service(store, tmp_path, stub)
    first = _send(service, chat_id, "Is the lamp lit?", "claude")
    sent = stub.requests[-1].body
    assert sent["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert stub.requests[-1].problems == []
    second = _send(service, chat_id, "And the fog bell?", "claude")
    made = [store.get_node(chat_id, n).generation for n in (first, second)]
    assert made[0] is not None and made[1] is not None
    assert made[0].extras["cached_tokens"] == 0 and made[0].extras["cache_write_tokens"] > 0
    assert made[1].extras["cached_tokens"] >= made[0].extras["cache_write_tokens"]
    shown = inspect_prompt(service, chat_id, second).usage
    assert shown is not None
    assert shown["cached"] == made[1].extras["cached_tokens"]
    assert shown["prompt"] == made[1].prompt_tokens
    assert shown["new"] == shown["prompt"] - shown["cached"]
    assert shown["written"] == made[1].extras["cache_write_tokens"]
    # the next prompt has no reply yet: nothing to show
    assert inspect_prompt(service, chat_id, None).usage is None


def test_a_deepseek_reply_keeps_its_cache_hits(
    store: SqlStore, tmp_path: Path, stub: StubServer
) -> None:
    service, chat_id = _service(store, tmp_path, stub)
    stub.script(Reply(tokens=["Lit."], input_tokens=640, cached_tokens=512, cache_usage="deepseek"))
    node = _send(service, chat_id, "Is the lamp lit?", "deepseek")
    info = store.get_node(chat_id, node).generation
    assert info is not None and info.prompt_tokens == 640
    assert info.extras["cached_tokens"] == 512 and "cache_write_tokens" not in info.extras
    shown = inspect_prompt(service, chat_id, node).usage
    assert shown is not None and (shown["cached"], shown["new"]) == (512, 128)
