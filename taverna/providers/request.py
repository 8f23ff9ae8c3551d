"""What a request builder needs besides the prompt, and the HTTP request it produces."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from taverna.errors import ProviderError


class Api(StrEnum):
    """The wire protocols taverna speaks."""

    OPENAI = "openai"
    OPENAI_COMPATIBLE = "openai-compatible"
    MISTRAL = "mistral"
    ANTHROPIC = "anthropic"
    GOOGLE = "google"
    KOBOLDCPP = "koboldcpp"
    LLAMACPP = "llamacpp"
    OPENAI_TEXT = "openai-text"
    # A GGUF model run here by llama.cpp (services/connections/local_models.py), spoken to as llama.cpp's
    # own server is
    LOCAL = "local"
    # Ollama's native API (/api/generate, /api/tags, /api/pull)
    OLLAMA = "ollama"

    @property
    def is_text_completion(self) -> bool:
        """Whether this API takes one prompt text instead of a message list."""
        return self in (Api.KOBOLDCPP, Api.LLAMACPP, Api.OPENAI_TEXT, Api.LOCAL, Api.OLLAMA)

    def st_source(self, preset_source: str = "") -> str | None:
        """The SillyTavern Chat Completion source a request to this API is made for.

        A preset's own source when it is served by this API (OpenRouter, Groq, ... by
        the OpenAI-compatible one), else this API's own source; None for Text Completion.
        The source picks the preset's model setting (`claude_model` for `claude`, ...).
        """
        if self.is_text_completion:
            return None
        if preset_source and _SOURCE_APIS.get(preset_source) is self:
            return preset_source
        return _OWN_SOURCES[self]

    @classmethod
    def parse(cls, name: str) -> Api:
        """An API by its name or one of SillyTavern's source names (`claude`, `makersuite`, `custom`)."""
        key = name.strip().lower()
        key = _API_ALIASES.get(key, key)
        try:
            return cls(key)
        except ValueError:
            names = ", ".join(a.value for a in cls)
            raise ProviderError(
                f"unknown API {name!r}; expected one of {names}",
                code="unknown_api_expected_one_of",
                params={"name": str(name), "names": str(names)},
            ) from None


_API_ALIASES = {
    "claude": "anthropic",
    "makersuite": "google",
    "gemini": "google",
    "custom": "openai-compatible",
    "mistralai": "mistral",
    "openai_compatible": "openai-compatible",
    "kobold": "koboldcpp",
    "kobold-cpp": "koboldcpp",
    "llama.cpp": "llamacpp",
    "llama-cpp": "llamacpp",
    "textgen": "llamacpp",
    "openai_text": "openai-text",
}


# Each Chat Completion API's own SillyTavern source
_OWN_SOURCES = {
    Api.OPENAI: "openai",
    Api.OPENAI_COMPATIBLE: "custom",
    Api.MISTRAL: "mistralai",
    Api.ANTHROPIC: "claude",
    Api.GOOGLE: "makersuite",
}
# SillyTavern's sources and the API that serves each here
_SOURCE_APIS = {
    **{source: api for api, source in _OWN_SOURCES.items()},
    **dict.fromkeys(
        # (sources.py: each on the OpenAI-compatible API)
        (
            "openrouter",
            "groq",
            "perplexity",
            "01ai",
            "blockentropy",
            "windowai",
            "deepseek",
            "xai",
            "cohere",
            "ai21",
        ),
        Api.OPENAI_COMPATIBLE,
    ),
}


class PostProcessing(StrEnum):
    """How a custom OpenAI-compatible endpoint's messages are reshaped (algo-providers.md §7)."""

    NONE = "none"
    MERGE = "merge"
    SEMI = "semi"
    STRICT = "strict"
    SINGLE = "single"
    CLAUDE = "claude"  # 1.12.6's only mode: Claude's message conversion, system turns as user

    @classmethod
    def parse(cls, name: str) -> PostProcessing:
        """A mode by name; SillyTavern's `""` is none."""
        key = name.strip().lower()
        key = {"": "none"}.get(key, key)
        try:
            return cls(key)
        except ValueError:
            names = ", ".join(p.value for p in cls)
            raise ProviderError(
                f"unknown post-processing {name!r}; expected one of {names}",
                code="unknown_post_processing_expected_one",
                params={"name": str(name), "names": str(names)},
            ) from None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function tool offered to the model: name, what it does, a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


DEFAULT_HUMAN_SYSPROMPT = (
    "Let's get started. Please generate your response based on the information and "
    "instructions provided above."
)


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """Everything about one request that is not in the prompt.

    `user_name` / `char_name` / `group_members` fold example and speaker names into
    text where an API has no `name` field. `use_system_prompt` is `None` for the API's
    SillyTavern default (Anthropic off, Gemini on). `tool_choice` is `auto` or `required`.
    `mistral_prefix`: Mistral (or DeepSeek, as an OpenAI-compatible endpoint) continues a
    last assistant message in place (its `prefix`). `stop_limit`: how many custom stop
    strings an OpenAI-style body carries: -1 the API's own limit, None all of them, 0
    none (a source's rule, sources.py). `cache_system_prompt` / `cache_at_depth`: Claude's
    prompt cache breakpoints, as SillyTavern's `claude.enableSystemPromptCache` and
    `claude.cachingAtDepth` set them (-1: no breakpoint in the history).
    """

    model: str = ""
    stream: bool = True
    post_processing: PostProcessing = PostProcessing.NONE
    user_name: str = "User"
    char_name: str = ""
    group_members: tuple[str, ...] = ()
    use_system_prompt: bool | None = None
    human_sysprompt_message: str = DEFAULT_HUMAN_SYSPROMPT
    impersonate: bool = False
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    mistral_prefix: bool = False
    stop_limit: int | None = -1
    cache_system_prompt: bool = False
    cache_at_depth: int = -1
    source: str = ""  # the source the connection was made from (sources.py), if any


def endpoint_url(base_url: str, default: str, path: str) -> str:
    """`path` under a connection's base URL (or the API's default), unless it ends in it."""
    base = (base_url or default).rstrip("/")
    return base if base.endswith(path) else f"{base}{path}"


def bearer_headers(key: str) -> dict[str, str]:
    """The `Authorization: Bearer` header for a key; none without a key."""
    return {"Authorization": f"Bearer {key}"} if key else {}


def models_listing(base_url: str, default: str, headers: Mapping[str, str]) -> HttpRequest:
    """The GET request of `{base}/models`, the model listing most APIs answer."""
    base = (base_url or default).rstrip("/")
    return HttpRequest(f"{base}/models", {}, headers, "GET", False)


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One HTTP request as the transport sends it: method, full URL, headers, JSON body."""

    url: str
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    method: str = "POST"
    stream: bool = True
