"""Token counting that works offline, per model family, with SillyTavern's rules.

`get_tokenizer(name)` gives a `Tokenizer` (`count(text) -> int`); `TokenCounter`
adds a bounded cache; `MessageCounter` counts chat messages with SillyTavern's
per-message overhead; `selection` picks the tokenizer from SillyTavern's settings.
"""

from taverna.engine.tokens.base import CHARS_PER_TOKEN, EstimateTokenizer, Tokenizer, js_length
from taverna.engine.tokens.cache import CountCache, TokenCounter
from taverna.engine.tokens.hf import ClaudeTokenizer, HFTokenizer
from taverna.engine.tokens.messages import Message, MessageCounter, claude_transcript
from taverna.engine.tokens.registry import KNOWN, get_tokenizer
from taverna.engine.tokens.selection import (
    TokenizerId,
    chat_completion_model,
    chat_completion_tokenizer,
    message_family,
    model_family,
    text_completion_tokenizer,
)
from taverna.engine.tokens.sentencepiece import SentencePieceTokenizer

__all__ = [
    "CHARS_PER_TOKEN",
    "KNOWN",
    "ClaudeTokenizer",
    "CountCache",
    "EstimateTokenizer",
    "HFTokenizer",
    "Message",
    "MessageCounter",
    "SentencePieceTokenizer",
    "TokenCounter",
    "Tokenizer",
    "TokenizerId",
    "chat_completion_model",
    "chat_completion_tokenizer",
    "claude_transcript",
    "get_tokenizer",
    "js_length",
    "message_family",
    "model_family",
    "text_completion_tokenizer",
]
