"""The inspector's prefix reuse: where a prompt first differs from the previous reply's, how
many tokens a model server could reuse, and the layout a connection assembles with."""

from __future__ import annotations

from dataclasses import replace

import pytest

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import Speaker
from taverna.engine.assembly.layouts import CACHE, LAYOUTS, SILLYTAVERN, layout_named
from taverna.errors import TavernaError
from taverna.model.character import DepthPrompt
from taverna.providers.request import Api
from taverna.services.chats.sent_prompts import prompt_json
from taverna.services.connections.prompt_layouts import layout_for
from taverna.services.turns.prefix_reuse import compare
from tests.engine.textgen.test_textgen_prompt import message, seraphina


def _turns(count: int) -> tuple[object, ...]:
    return tuple(
        message(i, Speaker.USER, "Alex", f"user line {i} " * 6)
        if i % 2
        else message(i, Speaker.CHARACTER, "Seraphina", f"reply line {i} " * 6)
        for i in range(count)
    )


def _prompt(count: int, layout: object) -> dict[str, object]:
    character = replace(
        seraphina().character, depth_prompt=DepthPrompt(prompt="KEEP TO THE GLADE", depth=4)
    )
    context = seraphina(messages=_turns(count), characters=(character,), layout=layout)
    return prompt_json(assemble(context))


def test_sillytavern_layout_differs_at_the_moved_depth_injection() -> None:
    found = compare(_prompt(9, SILLYTAVERN), _prompt(11, SILLYTAVERN))
    assert not found.identical and not found.measured
    assert found.was is not None and found.was["kind"] == "injection"
    assert 0 < found.reused < found.total


def test_the_cache_layout_reuses_the_whole_chat_up_to_the_new_messages() -> None:
    before, after = _prompt(9, CACHE), _prompt(11, CACHE)
    cached = compare(before, after)
    exact = compare(_prompt(9, SILLYTAVERN), _prompt(11, SILLYTAVERN))
    assert cached.reused > exact.reused
    shared = str(after["text"])[: cached.shared_chars]
    # every message the previous prompt had is shared; it differs where its note was
    assert "reply line 8" in shared and "user line 9" not in shared
    assert cached.was is not None and cached.was["kind"] == "injection"
    assert cached.part is not None and cached.part["kind"] == "history"
    # with SillyTavern's layout the note four messages up breaks it earlier
    assert "reply line 4" in str(after["text"])[: exact.shared_chars]
    assert "user line 5" not in str(after["text"])[: exact.shared_chars]


def test_an_identical_prompt_is_reused_whole() -> None:
    prompt = _prompt(5, CACHE)
    found = compare(prompt, prompt)
    assert found.identical and found.reused == found.total


def test_the_server_reported_figures_win_over_the_estimate() -> None:
    found = compare(_prompt(9, CACHE), _prompt(11, CACHE), reported=(40, 50))
    assert found.measured and (found.reused, found.total) == (40, 50)
    assert found.to_json()["reused_tokens"] == 40


def test_the_local_model_defaults_to_the_cache_layout_and_others_to_sillytavern() -> None:
    assert layout_for(Api.LOCAL, {}) is CACHE
    assert layout_for(Api.OPENAI, {}) is SILLYTAVERN
    assert layout_for(Api.LLAMACPP, {}) is SILLYTAVERN
    assert layout_for(Api.LLAMACPP, {"prompt_layout": "cache"}) is CACHE
    assert layout_for(Api.LOCAL, {"prompt_layout": "SillyTavern"}) is SILLYTAVERN
    assert set(LAYOUTS) == {"sillytavern", "cache"}


def test_an_unknown_layout_is_refused_with_the_known_names() -> None:
    with pytest.raises(TavernaError) as raised:
        layout_named("fastest")
    assert raised.value.code == "unknown_prompt_layout"
    assert "sillytavern, cache" in raised.value.message
