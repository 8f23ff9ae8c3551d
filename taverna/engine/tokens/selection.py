"""Which tokenizer counts a prompt, picked from SillyTavern's settings as SillyTavern picks it.

Two routes exist (public/scripts/tokenizers.js, src/endpoints/tokenizers.js):
Chat Completion derives a tokenizer "model" from the source and the model name and
the server maps it to a vocabulary; Text Completion uses the tokenizer the user
chose (`power_user.tokenizer`), where "best match" guesses from the model name.
"""

from __future__ import annotations

import re
from enum import IntEnum

# src/endpoints/tokenizers.js TEXT_COMPLETION_MODELS (legacy OpenAI completion models).
_LEGACY_COMPLETION_MODELS = frozenset(
    {
        "gpt-3.5-turbo-instruct",
        "gpt-3.5-turbo-instruct-0914",
        "text-davinci-003",
        "text-davinci-002",
        "text-davinci-001",
        "text-curie-001",
        "text-babbage-001",
        "text-ada-001",
        "code-davinci-002",
        "code-davinci-001",
        "code-cushman-002",
        "code-cushman-001",
        "text-davinci-edit-001",
        "code-davinci-edit-001",
        "text-embedding-ada-002",
        "text-similarity-davinci-001",
        "text-similarity-curie-001",
        "text-similarity-babbage-001",
        "text-similarity-ada-001",
        "text-search-davinci-doc-001",
        "text-search-curie-doc-001",
        "text-search-babbage-doc-001",
        "text-search-ada-doc-001",
        "code-search-babbage-code-001",
        "code-search-ada-code-001",
    }
)


# Gemma 3 model names (`gemma-3-27b-it`, `google/gemma-3-4b`, `gemma3:12b`); Gemma 3n
# is left out: its vocabulary is not known to be the same.
_GEMMA3 = re.compile(r"gemma-?3(?!n)", re.IGNORECASE)


def _gemma(model: str) -> str:
    """SillyTavern's `gemma` key, made precise: Gemma 3 has a vocabulary of its own."""
    return "gemma3" if _GEMMA3.search(model) else "gemma"


class TokenizerId(IntEnum):
    """SillyTavern's tokenizer choices (`power_user.tokenizer`)."""

    NONE = 0
    GPT2 = 1
    OPENAI = 2
    LLAMA = 3
    NERD = 4
    NERD2 = 5
    API_CURRENT = 6
    MISTRAL = 7
    YI = 8
    API_TEXTGENERATIONWEBUI = 9
    API_KOBOLD = 10
    CLAUDE = 11
    LLAMA3 = 12
    GEMMA = 13
    JAMBA = 14
    QWEN2 = 15
    COMMAND_R = 16
    NEMO = 17
    BEST_MATCH = 99


# Tokenizer id -> taverna tokenizer name (remote API tokenizers have no offline
# counterpart and fall back to the estimate, as SillyTavern does when they fail).
_BY_ID = {
    TokenizerId.NONE: "estimate",
    TokenizerId.GPT2: "gpt2",
    TokenizerId.LLAMA: "llama",
    TokenizerId.NERD: "nerdstash",
    TokenizerId.NERD2: "nerdstash_v2",
    TokenizerId.API_CURRENT: "estimate",
    TokenizerId.MISTRAL: "mistral",
    TokenizerId.YI: "yi",
    TokenizerId.API_TEXTGENERATIONWEBUI: "estimate",
    TokenizerId.API_KOBOLD: "estimate",
    TokenizerId.CLAUDE: "claude",
    TokenizerId.LLAMA3: "llama3",
    TokenizerId.GEMMA: "gemma",
    TokenizerId.JAMBA: "jamba",
    TokenizerId.QWEN2: "qwen2",
    TokenizerId.COMMAND_R: "command-r",
    TokenizerId.NEMO: "nemo",
}


def model_family(model: str) -> str:
    """SillyTavern's server-side tokenizer key for a model name (`getTokenizerModel`).

    Returns a taverna tokenizer name: `o200k_base`, `cl100k_base`, `claude`,
    `llama3`, `mistral`, ... The first matching rule wins, in SillyTavern's order.
    Where SillyTavern says `gemma`, Gemma 3 models get `gemma3`.
    """
    m = model
    if "o1-preview" in m or "o1-mini" in m or "gpt-4o" in m or "chatgpt-4o-latest" in m:
        return "o200k_base"
    if "gpt-4" in m or "gpt-3.5-turbo" in m:
        return "cl100k_base"
    if m in _LEGACY_COMPLETION_MODELS:
        return "p50k_base"
    for needle, name in (
        ("claude", "claude"),
        ("llama3", "llama3"),
        ("llama-3", "llama3"),
        ("llama", "llama"),
        ("mistral", "mistral"),
        ("yi", "yi"),
        ("gemma", "gemma"),
        ("gemini", "gemma"),
        ("jamba", "jamba"),
        ("qwen2", "qwen2"),
        ("command-r", "command-r"),
        ("nemo", "nemo"),
    ):
        if needle in m:
            return _gemma(m) if name == "gemma" else name
    # src/endpoints/tokenizers.js: everything else counts as gpt-3.5-turbo.
    return "cl100k_base"


