"""Recall's settings (SillyTavern's `extension_settings.vectors`) and the embedding model
they name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from taverna.engine.assembly.recall import DEFAULT_TEMPLATE, RecallSettings
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.providers.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
from taverna.providers.outbound import OutboundPolicy
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND
from taverna.services.memory.recall_keys import operator_endpoint, operator_key, same_endpoint
from taverna.store.repository import Store


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Recall's settings as SillyTavern saves them (`extension_settings.vectors`)."""

    enabled_chats: bool = False
    enabled_world_info: bool = False
    placement: RecallSettings = RecallSettings()
    query: int = 2
    protect: int = 5
    score_threshold: float = 0.25
    max_entries: int = 5
    source: str = "transformers"
    endpoint: str = ""  # an OpenAI-compatible API root, for source "openai"
    model: str = "text-embedding-3-small"
    owner: str = ""  # the account whose settings these are
    # The account's own key for `endpoint` (`recall_keys.py`) and the outbound policy its
    # requests go out under, both filled in by RecallService.
    key: str = field(default="", repr=False)
    policy: OutboundPolicy | None = None

    @property
    def enabled(self) -> bool:
        return self.enabled_chats or self.enabled_world_info


def recall_config(raw_settings: Mapping[str, Any]) -> RecallConfig:
    """Read `extension_settings.vectors` from SillyTavern's settings; what is missing or
    malformed takes SillyTavern's default."""
    ext = raw_settings.get("extension_settings")
    vectors = ext.get("vectors") if isinstance(ext, Mapping) else None
    if not isinstance(vectors, Mapping):
        return RecallConfig()

    def num(name: str, default: float) -> float:
        value = vectors.get(name, default)
        try:
            return float(value)
        except (TypeError, ValueError):
            return default

    def whole(name: str, default: int) -> int:
        return int(num(name, default))

    def flag(name: str, default: bool) -> bool:
        value = vectors.get(name, default)
        return value if isinstance(value, bool) else default

    position = whole("position", int(ExtensionPosition.IN_PROMPT))
    role = whole("depth_role", int(InjectionRole.SYSTEM))
    template = vectors.get("template", DEFAULT_TEMPLATE)
    placement = RecallSettings(
        template=template if isinstance(template, str) else DEFAULT_TEMPLATE,
        position=ExtensionPosition(position)
        if position in {p.value for p in ExtensionPosition}
        else ExtensionPosition.IN_PROMPT,
        depth=max(0, whole("depth", 2)),
        role=InjectionRole(role)
        if role in {r.value for r in InjectionRole}
        else InjectionRole.SYSTEM,
        insert=max(0, whole("insert", 3)),
        budget=max(0, whole("budget", 400)),
        include_wi=flag("include_wi", False),
        score_threshold=num("score_threshold", 0.25),
    )
    source = vectors.get("source", "transformers")
    endpoint = vectors.get("alt_endpoint_url", "")
    model = vectors.get("openai_model", "text-embedding-3-small")
    return RecallConfig(
        enabled_chats=flag("enabled_chats", False),
        enabled_world_info=flag("enabled_world_info", False),
        placement=placement,
        query=max(1, whole("query", 2)),
        protect=max(0, whole("protect", 5)),
        score_threshold=num("score_threshold", 0.25),
        max_entries=max(0, whole("max_entries", 5)),
        source=source if isinstance(source, str) else "transformers",
        endpoint=endpoint if isinstance(endpoint, str) else "",
        model=model if isinstance(model, str) else "text-embedding-3-small",
    )


def embedder_for(config: RecallConfig) -> Embedder:
    """The embedding model the settings name: an OpenAI-compatible endpoint for source
    `openai`, else the bundled local model. The server's key ($TAVERNA_EMBEDDINGS_KEY)
    goes only to the operator's endpoint ($TAVERNA_EMBEDDINGS_URL, the default one); an
    endpoint the account named gets the account's own key, or none."""
    if config.source == "openai":
        operator = operator_endpoint()
        base = config.endpoint or operator
        if same_endpoint(base, operator):
            return OpenAIEmbedder(base, config.model, api_key=operator_key())
        return OpenAIEmbedder(base, config.model, api_key=config.key, policy=config.policy)
    return LocalEmbedder()


def stored_config(store: Store, owner: str = "") -> RecallConfig:
    """The recall settings of the user's active settings (`extension_settings.vectors`)."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    if not docs:
        return RecallConfig()
    return replace(recall_config(docs[-1].data), owner=owner)
