"""A summary made with the bundled local model, for real, through the service: it goes to
the model process's own port (not llama.cpp's default one) and is recorded."""

from __future__ import annotations

import asyncio

import pytest

from taverna.model.chat import CharacterRef, NodeRole
from taverna.services.connections import local_models
from taverna.services.house.workspace import (
    Workspace,
)
from taverna.services.memory.summaries import SummaryService

pytestmark = pytest.mark.skipif(
    not local_models.available(), reason="the `local` extra is not installed"
)


def test_a_summary_is_made_with_the_bundled_model(ws: Workspace) -> None:
    chat_id = ws.chats.create_chat(
        "Mira",
        characters=[CharacterRef("Mira")],
        user_name="Alex",
        greetings=["Hello there, I keep the lighthouse."],
        greeting_speaker="Mira",
    ).chat.id
    for role, speaker, line in [
        (NodeRole.USER, "Alex", "Where is the lighthouse?"),
        (NodeRole.ASSISTANT, "Mira", "North, past the reeds, by the old harbour."),
    ]:
        rev = ws.chats.get_chat(chat_id).revision
        ws.chats.append(chat_id, role, line, speaker=speaker, revision=rev)
    assert ws.summaries is not None
    outcome = asyncio.run(ws.summaries.summarize(chat_id))
    assert outcome.text.strip()
    current = SummaryService(ws.chats).current(chat_id)
    assert current is not None and current.text == outcome.text
    running = local_models.local_models().running()
    assert running is not None and running.model == local_models.default_model_path().resolve()  # type: ignore[union-attr]
