"""Prefix reuse on the bundled model, for real: the local process computes only what a
prompt does not share with the last one, keeps another conversation's prefix when a
different prompt comes between, and a chat's turns on the cache-aware layout reuse nearly
all of the prompt, as the inspector then says."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext, open_context
from taverna.services.connections import local_models
from taverna.services.connections.local_models import default_model_path
from taverna.services.house.workspace import LOCAL_CONNECTION, seed_local_model
from tests.support.api import events, generate

pytestmark = pytest.mark.skipif(
    not local_models.available(), reason="the `local` extra is not installed"
)

HARBOUR = "The lighthouse keeper wrote in her log every night, one line per ship. " * 8
MARKET = "A merchant counted coins by candlelight while the market slept around him. " * 8


@pytest.fixture(scope="module")
def generator() -> Any:
    from taverna.services.connections.local_process import Generator

    return Generator(str(default_model_path()), 1024, None, max_tokens=2, slots=2)


def last_chunk(generator: Any, prompt: str) -> dict[str, Any]:
    chunks: list[dict[str, Any]] = []
    generator.run({"prompt": prompt, "n_predict": 2}, chunks.append, threading.Event())
    assert "error" not in chunks[-1], chunks[-1]
    return chunks[-1]


def test_a_prompt_that_grows_is_computed_only_from_where_it_grew(generator: Any) -> None:
    first = last_chunk(generator, HARBOUR)
    grown = last_chunk(generator, HARBOUR + "Then the storm came.")
    assert grown["tokens_evaluated"] > first["tokens_evaluated"]
    assert grown["tokens_cached"] >= first["tokens_evaluated"] - 1
    assert grown["timings"]["prompt_n"] == grown["tokens_evaluated"] - grown["tokens_cached"]
    assert grown["timings"]["prompt_n"] <= 8


def test_another_conversation_between_does_not_lose_the_first_ones_prefix(
    generator: Any,
) -> None:
    harbour = last_chunk(generator, HARBOUR + "The sea rose.")
    other = last_chunk(generator, MARKET)
    assert other["tokens_cached"] < 8  # nothing shared: computed whole
    back = last_chunk(generator, HARBOUR + "The sea rose. A ship came in.")
    assert back["prefix_restored"] is True
    assert back["tokens_cached"] >= harbour["tokens_evaluated"] - 1
    # and the market's prefix was kept in its turn
    again = last_chunk(generator, MARKET + "He closed his box.")
    assert again["prefix_restored"] is True
    assert again["tokens_cached"] >= other["tokens_evaluated"] - 1


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    context: AppContext = open_context(tmp_path_factory.mktemp("prefix") / "data")
    assert seed_local_model(context.connections) == LOCAL_CONNECTION
    with TestClient(create_app(context)) as test_client:
        yield test_client
    local_models.local_models().stop()
    context.close()


def say(client: TestClient, chat_id: str, text: str) -> dict[str, Any]:
    """Send `text`; the inspector's view of the reply."""
    seen = events(client, generate(client, chat_id, kind="normal", text=text)["task"]["id"])
    assert seen[-1][0] == "done", seen[-1]
    reply = client.get(f"/api/chats/{chat_id}").json()["messages"][-1]
    view: dict[str, Any] = client.get(f"/api/chats/{chat_id}/messages/{reply['id']}/prompt").json()
    return view


def test_a_chat_on_the_bundled_connection_reuses_its_prefix_turn_after_turn(
    client: TestClient,
) -> None:
    card = client.post(
        "/api/characters",
        json={
            "name": "Mira",
            "description": "A friendly lighthouse keeper on a windy island. " * 6,
            "first_mes": "Hello there, traveller.",
        },
    ).json()
    chat_id = client.post("/api/chats", json={"character_id": card["id"]}).json()["id"]
    first = say(client, chat_id, "Hi Mira, what do you do here?")
    second = say(client, chat_id, "Is the lamp hard to keep lit?")
    assert first["reuse"] is None or first["reuse"]["previous_reply"] == ""
    reuse = second["reuse"]
    assert reuse is not None and reuse["measured"], reuse
    assert reuse["reused_tokens"] >= 0.75 * reuse["total_tokens"], reuse
    # the next prompt's estimate, before anything is sent
    upcoming = client.get(f"/api/chats/{chat_id}/prompt").json()["reuse"]
    assert upcoming is not None and not upcoming["measured"]
    assert upcoming["reused_tokens"] >= 0.75 * upcoming["total_tokens"], upcoming


def test_the_last_reply_after_a_dropped_note_is_not_computed_again(generator: Any) -> None:
    """The cache-aware layout's turn: the note that preceded the reply goes, the reply
    stays (moved into place), only the new message and the new note are computed."""
    story = (
        "<|im_start|>system\n"
        + HARBOUR
        + "<|im_end|>\n<|im_start|>user\nTell me of the sea.<|im_end|>\n"
    )
    reply = "The sea was grey and wide, and the ships came home one by one before the storm. " * 2
    generator.slots.model.reset()
    # the model began with a line break the stored reply does not keep
    last_chunk(
        generator,
        story
        + "<|im_start|>system\nLore: the lamp is old.<|im_end|>\n<|im_start|>assistant\n\n"
        + reply,
    )
    following = last_chunk(
        generator,
        story
        + "<|im_start|>assistant\n"
        + reply
        + "<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n"
        + "<|im_start|>system\nLore: the sea is wild.<|im_end|>\n<|im_start|>assistant\n",
    )
    computed = following["timings"]["prompt_n"]
    assert computed <= 40, following  # the new message, the new note, the turn's opening
    assert following["tokens_cached"] >= following["tokens_evaluated"] - 40