def chat_completion_model(source: str, model: str) -> str:
    """The tokenizer "model" SillyTavern's client asks the server to count with.

    `source` is `oai_settings.chat_completion_source`, `model` the selected model of
    that source (public/scripts/tokenizers.js `getTokenizerModel`). OpenRouter's
    own tokenizer field is not known offline; its model name decides instead.
    """
    m = model or ""
    if source in ("openai", "custom"):
        return m
    if source == "scale":
        return "gpt-4"
    if source == "windowai":
        for needle, name in (
            ("gpt-4", "gpt-4"),
            ("gpt-3.5-turbo-0301", "gpt-3.5-turbo-0301"),
            ("gpt-3.5-turbo", "gpt-3.5-turbo"),
            ("claude", "claude"),
            ("GPT-NeoXT", "gpt2"),
        ):
            if needle in m:
                return name
    if source == "openrouter" and m:
        for needle, name in (
            ("gpt-4o", "gpt-4o"),
            ("gpt-4", "gpt-4"),
            ("gpt-3.5-turbo-0301", "gpt-3.5-turbo-0301"),
            ("gpt-3.5-turbo", "gpt-3.5-turbo"),
            ("claude", "claude"),
            ("GPT-NeoXT", "gpt2"),
            ("jamba", "jamba"),
        ):
            if needle in m:
                return name
    fixed = {
        "cohere": "command-r",
        "ai21": "jamba",
        "claude": "claude",
        "01ai": "yi",
    }
    if source == "makersuite":
        return _gemma(m)
    if source in fixed:
        return fixed[source]
    if source == "mistralai":
        return "nemo" if "nemo" in m or "pixtral" in m else "mistral"
    if source in ("perplexity", "groq", "blockentropy"):
        if "llama-3" in m or "llama3" in m:
            return "llama3"
        if source == "perplexity" and "llama" in m:
            return "llama"
        if "mistral" in m or "mixtral" in m or (source == "blockentropy" and "miqu" in m):
            return "mistral"
        if source == "groq" and "gemma" in m:
            return _gemma(m)
    return "gpt-3.5-turbo"


def chat_completion_tokenizer(source: str, model: str) -> str:
    """The taverna tokenizer name that counts a Chat Completion prompt."""
    # The server maps the client's key again (src/endpoints/tokenizers.js).
    return model_family(chat_completion_model(source, model))


def text_completion_tokenizer(
    tokenizer_id: int, model: str = "", chat_completion_source: str = "openai", cc_model: str = ""
) -> str:
    """The taverna tokenizer name for Text Completion from `power_user.tokenizer`.

    Best match (99) guesses from the connected model's name as SillyTavern does when
    the backend's own tokenizer endpoint is not used, then falls back to Llama. Gemma
    (13, chosen or guessed) counts with Gemma 3's vocabulary when the model is Gemma 3.
    "OpenAI" (2) counts with the Chat Completion model's vocabulary.
    """
    try:
        choice = TokenizerId(tokenizer_id)
    except ValueError:
        return "estimate"
    if choice is TokenizerId.OPENAI:
        return chat_completion_tokenizer(chat_completion_source, cc_model)
    if choice is TokenizerId.BEST_MATCH:
        m = model.lower()
        for needles, name in (
            (("llama3", "llama-3"), "llama3"),
            (("mistral", "mixtral"), "mistral"),
            (("gemma",), "gemma"),
            (("yi",), "yi"),
            (("jamba",), "jamba"),
            (("command-r",), "command-r"),
            (("qwen2",), "qwen2"),
        ):
            if any(n in m for n in needles):
                return _gemma(m) if name == "gemma" else name
        return "llama"
    if choice is TokenizerId.GEMMA:
        return _gemma(model)
    return _BY_ID[choice]


def message_family(tokenizer: str, model: str = "") -> str:
    """How SillyTavern's server counts chat messages for this tokenizer.

    `tiktoken` (per-message overhead), `tiktoken-0301` (gpt-3.5-turbo-0301's),
    `transcript` (the messages as a `Human:`/`Assistant:` transcript) or `joined`
    (every field value joined by blank lines).
    """
    if tokenizer in ("claude", "llama3", "qwen2", "command-r", "nemo"):
        return "transcript"
    if tokenizer in ("llama", "mistral", "yi", "gemma", "gemma3", "jamba"):
        return "joined"
    return "tiktoken-0301" if "gpt-3.5-turbo-0301" in model else "tiktoken"
