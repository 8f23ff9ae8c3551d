"""A card larger than the bundled model's context, for real: refused before anything is
sent, naming the model's trained context; the bundled connection runs with that context."""

from __future__ import annotations

import asyncio

import pytest

from taverna.model.chat import CharacterRef
from taverna.services.connections import local_models
from taverna.services.connections.local_models import LocalSpec, default_model_path, trained_context
from taverna.services.house.workspace import (
    Workspace,
)
from taverna.services.library.editing import create_character
from taverna.services.turns import prompt_fit
from taverna.services.turns.runs import Completed, Ending

pytestmark = pytest.mark.skipif(
    not local_models.available(), reason="the `local` extra is not installed"
)

BIG = "The lighthouse keeper remembers every ship that passed the reef. " * 900


def test_the_bundled_model_runs_with_its_trained_context() -> None:
    path = default_model_path()
    assert path is not None and trained_context(path) == 8192
    assert LocalSpec.of("", {}).n_ctx in (8192, local_models.DEFAULT_N_CTX)
    assert LocalSpec.of("", {"n_ctx": 2048}).n_ctx == 2048


def test_a_card_bigger_than_the_context_is_refused(ws: Workspace) -> None:
    document = create_character(ws.library(), {"name": "Vast", "description": BIG})
    chat_id = ws.chats.create_chat(
        "Vast", characters=[CharacterRef("Vast", document)], user_name="Alex"
    ).chat.id

    async def send() -> Completed:
        return await (await ws.generation.send(chat_id, "Tell me about the reef.")).wait()

    done = asyncio.run(send())
    assert done.outcome is Ending.FAILED and done.cause == prompt_fit.CAUSE
    assert "8,192 tokens" in (done.error or "")
