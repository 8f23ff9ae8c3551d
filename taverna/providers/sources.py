"""The model services a SillyTavern user picks by name, each on one of taverna's APIs.

A source is what a person chooses ("OpenRouter", "DeepSeek", "TabbyAPI"); the API
(`request.Api`) is the wire protocol its requests are built in. A connection made from a
source stores that API, the source's URL and post-processing, and the source's name in its
options (`source`), so connections made from the eight generic APIs read as before.
Facts follow SillyTavern 1.12.6 (`CHAT_COMPLETION_SOURCES`, `TEXTGEN_TYPES`) and
algo-providers.md; DeepSeek and xAI as later releases add them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from taverna.errors import ProviderError
from taverna.providers.request import Api, PostProcessing


class Family(StrEnum):
    """Which list of SillyTavern's a source is picked from."""

    CHAT = "chat"  # Chat Completion sources
    TEXT = "text"  # Text Completion types


class KeyStyle(StrEnum):
    """How a source's key is sent."""

    BEARER = "bearer"  # Authorization: Bearer KEY
    X_API_KEY = "x-api-key"  # Anthropic's header
    GOOGLE = "x-goog-api-key"
    NONE = "none"  # a local server: a key is optional and sent as a bearer when given


@dataclass(frozen=True, slots=True)
class Source:
    """One service by name.

    `stop_limit`: how many custom stop strings a request carries (None: all of them, 0:
    none). `reasoning_field`: the stream delta field whose text is reasoning, shown as such
    and kept out of the reply ("" where the source sends none). `context_field`: the field of
    a model listing entry that says its context size. `continue_prefix`: continue is sent as a
    prefix completion (the trailing assistant message marked `prefix: true`). `gone`: why the
    source is no longer offered (its service shut down); such a source cannot be added.
    """

    name: str
    label: str
    family: Family
    api: Api
    default_url: str
    key_style: KeyStyle = KeyStyle.BEARER
    models_path: str = "/models"
    context_field: str = ""
    stop_limit: int | None = 4
    reasoning_field: str = ""
    post_processing: PostProcessing = PostProcessing.NONE
    continue_prefix: bool = False
    st_name: str = ""  # its name in SillyTavern's settings (source or textgen type)
    key_hint: str = ""
    notes: str = ""
    gone: str = ""

    @property
    def needs_url(self) -> bool:
        """Whether a person must give the URL (a server of their own)."""
        return not self.default_url

    def options(self) -> dict[str, Any]:
        """What a connection made from this source keeps in its options."""
        chosen: dict[str, Any] = {"source": self.name}
        if self.continue_prefix:
            chosen["prefix"] = True
        return chosen

    def public(self) -> dict[str, Any]:
        """What the connection form shows of it."""
        return {
            "name": self.name,
            "label": self.label,
            "family": self.family.value,
            "api": self.api.value,
            "url": self.default_url,
            "needs_url": self.needs_url,
            "key": self.key_style.value,
            "key_hint": self.key_hint,
            "models": bool(self.models_path),
            "stop_limit": self.stop_limit,
            "reasoning": self.reasoning_field,
            "post_processing": self.post_processing.value,
            "notes": self.notes,
            "gone": self.gone,
        }


def _chat(name: str, label: str, api: Api, url: str, **facts: Any) -> Source:
    return Source(name, label, Family.CHAT, api, url, st_name=facts.pop("st_name", name), **facts)


def _text(name: str, label: str, api: Api, url: str, **facts: Any) -> Source:
    return Source(name, label, Family.TEXT, api, url, st_name=facts.pop("st_name", name), **facts)


_COMPAT = Api.OPENAI_COMPATIBLE
_TEXT = Api.OPENAI_TEXT
_LOCAL = {"key_style": KeyStyle.NONE}  # the page says the key is usually not needed

