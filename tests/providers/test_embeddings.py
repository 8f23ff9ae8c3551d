"""Embedding models: the bundled local model (Chinese and English), and an
OpenAI-compatible `/v1/embeddings` endpoint (a stub on 127.0.0.1 speaking its protocol)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import numpy as np
import pytest

from taverna.errors import ProviderError
from taverna.providers.embeddings import LocalEmbedder, OpenAIEmbedder


class _Embeddings(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), **body}
        )
        if self.headers.get("Authorization") != "Bearer sk-test":
            self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
            return
        data = []
        for index, text in enumerate(body["input"]):
            vector = [float(len(text)), float(text.count("a")), 1.0]
            data.append({"object": "embedding", "index": index, "embedding": vector})
        data.reverse()  # the protocol orders by `index`, not by position
        usage = {"prompt_tokens": 3, "total_tokens": 3}
        self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Embeddings.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_an_openai_compatible_endpoint_embeds_in_order(endpoint: str) -> None:
    embedder = OpenAIEmbedder(endpoint, "nomic-embed", api_key="sk-test", batch=2)
    vectors = embedder.embed(["a", "banana", "aaa"])
    assert vectors.shape == (3, 3)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    expected = np.array([[1, 1, 1], [6, 3, 1], [3, 3, 1]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)
    assert [r["input"] for r in _Embeddings.requests] == [["a", "banana"], ["aaa"]]
    assert {r["path"] for r in _Embeddings.requests} == {"/v1/embeddings"}
    assert {r["model"] for r in _Embeddings.requests} == {"nomic-embed"}
    assert embedder.model == "openai:nomic-embed"


def test_an_endpoint_error_names_the_endpoint_and_hides_the_key(endpoint: str) -> None:
    embedder = OpenAIEmbedder(endpoint, "nomic-embed", api_key="sk-wrong-key")
    with pytest.raises(ProviderError) as caught:
        embedder.embed(["hello"])
    assert "401" in str(caught.value) and "/v1/embeddings" in str(caught.value)
    assert "sk-wrong-key" not in str(caught.value)


def test_an_endpoint_that_is_away_is_a_provider_error() -> None:
    embedder = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", timeout=2)
    with pytest.raises(ProviderError):
        embedder.embed(["hello"])


@pytest.mark.skipif(not LocalEmbedder.available(), reason="the local model is not installed")
def test_the_local_model_matches_meaning_across_chinese_and_english() -> None:
    embedder = LocalEmbedder()
    texts = [
        "The dragon burned the village last winter.",
        "We agreed to meet at the old lighthouse at midnight.",
        "去年冬天巨龙烧毁了村庄。",
        "我们约定午夜在老灯塔见面。",
    ]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, 512) and vectors.dtype == np.float32
    similarity = vectors @ vectors.T
    # Each Chinese sentence is nearest to its English counterpart.
    assert similarity[2, 0] > similarity[2, 1]
    assert similarity[3, 1] > similarity[3, 0]
    # The same text gives the same vector: a message is embedded once for good.
    assert np.allclose(embedder.embed(texts[:1])[0], vectors[0], atol=1e-6)


@pytest.mark.skipif(not LocalEmbedder.available(), reason="the local model is not installed")
def test_the_local_model_computes_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """More BLAS threads than one spin against the rest of the server: on two busy cores
    one message took over a second instead of a few tens of milliseconds."""
    from threadpoolctl import threadpool_info

    from taverna.providers import embeddings

    # The model loaded in this process (the embedding host loads it the same way).
    monkeypatch.setenv("TAVERNA_EMBED_HOST", "0")
    monkeypatch.setattr(embeddings, "_LOCAL", [])
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])
    backend = embedder._loaded()._own._model
    seen: list[int] = []
    inner = backend._encode

    def encode(texts: list[str]) -> Any:
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
        return inner(texts)

    monkeypatch.setattr(backend, "_encode", encode)
    embedder.embed(["The lamp burns green."])
    assert seen and set(seen) == {1}
