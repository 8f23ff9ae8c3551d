"""The generation service against a stub model server and a real SQLite store."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from taverna.engine.assembly.context import GenerationType
from taverna.errors import Conflict
from taverna.model.chat import CharacterRef, NodeRole
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.events import TextDelta
from taverna.providers.request import ToolSpec
from taverna.services.chats.service import ChatService
from taverna.services.connections.service import ConnectionService
from taverna.services.plugins.tools import Tool, ToolRegistry
from taverna.services.turns import (
    Completed,
    Ending,
    GenerationService,
    PreparedTurn,
    Started,
    ToolResult,
    TurnRequest,
)
from taverna.store.sql import SqlStore
from taverna.store.testing import backends, temporary_store
from tests.stubs import Reply, StubServer
from tests.support.folders import connect_stub

KEY = "sk-generation-test-key-0001"

pytestmark = pytest.mark.stub_model(key=KEY)


def simple_builder(turns: list[TurnRequest], tools: tuple[str, ...] = ()) -> Any:
    """A small real prompt builder: a system line, then the visible path as chat messages."""

    def build(turn: TurnRequest) -> Prompt | PreparedTurn:
        turns.append(turn)
        messages = [PromptMessage(Role.SYSTEM, "You are Aria.")]
        for node in turn.history:
            if node.hidden:
                continue
            role = Role.USER if node.role is NodeRole.USER else Role.ASSISTANT
            messages.append(PromptMessage(role, node.content))
        if turn.kind is GenerationType.CONTINUE and not turn.prefill:
            messages.append(PromptMessage(Role.SYSTEM, "[Continue your last message.]"))
        if turn.kind is GenerationType.IMPERSONATE:
            messages.append(PromptMessage(Role.SYSTEM, "[Write the user's next reply.]"))
        prompt = Prompt(kind="chat", messages=tuple(messages), sampling={"openai_max_tokens": 50})
        return PreparedTurn(prompt, tools) if tools else prompt

    return build


@dataclass
class World:
    store: SqlStore
    chats: ChatService
    service: GenerationService
    chat_id: str
    turns: list[TurnRequest]
    stub: StubServer

    def path(self) -> list[tuple[str, str]]:
        return [(n.role.value, n.content) for n in self.store.active_path(self.chat_id).nodes]

    def last_messages(self) -> list[dict[str, Any]]:
        body = self.stub.requests[-1].body
        return body.get("messages") or []


@pytest.fixture(params=backends())
def world(request: pytest.FixtureRequest, tmp_path: Path, stub: StubServer) -> Iterator[World]:
    with temporary_store(request.param, tmp_path) as store:
        connections = connect_stub(ConnectionService(store, tmp_path), stub, anthropic=True)
        turns: list[TurnRequest] = []
        chats = ChatService(store)
        registry = ToolRegistry(
            [
                Tool(
                    ToolSpec("lookup", "Look a word up", {"type": "object", "properties": {}}),
                    lambda args: {"meaning": f"meaning of {args.get('word')}"},
                )
            ]
        )
        service = GenerationService(
            store, connections, simple_builder(turns), chats=chats, tools=registry
        )
        chat = chats.create_chat(
            "Aria", characters=[CharacterRef("Aria")], user_name="Alex", greetings=["Welcome."]
        ).chat
        yield World(store, chats, service, chat.id, turns, stub)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_send_stores_the_message_and_the_reply_with_generation_info(world: World) -> None:
    world.stub.script(Reply(tokens=["Hi", " Alex", "."]))

    async def main() -> Completed:
        generation = await world.service.send(world.chat_id, "Hello")
        return await generation.wait()

    done = run(main())
    assert done.outcome is Ending.SAVED and done.text == "Hi Alex."
    assert world.path() == [("assistant", "Welcome."), ("user", "Hello"), ("assistant", "Hi Alex.")]
    node = world.store.get_node(world.chat_id, done.node_id or "")
    info = node.generation
    assert info is not None and info.provider == "openai" and info.model == "stub-model"
    assert info.prompt_tokens == 12 and info.completion_tokens == 3
    assert info.finish_reason == "stop" and info.started and info.finished
    assert info.extras["connection"] == "stub"
    assert node.speaker == "Aria"
    assert world.last_messages()[-1] == {"role": "user", "content": "Hello"}


def test_swipe_adds_a_candidate_and_leaves_the_current_one_out_of_the_prompt(world: World) -> None:
    world.stub.script(Reply(tokens=["First answer."]), Reply(tokens=["Second answer."]))

    async def main() -> Completed:
        await (await world.service.send(world.chat_id, "Hello")).wait()
        return await (await world.service.swipe(world.chat_id)).wait()

    done = run(main())
    assert done.outcome is Ending.SAVED
    assert world.path()[-1] == ("assistant", "Second answer.")
    contents = [m["content"] for m in world.last_messages()]
    assert "First answer." not in contents and contents[-1] == "Hello"
    candidates = world.chats.candidates(world.chat_id, done.node_id or "")
    assert [c.content for c in candidates] == ["First answer.", "Second answer."]
    assert world.turns[-1].kind is GenerationType.SWIPE
    # the builder sees the reply being replaced last on the path, and leaves it out
    assert world.turns[-1].path[-1].content == "First answer."
    assert world.turns[-1].history[-1].content == "Hello"


def test_regenerate_replaces_the_reply_and_keeps_the_old_one_restorable(world: World) -> None:
    world.stub.script(Reply(tokens=["Old."]), Reply(tokens=["New."]))

    async def main() -> Completed:
        await (await world.service.send(world.chat_id, "Hello")).wait()
        return await (await world.service.regenerate(world.chat_id)).wait()

    done = run(main())
    assert world.path()[-1] == ("assistant", "New.")
    assert "Old." not in [m["content"] for m in world.last_messages()]
    tree = world.store.tree(world.chat_id)
    old = [n for n in tree.nodes if n.content == "Old."]
    assert len(old) == 1 and old[0].deleted
    assert done.node_id != old[0].id


def test_continue_with_prefill_extends_the_message_in_place(world: World) -> None:
    world.stub.script(Reply(tokens=["Start"]), Reply(tokens=[" and", " more."]))

    async def main() -> Completed:
        await (await world.service.send(world.chat_id, "Go on", connection="claude")).wait()
        return await (await world.service.continue_reply(world.chat_id, connection="claude")).wait()

    done = run(main())
    assert done.outcome is Ending.SAVED
    assert world.path()[-1] == ("assistant", "Start and more.")
    assert world.turns[-1].prefill is True
    assert world.last_messages()[-1] == {"role": "assistant", "content": "Start"}


def test_continue_without_prefill_gets_a_nudge(world: World) -> None:
    world.stub.script(Reply(tokens=["Start"]), Reply(tokens=[" then more."]))

    async def main() -> Completed:
        await (await world.service.send(world.chat_id, "Go on")).wait()
        return await (await world.service.continue_reply(world.chat_id)).wait()

    run(main())
    assert world.turns[-1].prefill is False
    assert world.last_messages()[-1]["content"] == "[Continue your last message.]"
    assert world.path()[-1] == ("assistant", "Start then more.")


def test_impersonate_drafts_the_persons_message_and_leaves_the_tree(world: World) -> None:
    world.stub.script(Reply(tokens=["I nod."]))
    before = world.store.get_chat(world.chat_id).revision

    async def main() -> Completed:
        return await (await world.service.impersonate(world.chat_id)).wait()

    done = run(main())
    assert done.outcome is Ending.IMPERSONATED and done.text == "I nod."
    assert world.store.get_chat(world.chat_id).revision == before
    drafts = world.service.drafts(world.chat_id)
    assert [d.text for d in drafts] == ["I nod."]
    world.service.keep_draft(drafts[0].id)
    assert world.path()[-1] == ("user", "I nod.")
    assert world.service.drafts(world.chat_id) == []


def test_a_stream_cut_leaves_the_tree_as_it_was_and_keeps_a_draft(world: World) -> None:
    world.stub.script(Reply(tokens=["Good."]), Reply(tokens=["Part", "ial", " more"], cut_after=2))

    path_before: list[tuple[str, str]] = []

    async def scenario() -> Completed:
        await (await world.service.send(world.chat_id, "Hello")).wait()
        path_before.extend(world.path())
        revision = world.store.get_chat(world.chat_id).revision
        done = await (await world.service.swipe(world.chat_id)).wait()
        assert world.store.get_chat(world.chat_id).revision == revision
        return done

    done = run(scenario())
    assert done.outcome is Ending.FAILED and done.error and "broke" in done.error
    assert world.path() == path_before
    [draft] = world.service.drafts(world.chat_id)
    assert draft.text == "Partial" and draft.kind is GenerationType.SWIPE
    world.service.keep_draft(draft.id)
    assert world.path()[-1] == ("assistant", "Partial")
    assert [
        c.content
        for c in world.chats.candidates(
            world.chat_id, world.store.get_chat(world.chat_id).active_leaf_id or ""
        )
    ] == ["Good.", "Partial"]


def test_stop_closes_the_connection_and_keeps_what_streamed(world: World) -> None:
    world.stub.script(Reply(tokens=[f"w{i} " for i in range(40)], hold_after=3))
    disconnects = world.stub.disconnects

    async def main() -> Completed | None:
        generation = await world.service.send(world.chat_id, "Tell me a story")
        async for _, event in generation.follow():
            if isinstance(event, TextDelta) and generation.text == "w0 w1 w2 ":
                break
        result = await world.service.stop(generation.id)
        for _ in range(200):
            if world.stub.disconnects > disconnects:
                break
            await asyncio.sleep(0.01)
        return result

    done = run(main())
    world.stub.release()
    assert done is not None and done.outcome is Ending.STOPPED
    assert world.stub.disconnects == disconnects + 1
    assert world.path() == [("assistant", "Welcome."), ("user", "Tell me a story")]
    [draft] = world.service.drafts(world.chat_id)
    assert draft.text == "w0 w1 w2 "
    world.service.drop_draft(draft.id)
    assert world.service.drafts(world.chat_id) == []


def test_a_reconnecting_client_replays_then_follows_live(world: World) -> None:
    world.stub.script(Reply(tokens=["a", "b", "c", "d"], hold_after=2))

    async def main() -> tuple[list[Any], list[Any]]:
        generation = await world.service.send(world.chat_id, "Hi")
        first: list[Any] = []
        async for index, event in generation.follow():
            first.append((index, event))
            if generation.text == "ab":
                break  # the page reloads here
        again = world.service.registry.for_chat(world.chat_id, running_only=True)
        assert [g.id for g in again] == [generation.id]
        world.stub.release()
        rest = [e async for e in world.service.registry.get(generation.id).follow(first[-1][0] + 1)]
        return first, rest

    first, rest = run(main())
    events = [e for _, e in first] + [e for _, e in rest]
    assert isinstance(events[0], Started)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "abcd"
    assert isinstance(events[-1], Completed) and events[-1].outcome is Ending.SAVED
    assert [i for i, _ in first] + [i for i, _ in rest] == list(range(len(events)))


def test_a_second_generation_in_the_same_chat_is_refused(world: World) -> None:
    world.stub.script(Reply(tokens=["x", "y"], hold_after=1))

    async def main() -> None:
        generation = await world.service.send(world.chat_id, "Hi")
        with pytest.raises(Conflict):
            await world.service.send(world.chat_id, "Again")
        world.stub.release()
        await generation.wait()

    run(main())
    assert world.path()[-1] == ("assistant", "xy")


def test_a_refused_key_fails_clearly_and_writes_no_reply(world: World, tmp_path: Path) -> None:
    world.service.connections.add(
        "bad",
        "openai",
        url=world.stub.base_url("openai"),
        model="stub-model",
        key="sk-not-the-right-one-42",
    )

    async def main() -> Completed:
        return await (await world.service.send(world.chat_id, "Hi", connection="bad")).wait()

    done = run(main())
    assert done.outcome is Ending.FAILED and done.error and "key" in done.error
    assert "sk-not-the-right-one-42" not in done.error
    assert world.path() == [("assistant", "Welcome."), ("user", "Hi")]
    assert world.service.drafts(world.chat_id) == []


def tool_world(world: World) -> World:
    world.service.build_prompt = simple_builder(world.turns, tools=("lookup",))
    return world


def test_tool_calls_run_feed_back_and_every_step_is_stored(world: World) -> None:
    tool_world(world)
    world.stub.script(
        Reply(tokens=["Let me check."], tool_calls=[("lookup", {"word": "delta"})]),
        Reply(tokens=["A delta is a river mouth."]),
    )

    async def main() -> list[Any]:
        generation = await world.service.send(world.chat_id, "What is a delta?")
        await generation.wait()
        return generation.events

    events = run(main())
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results and json.loads(results[0].result) == {"meaning": "meaning of delta"}
    messages = world.last_messages()
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "lookup"
    assert messages[-1]["role"] == "tool" and "meaning of delta" in messages[-1]["content"]
    nodes = world.store.active_path(world.chat_id).nodes
    step, reply = nodes[-2], nodes[-1]
    assert step.hidden and step.extras["tool_invocations"][0]["name"] == "lookup"
    assert "Let me check." in step.content
    assert reply.content == "A delta is a river mouth."
    assert world.stub.problems == []


def test_tool_rounds_stop_after_five(world: World) -> None:
    tool_world(world)
    looping = Reply(tokens=["again"], tool_calls=[("lookup", {"word": "x"})])
    world.stub.script(*[looping] * 6)
    before = len(world.stub.requests)

    async def main() -> Completed:
        return await (await world.service.send(world.chat_id, "Loop")).wait()

    done = run(main())
    sent = world.stub.requests[before:]
    assert len(sent) == 6
    assert all("tools" in r.body for r in sent[:5]) and "tools" not in sent[5].body
    assert done.outcome is Ending.SAVED and done.text == "again"


def test_failed_reply_and_failed_continue_leave_drafts_that_can_be_kept(world: World) -> None:
    world.stub.script(
        Reply(tokens=["Half a ", "reply", "lost"], cut_after=2),
        Reply(tokens=["Whole."]),
        Reply(tokens=[" And", " more", " lost"], cut_after=2),
    )

    async def main() -> tuple[Completed, Completed, Completed]:
        failed = await (await world.service.send(world.chat_id, "Hi")).wait()
        saved = await (await world.service.regenerate(world.chat_id)).wait()
        extended = await (await world.service.continue_reply(world.chat_id)).wait()
        return failed, saved, extended

    failed, saved, extended = run(main())
    assert failed.outcome is Ending.FAILED and extended.outcome is Ending.FAILED
    assert saved.outcome is Ending.SAVED
    assert world.path()[-1] == ("assistant", "Whole.")
    drafts = world.service.drafts(world.chat_id)
    assert [(d.kind, d.text) for d in drafts] == [
        (GenerationType.NORMAL, "Half a reply"),
        (GenerationType.CONTINUE, " And more"),
    ]
    world.service.keep_draft(drafts[1].id)
    assert world.path()[-1] == ("assistant", "Whole. And more")
    world.service.keep_draft(drafts[0].id)
    # the kept reply becomes another candidate after "Hi"; the person stays where they were
    hi = world.store.active_path(world.chat_id).nodes[1]
    replies = [n.content for n in world.store.children(world.chat_id, hi.id)]
    assert replies == ["Whole. And more", "Half a reply"]
    assert world.path()[-1] == ("assistant", "Whole. And more")


def test_a_broken_prompt_builder_fails_loudly_before_anything_runs(world: World) -> None:
    def broken(turn: TurnRequest) -> Prompt:
        raise KeyError("no such preset")

    world.service.build_prompt = broken

    async def main() -> None:
        with pytest.raises(KeyError):
            await world.service.regenerate(world.chat_id)

    run(main())
    assert world.service.registry.for_chat(world.chat_id, running_only=True) == []


def test_an_unexpected_error_inside_a_run_still_completes_it(world: World) -> None:
    class Exploding(ToolRegistry):
        def specs(self, names: Any) -> tuple[ToolSpec, ...]:
            raise RuntimeError("boom")

    world.service.tools = Exploding()

    async def main() -> Completed:
        return await (await world.service.send(world.chat_id, "Hi")).wait()

    done = run(main())
    assert done.outcome is Ending.FAILED and done.error == "unexpected error: RuntimeError: boom"
    assert world.path() == [("assistant", "Welcome."), ("user", "Hi")]


def test_a_shared_http_client_is_used_and_left_open(world: World) -> None:
    from taverna.providers.transport import model_session

    world.stub.script(Reply(tokens=["One."]), Reply(tokens=["Two."]))

    async def main() -> bool:
        async with model_session() as client:
            world.service.http = client
            await (await world.service.send(world.chat_id, "a")).wait()
            await (await world.service.send(world.chat_id, "b")).wait()
            return client.closed

    assert run(main()) is False
    assert [c for _, c in world.path()][-2:] == ["b", "Two."]


def test_replies_are_cut_at_stop_strings() -> None:
    from taverna.services.turns import trim_at_stop

    stops = ("\nAlex:", "<|im_end|>")
    assert trim_at_stop("Sure.\nAlex: and me", stops) == "Sure."
    assert trim_at_stop("Sure.<|im_end|>\n<|im_start|>", stops) == "Sure."
    assert trim_at_stop("Sure.\nAle", stops) == "Sure."
    assert trim_at_stop("Sure. <|im", stops) == "Sure. "
    assert trim_at_stop("Alexander came.", stops) == "Alexander came."
    assert trim_at_stop("text", ()) == "text"


def test_a_reply_running_into_the_next_turn_is_cut(world: World) -> None:
    def with_stop(turn: TurnRequest) -> Prompt:
        prompt = simple_builder(world.turns)(turn)
        assert isinstance(prompt, Prompt)
        return Prompt(kind="chat", messages=prompt.messages, stop=("\nAlex:",))

    world.service.build_prompt = with_stop
    world.stub.script(Reply(tokens=["Fine.", "\nAlex:", " me too"]))

    async def main() -> Completed:
        return await (await world.service.send(world.chat_id, "Hi")).wait()

    done = run(main())
    assert done.text == "Fine." and world.path()[-1] == ("assistant", "Fine.")


def test_a_prefilled_continue_joins_where_the_api_continued(world: World) -> None:
    world.stub.script(Reply(tokens=["The river "]), Reply(tokens=[" bends."]))

    async def main() -> None:
        await (await world.service.send(world.chat_id, "Go", connection="claude")).wait()
        node = world.store.active_path(world.chat_id).leaf
        assert node is not None
        # the saved reply was trimmed; put a trailing space back as a person's edit would
        world.chats.edit(
            world.chat_id,
            node.id,
            "The river ",
            revision=world.store.get_chat(world.chat_id).revision,
        )
        await (await world.service.continue_reply(world.chat_id, connection="claude")).wait()

    run(main())
    assert world.last_messages()[-1] == {"role": "assistant", "content": "The river"}
    assert world.path()[-1] == ("assistant", "The river bends.")


def test_the_prompt_is_built_off_the_event_loop_which_keeps_answering(world: World) -> None:
    """A slow build (a long chat's cold assembly) must not freeze the server's loop."""
    world.stub.script(Reply(tokens=["Fine", "."]))
    plain = simple_builder(world.turns)
    ticks_wanted = 5
    ticked = threading.Event()
    seen: dict[str, Any] = {}

    def slow(turn: TurnRequest) -> Prompt | PreparedTurn:
        seen["thread"] = threading.get_ident()
        # the builder reads the store like the library builder does, from its thread
        seen["chat"] = world.store.get_chat(turn.chat.id).title
        # The build lasts until the loop has run the ticker several times meanwhile:
        # on the loop itself it never would (the bound only keeps a failure short).
        seen["ticked_meanwhile"] = ticked.wait(timeout=3.0)
        return plain(turn)  # type: ignore[no-any-return]

    world.service.build_prompt = slow

    async def main() -> Completed:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                await asyncio.sleep(0.005)
                ticks += 1
                if ticks >= ticks_wanted:
                    ticked.set()

        seen["loop_thread"] = threading.get_ident()
        running = asyncio.create_task(ticker())
        await asyncio.sleep(0)  # the ticker starts before the build does
        generation = await world.service.send(world.chat_id, "Hello")
        stop.set()
        await running
        return await generation.wait()

    done = run(main())
    assert seen["ticked_meanwhile"] is True
    assert seen["thread"] != seen["loop_thread"]
    assert seen["chat"] == "Aria"
    assert done.outcome is Ending.SAVED
    assert world.path()[-1] == ("assistant", "Fine.")


def test_a_second_start_while_the_first_prompt_builds_is_refused(world: World) -> None:
    world.stub.script(Reply(tokens=["One", "."]))
    plain = simple_builder(world.turns)
    entered = threading.Event()
    release = threading.Event()

    def held(turn: TurnRequest) -> Prompt | PreparedTurn:
        entered.set()
        release.wait(timeout=3.0)
        return plain(turn)  # type: ignore[no-any-return]

    world.service.build_prompt = held

    async def main() -> Completed:
        first = asyncio.create_task(world.service.regenerate(world.chat_id))
        while not entered.is_set():
            await asyncio.sleep(0.005)
        with pytest.raises(Conflict):
            await world.service.swipe(world.chat_id)
        release.set()
        generation = await first
        return await generation.wait()

    done = run(main())
    assert done.outcome is Ending.SAVED
    assert len(world.turns) == 1


@pytest.mark.parametrize("prefix", [True, False])
def test_a_mistral_continue_uses_its_prefix_only_when_the_connection_asks(
    world: World, prefix: bool
) -> None:
    world.service.connections.add(
        "mistral",
        "mistral",
        url=world.stub.base_url("mistral"),
        model="stub-model",
        key=KEY,
        options={"prefix": True} if prefix else {},
    )
    world.stub.script(Reply(tokens=["Start"]), Reply(tokens=[" and more."]))

    async def main() -> Completed:
        await (await world.service.send(world.chat_id, "Go on", connection="mistral")).wait()
        return await (
            await world.service.continue_reply(world.chat_id, connection="mistral")
        ).wait()

    done = run(main())
    assert done.outcome is Ending.SAVED, done.error
    assert world.stub.problems == []
    assert world.turns[-1].prefill is prefix
    last = world.last_messages()[-1]
    if prefix:
        assert last == {"role": "assistant", "content": "Start", "prefix": True}
    else:
        # the continue nudge follows the reply, so Mistral gets it as the user's turn
        assert last == {"role": "user", "content": "[Continue your last message.]"}
    assert world.path()[-1] == ("assistant", "Start and more.")
    info = world.store.active_path(world.chat_id).nodes[-1].generation
    assert info is not None and info.provider == "mistral"


def test_starting_reads_and_writes_the_long_path_off_the_event_loop(world: World) -> None:
    world.stub.script(Reply(tokens=["Fine", "."]))
    threads: list[int] = []
    store_tail = world.store.path_tail

    def recorded(chat_id: str, node_id: str, *, limit: int) -> Any:
        threads.append(threading.get_ident())
        return store_tail(chat_id, node_id, limit=limit)

    world.store.path_tail = recorded  # type: ignore[method-assign]

    async def main() -> tuple[int, Completed]:
        loop_thread = threading.get_ident()
        generation = await world.service.send(world.chat_id, "Hello")
        return loop_thread, await generation.wait()

    loop_thread, done = run(main())
    assert done.outcome is Ending.SAVED
    assert threads and loop_thread not in threads


def test_the_message_is_stored_when_the_start_returns_and_the_prompt_holds_it(
    world: World,
) -> None:
    # The reply takes a moment, so the path read when the start returns is read before it.
    world.stub.script(Reply(tokens=["Fine", "."], delay=0.3))

    async def main() -> tuple[list[tuple[str, str]], Completed]:
        generation = await world.service.send(world.chat_id, "Is the lamp lit?")
        # The start returned: the message is in the tree (the request may be out already).
        stored = world.path()
        return stored, await generation.wait()

    stored, done = run(main())
    assert stored[-1] == ("user", "Is the lamp lit?")
    assert done.outcome is Ending.SAVED
    assert world.last_messages()[-1]["content"].endswith("Is the lamp lit?")
    assert world.path()[-2:] == [("user", "Is the lamp lit?"), ("assistant", "Fine.")]


def test_a_message_that_cannot_be_stored_stops_its_generation_and_stores_nothing(
    world: World,
) -> None:
    world.stub.script(Reply(tokens=["Never", " kept."], delay=0.05))
    before = world.path()

    def refuse(chat: Any, message: Any) -> None:
        raise Conflict("the chat changed since it was read")

    world.service._post = refuse  # type: ignore[method-assign]

    async def main() -> None:
        await world.service.send(world.chat_id, "Lost?")

    with pytest.raises(Conflict):
        run(main())
    assert world.path() == before
    running = world.service.registry.for_chat(world.chat_id, running_only=True)
    assert running == []


def test_a_stream_of_lines_that_are_not_json_fails_naming_them(world: World) -> None:
    world.stub.clear()
    world.stub.script(Reply(raw=["data: Rate limit page\n\n", "data: [DONE]\n\n"]))

    async def main() -> Completed:
        return await (await world.service.send(world.chat_id, "Hi")).wait()

    done = run(main())
    assert done.outcome is Ending.FAILED
    assert done.error and "not JSON" in done.error and "Rate limit page" in done.error
    # No empty reply was stored.
    assert world.path() == [("assistant", "Welcome."), ("user", "Hi")]


def test_the_reply_is_stored_off_the_event_loop(world: World) -> None:
    """A reply's write (tens of statements) runs on the writer's thread: while it runs,
    the event loop goes on serving every other stream."""
    world.stub.script(Reply(tokens=["Hi."]))
    threads: list[int] = []
    add_reply = world.chats.add_reply

    def watched(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return add_reply(*args, **kwargs)

    world.chats.add_reply = watched  # type: ignore[method-assign]

    async def main() -> tuple[Completed, int]:
        generation = await world.service.send(world.chat_id, "Hello")
        return await generation.wait(), threading.get_ident()

    done, loop_thread = run(main())
    assert done.outcome is Ending.SAVED
    assert len(threads) == 1 and threads[0] != loop_thread


def test_a_stop_while_the_reply_is_being_stored_keeps_the_reply(world: World) -> None:
    """Stop arriving during the write: the reply is stored and the run says so; no draft
    repeats it."""
    world.stub.script(Reply(tokens=["Kept", " whole."]))
    writing = threading.Event()
    go_on = threading.Event()
    add_reply = world.chats.add_reply

    def slow(*args: Any, **kwargs: Any) -> Any:
        writing.set()
        go_on.wait(10)
        return add_reply(*args, **kwargs)

    world.chats.add_reply = slow  # type: ignore[method-assign]

    async def main() -> tuple[Completed | None, Completed]:
        generation = await world.service.send(world.chat_id, "Hello")
        while not writing.is_set():
            await asyncio.sleep(0.01)
        stopping = asyncio.create_task(world.service.stop(generation.id))
        await asyncio.sleep(0.05)
        go_on.set()
        return await stopping, await generation.wait()

    stopped, done = run(main())
    assert done.outcome is Ending.SAVED and done.text == "Kept whole."
    assert stopped is None or stopped.outcome is Ending.SAVED
    assert world.path()[-1] == ("assistant", "Kept whole.")
    assert world.service.drafts(world.chat_id) == []
