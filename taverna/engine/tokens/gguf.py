"""The tokenizer a GGUF model file carries, read from its metadata and rebuilt as SentencePiece.

A GGUF file starts with key/value metadata, then tensor descriptions, then the
weights. The metadata of a SentencePiece-based model (`tokenizer.ggml.model` =
`llama`) holds the whole vocabulary: every piece, its score and its type. From
those, `sentencepiece_model` writes the `ModelProto` that SentencePiece itself
loads, so the text is split by SentencePiece's own code, not by a re-implementation.
Only the metadata is read; the weights are never touched.
"""

from __future__ import annotations

import hashlib
import struct
from typing import BinaryIO, cast

from taverna.errors import FormatError

_MAGIC = b"GGUF"
# The metadata value types of the GGUF specification (version 2 and 3).
_SCALARS: dict[int, str] = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
_STRING = 8
_ARRAY = 9
# Far above any real vocabulary; a corrupt count must not make us allocate gigabytes.
_MAX_ITEMS = 4_000_000
_MAX_STRING = 64 * 1024 * 1024

MetadataValue = int | float | bool | str | list[int] | list[float] | list[bool] | list[str]


class _HashingReader:
    """Reads a stream exactly, hashing every byte it hands out."""

    def __init__(self, stream: BinaryIO, file: str | None) -> None:
        self._stream = stream
        self._file = file
        self.digest = hashlib.sha256()

    def take(self, size: int) -> bytes:
        data = self._stream.read(size)
        if len(data) != size:
            raise FormatError(
                "the GGUF metadata ends early",
                file=self._file,
                field="metadata",
                code="gguf_metadata_ends_early",
            )
        self.digest.update(data)
        return data

    def scalar(self, code: str) -> int | float | bool:
        value: int | float | bool = struct.unpack("<" + code, self.take(struct.calcsize(code)))[0]
        return value

    def count(self, what: str) -> int:
        n = int(self.scalar("Q"))
        if n > _MAX_ITEMS:
            raise FormatError(
                f"the GGUF {what} count {n} is implausible",
                file=self._file,
                code="gguf_count_is_implausible",
                params={"what": str(what), "n": str(n)},
            )
        return n

    def string(self) -> str:
        size = int(self.scalar("Q"))
        if size > _MAX_STRING:
            raise FormatError(
                "a GGUF string is implausibly long",
                file=self._file,
                code="gguf_string_is_implausibly_long",
            )
        try:
            return self.take(size).decode("utf-8")
        except UnicodeDecodeError as error:
            raise FormatError(
                f"a GGUF string is not UTF-8: {error}",
                file=self._file,
                code="gguf_string_is_not_utf",
                params={"error": str(error)},
            ) from error

    def value(self, kind: int, key: str) -> MetadataValue:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item = int(self.scalar("I"))
            n = self.count("array")
            if item in _SCALARS:
                code = _SCALARS[item]
                values = struct.unpack(f"<{n}{code}", self.take(n * struct.calcsize(code)))
                return list(values)
            if item == _STRING:
                return [self.string() for _ in range(n)]
        raise FormatError(
            f"unsupported GGUF value type {kind}",
            file=self._file,
            field=key,
            code="unsupported_gguf_value_type",
            params={"kind": str(kind)},
        )


def read_metadata(
    stream: BinaryIO, file: str | None = None
) -> tuple[dict[str, MetadataValue], str]:
    """The key/value metadata at the start of a GGUF stream, and the SHA-256 of its bytes.

    Reading stops where the metadata ends, before the tensor descriptions.
    """
    reader = _HashingReader(stream, file)
    if reader.take(4) != _MAGIC:
        raise FormatError("not a GGUF file", file=file, code="not_gguf_file")
    version = int(reader.scalar("I"))
    if version not in (2, 3):
        raise FormatError(
            f"unsupported GGUF version {version}",
            file=file,
            field="version",
            code="unsupported_gguf_version",
            params={"version": str(version)},
        )
    reader.count("tensor")
    entries = reader.count("metadata")
    metadata: dict[str, MetadataValue] = {}
    for _ in range(entries):
        key = reader.string()
        metadata[key] = reader.value(int(reader.scalar("I")), key)
    return metadata, reader.digest.hexdigest()


# SentencePiece's piece types; GGUF's `tokenizer.ggml.token_type` uses the same numbers.
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6
_BPE = 2
_WHITESPACE = "\u2581"


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _list(
    metadata: dict[str, MetadataValue], key: str, kind: type, file: str | None
) -> list[object]:
    value = metadata.get(key)
    if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
        raise FormatError(
            f"the GGUF metadata has no usable '{key}'",
            file=file,
            field=key,
            code="gguf_metadata_has_no_usable",
            params={"key": str(key)},
        )
    return list(value)