CHAT_SOURCES: tuple[Source, ...] = (
    _chat("openai", "OpenAI", Api.OPENAI, "https://api.openai.com/v1", key_hint="sk-…"),
    _chat(
        "claude",
        "Claude (Anthropic)",
        Api.ANTHROPIC,
        "https://api.anthropic.com/v1",
        key_style=KeyStyle.X_API_KEY,
        stop_limit=None,
        reasoning_field="thinking",
        key_hint="sk-ant-…",
    ),
    _chat(
        "openrouter",
        "OpenRouter",
        _COMPAT,
        "https://openrouter.ai/api/v1",
        context_field="context_length",
        reasoning_field="reasoning",
        key_hint="sk-or-…",
    ),
    _chat(
        "deepseek",
        "DeepSeek",
        _COMPAT,
        "https://api.deepseek.com/beta",
        reasoning_field="reasoning_content",
        post_processing=PostProcessing.SEMI,
        continue_prefix=True,
        key_hint="sk-…",
        notes="the beta URL takes prefix completion, which continue uses",
    ),
    _chat(
        "xai",
        "xAI (Grok)",
        _COMPAT,
        "https://api.x.ai/v1",
        reasoning_field="reasoning_content",
        key_hint="xai-…",
    ),
    _chat("groq", "Groq", _COMPAT, "https://api.groq.com/openai/v1", key_hint="gsk_…"),
    _chat(
        "mistralai",
        "Mistral AI",
        Api.MISTRAL,
        "https://api.mistral.ai/v1",
    ),
    _chat(
        "makersuite",
        "Google AI Studio",
        Api.GOOGLE,
        "https://generativelanguage.googleapis.com/v1beta",
        key_style=KeyStyle.GOOGLE,
        stop_limit=3,
        reasoning_field="thought",
        key_hint="AIza…",
    ),
    _chat(
        "perplexity",
        "Perplexity",
        _COMPAT,
        "https://api.perplexity.ai",
        models_path="",
        stop_limit=0,
        post_processing=PostProcessing.CLAUDE,
        key_hint="pplx-…",
        notes="no model list endpoint: type the model name",
    ),
    _chat(
        "cohere",
        "Cohere",
        _COMPAT,
        "https://api.cohere.ai/compatibility/v1",
        stop_limit=5,
        notes=(
            "sent through Cohere's OpenAI-compatible endpoint; SillyTavern 1.12.6 speaks "
            "Cohere's own v1 chat API, whose body differs"
        ),
    ),
    _chat("ai21", "AI21", _COMPAT, "https://api.ai21.com/studio/v1", models_path=""),
    _chat("01ai", "01.AI", _COMPAT, "https://api.01.ai/v1", stop_limit=0),
    _chat("custom", "Custom (OpenAI-compatible)", _COMPAT, "", **_LOCAL),
    _chat("windowai", "Window AI", _COMPAT, "", gone="the Window AI extension is discontinued"),
    _chat("scale", "Scale", _COMPAT, "", gone="Scale Spellbook shut down"),
    _chat(
        "blockentropy",
        "Block Entropy",
        _COMPAT,
        "https://api.blockentropy.ai/v1",
        gone="Block Entropy's API shut down",
    ),
)

TEXT_SOURCES: tuple[Source, ...] = (
    _text(
        "ooba",
        "text-generation-webui",
        _TEXT,
        "http://127.0.0.1:5000/v1",
        stop_limit=None,
        **_LOCAL,
    ),
    _text(
        "koboldcpp",
        "KoboldCpp",
        Api.KOBOLDCPP,
        "http://127.0.0.1:5001",
        stop_limit=None,
        **_LOCAL,
    ),
    _text(
        "llamacpp",
        "llama.cpp",
        Api.LLAMACPP,
        "http://127.0.0.1:8080",
        stop_limit=None,
        **_LOCAL,
    ),
    _text(
        "ollama",
        "Ollama",
        Api.OLLAMA,
        "http://127.0.0.1:11434",
        models_path="/api/tags",
        stop_limit=None,
        notes="Ollama's native /api/generate, as SillyTavern; its models are listed and "
        "pulled from here",
        **_LOCAL,
    ),
    _text("vllm", "vLLM", _TEXT, "http://127.0.0.1:8000/v1", stop_limit=None, **_LOCAL),
    _text("aphrodite", "Aphrodite", _TEXT, "http://127.0.0.1:2242/v1", stop_limit=None, **_LOCAL),
    _text("tabby", "TabbyAPI", _TEXT, "http://127.0.0.1:5000/v1", stop_limit=None, **_LOCAL),
    _text("togetherai", "TogetherAI", _TEXT, "https://api.together.xyz/v1", stop_limit=None),
    _text("mancer", "Mancer", _TEXT, "https://neuro.mancer.tech/oai/v1", stop_limit=None),
    _text("infermaticai", "InfermaticAI", _TEXT, "https://api.totalgpt.ai/v1", stop_limit=None),
    _text("dreamgen", "DreamGen", _TEXT, "https://dreamgen.com/api/openai/v1", stop_limit=None),
    _text(
        "openrouter-text",
        "OpenRouter (text)",
        _TEXT,
        "https://openrouter.ai/api/v1",
        context_field="context_length",
        reasoning_field="reasoning",
        stop_limit=None,
        st_name="openrouter",
        key_hint="sk-or-…",
    ),
    _text(
        "featherless",
        "Featherless",
        _TEXT,
        "https://api.featherless.ai/v1",
        context_field="context_length",
        stop_limit=None,
    ),
    _text(
        "huggingface",
        "HuggingFace",
        _TEXT,
        "",
        stop_limit=4,
        key_hint="hf_…",
        notes="your Inference Endpoint's URL, ending in /v1",
    ),
)

