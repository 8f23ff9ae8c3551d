"""A local model's settings, read without running it: what the worker asks llama.cpp for,
and what a connection may name."""

from __future__ import annotations

from pathlib import Path

import pytest

from taverna.errors import NotFound, ProviderError
from taverna.services.connections.local_models import LocalSpec
from taverna.services.connections.local_process import check_model_file, completion_arguments


def test_completion_arguments_map_llama_cpp_server_fields() -> None:
    body = {
        "prompt": "x",
        "n_predict": 64,
        "temperature": 0.8,
        "top_k": 40,
        "top_p": 0.9,
        "min_p": 0.05,
        "repeat_penalty": 1.1,
        "seed": -1,
        "stop": ["\nUser:", "", 3],
        "cache_prompt": True,
        "mirostat": 0,
    }
    assert completion_arguments(body, 4096) == {
        "temperature": 0.8,
        "top_k": 40,
        "top_p": 0.9,
        "min_p": 0.05,
        "repeat_penalty": 1.1,
        "mirostat_mode": 0,
        "max_tokens": 64,
        "stop": ["\nUser:"],
    }


def test_a_request_naming_no_sampler_gets_the_defaults() -> None:
    arguments = completion_arguments({"prompt": "x"}, 2048)
    assert arguments["repeat_penalty"] == 1.15 and arguments["temperature"] == 0.7


def test_reply_length_is_capped_and_defaults_to_the_context() -> None:
    assert completion_arguments({"n_predict": -1}, 2048)["max_tokens"] == 2048
    assert completion_arguments({"n_predict": 500}, 2048, 48)["max_tokens"] == 48
    assert completion_arguments({"seed": 7}, 2048)["seed"] == 7


def test_a_connection_names_a_gguf_file(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no model file"):
        LocalSpec.of(str(tmp_path / "missing.gguf"), {})
    for odd in ("0" * 5000, "a\x00b.gguf"):  # too long for the system, a NUL inside
        with pytest.raises(NotFound, match="no model file"):
            LocalSpec.of(odd, {})
    # The file is opened and checked by the model's own process, never by the server's.
    other = tmp_path / "notes.gguf"
    other.write_text("hello")
    assert LocalSpec.of(str(other), {}).model == other.resolve()
    with pytest.raises(SystemExit, match="not a GGUF"):
        check_model_file(str(other))
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(20))
    spec = LocalSpec.of(str(model), {"n_ctx": 2048, "threads": "2", "max_tokens": 0})
    assert (spec.model, spec.n_ctx, spec.threads, spec.max_tokens) == (model.resolve(), 2048, 2, 0)
    with pytest.raises(ProviderError, match="n_ctx"):
        LocalSpec.of(str(model), {"n_ctx": "big"})