def _token_id(metadata: dict[str, MetadataValue], key: str, size: int, file: str | None) -> int:
    value = metadata.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < size:
        raise FormatError(
            f"the GGUF metadata has no usable '{key}'",
            file=file,
            field=key,
            code="gguf_metadata_has_no_usable",
            params={"key": str(key)},
        )
    return value


def sentencepiece_model(
    metadata: dict[str, MetadataValue],
    file: str | None = None,
    *,
    control_in_text: bool = False,
) -> bytes:
    """A serialized SentencePiece `ModelProto` rebuilt from a GGUF file's tokenizer metadata.

    For a BPE SentencePiece vocabulary with byte fallback and no normalization (the
    Gemma family). llama.cpp's converter writes user-defined pieces with spaces where
    SentencePiece has `▁`; they are put back. With `control_in_text`, control pieces
    (except the unknown piece) become user-defined, so that text spelling them (an
    instruct template's `<start_of_turn>`) counts as one token each, as the model's
    Hugging Face tokenizer and llama.cpp's server count a prompt.
    """
    if metadata.get("tokenizer.ggml.model") != "llama":
        raise FormatError(
            "the GGUF tokenizer is not a SentencePiece vocabulary",
            file=file,
            field="tokenizer.ggml.model",
            code="gguf_tokenizer_is_not_sentencepiece",
        )
    if metadata.get("tokenizer.ggml.add_space_prefix", False) is not False:
        raise FormatError(
            "only vocabularies without a space prefix are supported",
            file=file,
            field="tokenizer.ggml.add_space_prefix",
            code="only_vocabularies_without_space_prefix",
        )
    pieces = cast(list[str], _list(metadata, "tokenizer.ggml.tokens", str, file))
    scores = cast(list[float], _list(metadata, "tokenizer.ggml.scores", float, file))
    types = cast(list[int], _list(metadata, "tokenizer.ggml.token_type", int, file))
    if not len(pieces) == len(scores) == len(types):
        raise FormatError(
            "the GGUF vocabulary lists differ in length",
            file=file,
            code="gguf_vocabulary_lists_differ_in",
        )
    size = len(pieces)
    unk = _token_id(metadata, "tokenizer.ggml.unknown_token_id", size, file)
    bos = _token_id(metadata, "tokenizer.ggml.bos_token_id", size, file)
    eos = _token_id(metadata, "tokenizer.ggml.eos_token_id", size, file)
    pad = _token_id(metadata, "tokenizer.ggml.padding_token_id", size, file)
    if sum(1 for t in types if t == _BYTE) != 256:
        raise FormatError(
            "the GGUF vocabulary has no byte fallback pieces",
            file=file,
            code="gguf_vocabulary_has_no_byte",
        )

    if not set(types) <= {_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE}:
        raise FormatError(
            "the GGUF vocabulary has an unknown token type",
            file=file,
            code="gguf_vocabulary_has_unknown_token",
        )

    out = bytearray()
    pack_score = struct.Struct("<f").pack
    # Each piece is a `SentencePiece` message: piece (field 1, bytes), score (field 2,
    # float) and type (field 3, varint); the tags are written as their bytes.
    for index, (piece, score, kind) in enumerate(zip(pieces, scores, types, strict=True)):
        if kind == _USER_DEFINED:
            piece = piece.replace(" ", _WHITESPACE)
        elif kind == _CONTROL and control_in_text and index != unk:
            kind = _USER_DEFINED
        if index == unk:
            kind = _UNKNOWN
        text = piece.encode("utf-8")
        body = b"\x0a%b%b\x15%b\x18%c" % (_varint(len(text)), text, pack_score(score), kind)
        out += b"\x0a%b%b" % (_varint(len(body)), body)
    trainer = (
        _int(3, _BPE)
        + _int(4, size)
        + _int(35, 1)  # byte_fallback
        + _int(40, unk)
        + _int(41, bos)
        + _int(42, eos)
        + _int(43, pad)
    )
    normalizer = (
        _field(1, b"identity")
        + _int(3, 0)  # add_dummy_prefix
        + _int(4, 0)  # remove_extra_whitespaces
        + _int(5, 1)  # escape_whitespaces
    )
    out += _field(2, trainer) + _field(3, normalizer)
    return bytes(out)