SOURCES: Mapping[str, Source] = {s.name: s for s in CHAT_SOURCES + TEXT_SOURCES}

# Other names a person or SillyTavern's settings use for a source
_ALIASES = {
    "anthropic": "claude",
    "mistral": "mistralai",
    "google": "makersuite",
    "gemini": "makersuite",
    "grok": "xai",
    "zeroone": "01ai",
    "textgenerationwebui": "ooba",
    "text-generation-webui": "ooba",
    "llama.cpp": "llamacpp",
    "tabbyapi": "tabby",
    "together": "togetherai",
    "infermatic": "infermaticai",
}


def find(name: str) -> Source | None:
    """The source called `name` (or one of its other names), or None."""
    key = name.strip().lower()
    return SOURCES.get(_ALIASES.get(key, key))


def usable(name: str) -> Source:
    """The source called `name`, refusing one whose service is gone."""
    found = find(name)
    if found is None:
        raise ProviderError(
            f"unknown source {name!r}", code="unknown_source", params={"name": str(name)}
        )
    if found.gone:
        raise ProviderError(
            f"{found.label} can no longer be used: {found.gone}",
            code="source_gone",
            params={"name": found.label, "reason": found.gone},
        )
    return found


def from_sillytavern(chat_source: str = "", textgen_type: str = "") -> Source | None:
    """The source SillyTavern's `chat_completion_source` or textgen `type` names."""
    family, name = (Family.CHAT, chat_source) if chat_source else (Family.TEXT, textgen_type)
    key = name.strip().lower()
    return next((s for s in SOURCES.values() if s.family is family and s.st_name == key), None)


def model_contexts(listing: Any, source: Source) -> dict[str, int]:
    """Each listed model's context size, where the source's listing says it."""
    if not source.context_field or not isinstance(listing, dict):
        return {}
    sizes: dict[str, int] = {}
    for entry in listing.get("data") or ():
        if not isinstance(entry, dict) or not entry.get("id"):
            continue
        size = entry.get(source.context_field)
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            sizes[str(entry["id"])] = size
    return sizes


def stop_strings(source: Source, stops: tuple[str, ...]) -> tuple[str, ...]:
    """The custom stop strings a request of this source carries."""
    return stops if source.stop_limit is None else stops[: source.stop_limit]


def resolve(name: str) -> tuple[Api, Source | None]:
    """The API a connection named with `name` speaks, and the source when `name` is one.

    The eight generic API names (and their old aliases) keep meaning what they did; any
    other name is looked up as a source.
    """
    try:
        return Api.parse(name), None
    except ProviderError:
        pass
    try:
        chosen = usable(name)
    except ProviderError as exc:
        if exc.code == "source_gone":
            raise
        apis = ", ".join(a.value for a in Api)
        names = ", ".join(s.name for s in SOURCES.values() if not s.gone)
        raise ProviderError(
            f"unknown API {name!r}; expected an API ({apis}) or a source ({names})",
            code="unknown_api_expected_one_of",
            params={"name": str(name), "names": f"{apis}, {names}"},
        ) from None
    return chosen.api, chosen
