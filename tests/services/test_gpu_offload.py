"""Where llama.cpp runs a local model's layers: all on the GPU where its build can offload,
none otherwise, unless the connection says how many (`n_gpu_layers`)."""

from __future__ import annotations

import pytest

from taverna.services.connections import gpu_offload
from taverna.services.connections.local_models import LocalSpec, default_model_path


def test_every_layer_on_a_gpu_where_llama_cpp_can_offload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_offload, "supported", lambda: True)
    assert gpu_offload.layers({}) == gpu_offload.ALL_LAYERS
    assert gpu_offload.describe({}) == "gpu"
    assert gpu_offload.layers({"n_gpu_layers": 12}) == 12
    assert gpu_offload.describe({"n_gpu_layers": 12}) == "gpu:12"
    assert gpu_offload.describe({"n_gpu_layers": 0}) == "cpu"


def test_the_cpu_alone_where_it_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_offload, "supported", lambda: False)
    assert gpu_offload.layers({}) == 0
    assert gpu_offload.layers({"n_gpu_layers": -1}) == 0
    assert gpu_offload.describe({"n_gpu_layers": 20}) == "cpu"


def test_this_machine_is_asked_through_its_llama_cpp_library() -> None:
    # the machine's own answer (no GPU here), read from the installed library
    assert gpu_offload.supported() in (True, False)
    assert gpu_offload.describe({}) == ("gpu" if gpu_offload.supported() else "cpu")


@pytest.mark.skipif(default_model_path() is None, reason="needs taverna's `local` extra")
def test_a_connection_chooses_its_layers_for_the_model_process() -> None:
    assert LocalSpec.of("", {}).n_gpu_layers is None  # the model's process decides
    assert LocalSpec.of("", {"n_gpu_layers": 0}).n_gpu_layers == 0
    assert LocalSpec.of("", {"n_gpu_layers": -1}).n_gpu_layers == -1
