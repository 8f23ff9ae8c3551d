"""Gemma 3's vocabulary, rebuilt from a GGUF file's metadata, counts as Gemma 3 does."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from taverna.engine.tokens import (
    CountCache,
    chat_completion_tokenizer,
    gemma,
    get_tokenizer,
    message_family,
    model_family,
    registry,
    text_completion_tokenizer,
)
from taverna.engine.tokens.gguf import read_metadata, sentencepiece_model
from taverna.errors import FormatError, TavernaError

needs_gemma = pytest.mark.skipif(
    not gemma.available(), reason="the optional taverna[gemma] package is not installed"
)


@pytest.fixture(scope="module")
def gemma3() -> gemma.Gemma3Tokenizer:
    if not gemma.available():
        pytest.skip("the optional taverna[gemma] package is not installed")
    return gemma.Gemma3Tokenizer()


# Ids Gemma 3's own Hugging Face tokenizer gives (as published with examples for
# gemma-3-1b-it and gemma-3-270m-it), with the beginning-of-sequence token 2 that
# the tokenizer adds in front.
PUBLISHED = [
    ("Hello, World!", [2, 9259, 236764, 4109, 236888]),
    ("Hello, how are you?", [2, 9259, 236764, 1217, 659, 611, 236881]),
    (
        "<bos><start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
        [2, 105, 2364, 107, 9259, 106, 107, 105, 4368, 107],
    ),
    (
        "<bos><start_of_turn>user\nExplain Quantum Mechanics to a 5 year old.<end_of_turn>\n"
        "<start_of_turn>model\n",
        [
            2,
            105,
            2364,
            107,
            155122,
            27825,
            49087,
            531,
            496,
            236743,
            236810,
            1051,
            2255,
            236761,
            106,
            107,
            105,
            4368,
            107,
        ],
    ),
]


@pytest.mark.parametrize(("text", "ids"), PUBLISHED)
def test_gives_gemma3s_published_ids(
    gemma3: gemma.Gemma3Tokenizer, text: str, ids: list[int]
) -> None:
    if text.startswith("<bos>"):
        assert gemma3.encode(text) == ids
    else:
        assert gemma3.encode(text) == ids[1:]  # counts never include the added <bos>
    assert gemma3.count(text) == len(gemma3.encode(text))


def test_bytes_digits_and_whitespace_runs(gemma3: gemma.Gemma3Tokenizer) -> None:
    # Digits are split one by one; a character outside the vocabulary falls back to
    # its UTF-8 bytes (4 for U+1D518); runs of spaces and newlines are single pieces.
    assert gemma3.count("12345") == 5
    assert gemma3.count("\U0001d518") == 4
    assert gemma3.count("a" + " " * 8 + "b") == 3
    assert gemma3.count("\n\n") == 1
    assert gemma3.count("") == 0


def test_selected_for_gemma3_models_only() -> None:
    assert chat_completion_tokenizer("makersuite", "gemma-3-27b-it") == "gemma3"
    assert chat_completion_tokenizer("custom", "google/gemma-3-12b-it") == "gemma3"
    assert chat_completion_tokenizer("groq", "gemma3-9b") == "gemma3"
    assert model_family("gemma-3-4b") == "gemma3"
    assert text_completion_tokenizer(99, "gemma-3-27b-it-Q4_K_M.gguf") == "gemma3"
    assert text_completion_tokenizer(13, "Gemma-3-12B") == "gemma3"
    # Gemma 1 and 2 (256k vocabulary), Gemini, Gemma 3n: SillyTavern's `gemma` key.
    assert chat_completion_tokenizer("makersuite", "gemini-2.5-pro") == "gemma"
    assert chat_completion_tokenizer("groq", "gemma2-9b-it") == "gemma"
    assert text_completion_tokenizer(99, "gemma-2-9b-it") == "gemma"
    assert text_completion_tokenizer(13, "") == "gemma"
    assert text_completion_tokenizer(99, "gemma-3n-e4b-it") == "gemma"
    assert message_family("gemma3") == message_family("gemma") == "joined"


@needs_gemma
def test_registry_gives_the_exact_tokenizer() -> None:
    tokenizer = get_tokenizer("gemma3")
    assert tokenizer.exact and tokenizer.name == "gemma3"
    assert not get_tokenizer("gemma").exact  # Gemma 1/2 stay on the estimate


def test_estimate_when_the_package_is_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gemma, "available", lambda: False)
    tokenizer = registry.get_tokenizer.__wrapped__("gemma3")
    assert not tokenizer.exact
    assert tokenizer.count("abcdefg") == 3  # ceil(7 / 3.35)


@needs_gemma
def test_long_texts_counted_by_lines_give_the_whole_count(gemma3: gemma.Gemma3Tokenizer) -> None:
    import random

    rng = random.Random(11)
    alphabet = [*"abc XYZ\n\t.,!?'\"<>:/-_019éü中😀\\", "<start_of_turn>", "\n\n", "  ", "\r\n"]
    for _ in range(30):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(2100, 4000)))
        cache = CountCache()
        assert cache.count(gemma3, text) == gemma3.count(text)
        assert len(cache) > 1


@needs_gemma
def test_a_changed_model_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gemma, "_METADATA_SHA256", "0" * 64)
    gemma._processor.cache_clear()
    try:
        with pytest.raises(TavernaError, match="checksum"):
            gemma._processor()
    finally:
        monkeypatch.undo()
        gemma._processor.cache_clear()


@needs_gemma
def test_loads_with_the_network_unreachable(tmp_path: Path) -> None:
    script = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network is off in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "socket.create_connection = refuse\n"
        "from taverna.engine.tokens import get_tokenizer\n"
        "tokenizer = get_tokenizer('gemma3')\n"
        "assert tokenizer.exact\n"
        "print(tokenizer.count('Hello, World!'))\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", HOME=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "4"
    assert list(tmp_path.iterdir()) == []  # nothing assembled or cached on disk


# A GGUF file written here: the reader and the rebuilt SentencePiece model are
# checked without the optional package.


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _gguf(entries: dict[str, tuple[int, bytes]], version: int = 3) -> bytes:
    out = b"GGUF" + struct.pack("<IQQ", version, 0, len(entries))
    for key, (kind, payload) in entries.items():
        out += _string(key) + struct.pack("<I", kind) + payload
    return out


def _array_of_strings(items: list[str]) -> tuple[int, bytes]:
    return 9, struct.pack("<IQ", 8, len(items)) + b"".join(_string(i) for i in items)


def _array(code: str, item: int, values: list[float] | list[int]) -> tuple[int, bytes]:
    return 9, struct.pack("<IQ", item, len(values)) + struct.pack(f"<{len(values)}{code}", *values)


def _tiny_vocabulary() -> bytes:
    pieces = ["<pad>", "<eos>", "<bos>", "<unk>", "<turn>", "  "]
    types = [3, 3, 3, 3, 3, 4]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    normal = ["a", "b", "ab", "\u2581", "\u2581a", "\u2581ab"]
    pieces += normal
    types += [1] * len(normal)
    scores = [0.0] * (len(pieces) - len(normal)) + [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]
    return _gguf(
        {
            "general.architecture": (8, _string("gemma3")),
            "tokenizer.ggml.model": (8, _string("llama")),
            "tokenizer.ggml.tokens": _array_of_strings(pieces),
            "tokenizer.ggml.scores": _array("f", 6, scores),
            "tokenizer.ggml.token_type": _array("i", 5, types),
            "tokenizer.ggml.bos_token_id": (4, struct.pack("<I", 2)),
            "tokenizer.ggml.eos_token_id": (4, struct.pack("<I", 1)),
            "tokenizer.ggml.unknown_token_id": (4, struct.pack("<I", 3)),
            "tokenizer.ggml.padding_token_id": (4, struct.pack("<I", 0)),
            "tokenizer.ggml.add_space_prefix": (7, b"\x00"),
        }
    )


def test_reads_metadata_and_rebuilds_a_sentencepiece_model() -> None:
    import hashlib

    import sentencepiece

    data = _tiny_vocabulary()
    metadata, digest = read_metadata(io.BytesIO(data + b"tensor data follows"), file="tiny.gguf")
    assert digest == hashlib.sha256(data).hexdigest()  # exactly the metadata was read
    assert metadata["general.architecture"] == "gemma3"
    proto = sentencepiece_model(metadata, file="tiny.gguf", control_in_text=True)
    processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
    ids = processor.encode("ab ab  <turn>c")
    pieces = [processor.id_to_piece(i) for i in ids]
    # `ab`, ` ab`, the user-defined double space, the control token spelled in the
    # text as one piece, and `c` as its byte.
    assert pieces == ["ab", "\u2581ab", "\u2581\u2581", "<turn>", "<0x63>"]
    plain = sentencepiece.SentencePieceProcessor(model_proto=sentencepiece_model(metadata))
    assert len(plain.encode("<turn>")) > 1  # without control_in_text it is plain text


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"GGML" + b"\x00" * 20,
        b"GGUF" + struct.pack("<IQQ", 9, 0, 0),
        b"GGUF" + struct.pack("<IQQ", 3, 0, 10**12),
        _tiny_vocabulary()[:-3],
        _gguf({"x": (9, struct.pack("<IQ", 8, 1))}),
        _gguf({"x": (99, b"")}),
    ],
)
def test_broken_gguf_is_a_format_error(data: bytes) -> None:
    with pytest.raises(FormatError):
        read_metadata(io.BytesIO(data), file="bad.gguf")


def test_unsupported_vocabularies_are_refused() -> None:
    metadata, _ = read_metadata(io.BytesIO(_tiny_vocabulary()))
    for change in (
        {"tokenizer.ggml.model": "gpt2"},
        {"tokenizer.ggml.add_space_prefix": True},
        {"tokenizer.ggml.scores": [0.0]},
        {"tokenizer.ggml.unknown_token_id": 10**6},
        {"tokenizer.ggml.tokens": None},
    ):
        broken = {k: v for k, v in {**metadata, **change}.items() if v is not None}
        with pytest.raises(FormatError):
            sentencepiece_model(broken, file="tiny.gguf")
