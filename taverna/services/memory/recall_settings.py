"""Recall's settings as a person reads and changes them: SillyTavern's
`extension_settings.vectors` of the active settings, under its names.

A change names only the keys it changes; the others, SillyTavern's keys this product
does not use among them, are kept. A value of the wrong kind is refused with the key
named, and nothing is stored.

`api_key` is the person's own key for the endpoint they name (`recall_keys.py`): written,
never read back (a read shows `api_key_hint`, its last characters) and never stored in
the settings document.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from taverna.errors import FormatError
from taverna.model.injection import ExtensionPosition, InjectionRole
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, set_active
from taverna.services.library.service import LibraryService
from taverna.services.memory.recall import RecallConfig, recall_config
from taverna.services.memory.recall_keys import RecallKeys
from taverna.store.repository import Store

EXTENSION_SETTINGS = "extension_settings"
SOURCES = ("transformers", "openai")  # the bundled model; an OpenAI-compatible API

_FLAGS = ("enabled_chats", "enabled_world_info", "include_wi")
_COUNTS = ("query", "insert", "protect", "depth", "budget", "max_entries")
_TEXTS = ("template", "alt_endpoint_url", "openai_model", "api_key")
# Read-only or write-only: never stored in the settings document.
_NOT_STORED = ("api_key", "api_key_hint")


def _raw(store: Store, owner: str) -> dict[str, Any]:
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    extensions = docs[-1].data.get(EXTENSION_SETTINGS) if docs else None
    vectors = extensions.get("vectors") if isinstance(extensions, Mapping) else None
    return dict(vectors) if isinstance(vectors, Mapping) else {}


def to_st(config: RecallConfig) -> dict[str, Any]:
    """The settings in force, under SillyTavern's names."""
    placement = config.placement
    return {
        "enabled_chats": config.enabled_chats,
        "enabled_world_info": config.enabled_world_info,
        "source": config.source,
        "alt_endpoint_url": config.endpoint,
        "openai_model": config.model,
        "template": placement.template,
        "position": int(placement.position),
        "depth": placement.depth,
        "depth_role": int(placement.role),
        "insert": placement.insert,
        "query": config.query,
        "protect": config.protect,
        "budget": placement.budget,
        "score_threshold": config.score_threshold,
        "include_wi": placement.include_wi,
        "max_entries": config.max_entries,
    }


def read_recall_settings(store: Store, owner: str = "") -> dict[str, Any]:
    """The person's recall settings in force (defaults for what was never set)."""
    return to_st(recall_config({EXTENSION_SETTINGS: {"vectors": _raw(store, owner)}}))


def _check(changes: Mapping[str, Any]) -> None:
    for key, value in changes.items():
        if key in _FLAGS and not isinstance(value, bool):
            raise FormatError(
                f"{key} must be true or false",
                field=key,
                code="must_be_true_or_false",
                params={"key": str(key)},
            )
        if key in _COUNTS and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise FormatError(
                f"{key} must be a whole number, 0 or more",
                field=key,
                code="must_be_whole_number_0",
                params={"key": str(key)},
            )
        if key in _TEXTS and not isinstance(value, str):
            raise FormatError(
                f"{key} must be a text", field=key, code="must_be_text", params={"key": str(key)}
            )
    if "query" in changes and changes["query"] < 1:
        raise FormatError("query must be 1 or more", field="query", code="query_must_be_1_or")
    if "source" in changes and changes["source"] not in SOURCES:
        raise FormatError(
            f"source must be one of {', '.join(SOURCES)}",
            field="source",
            code="source_must_be_one_of",
            params={"sources": str(", ".join(SOURCES))},
        )
    if "position" in changes and (
        isinstance(changes["position"], bool)
        or changes["position"] not in {int(p) for p in ExtensionPosition}
    ):
        raise FormatError(
            "position must be -1, 0, 1 or 2", field="position", code="position_must_be_1_0"
        )
    if "depth_role" in changes and (
        isinstance(changes["depth_role"], bool)
        or changes["depth_role"] not in {int(r) for r in InjectionRole}
    ):
        raise FormatError(
            "depth_role must be 0, 1 or 2", field="depth_role", code="depth_role_must_be_0"
        )
    if "score_threshold" in changes:
        value = changes["score_threshold"]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not -1 <= value <= 1
        ):
            raise FormatError(
                "score_threshold must be a number from -1 to 1",
                field="score_threshold",
                code="score_threshold_must_be_number",
            )
    url = changes.get("alt_endpoint_url")
    if url and not str(url).startswith(("http://", "https://")):
        raise FormatError(
            "alt_endpoint_url must start with http:// or https://",
            field="alt_endpoint_url",
            code="alt_endpoint_url_must_start",
        )


def change_recall_settings(
    store: Store, changes: Mapping[str, Any], owner: str = ""
) -> dict[str, Any]:
    """Change some recall settings (SillyTavern's names); the settings in force after."""
    _check(changes)
    changes = {k: v for k, v in changes.items() if k not in _NOT_STORED}
    merged = {**_raw(store, owner), **changes}
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    extensions = docs[-1].data.get(EXTENSION_SETTINGS) if docs else None
    part = dict(extensions) if isinstance(extensions, Mapping) else {}
    part["vectors"] = merged
    set_active(store, EXTENSION_SETTINGS, part, owner)
    return read_recall_settings(store, owner)


class RecallSettingsService:
    """One account's recall settings, as the routes read and change them, with the hint
    of the account's own key for its endpoint (`keys`: where those keys are kept)."""

    def __init__(self, library: LibraryService, keys: RecallKeys | None = None) -> None:
        self._store = library.store
        self._owner = library.owner
        self._keys = keys

    def read(self) -> dict[str, Any]:
        settings = read_recall_settings(self._store, self._owner)
        return self._hinted(settings)

    def _hinted(self, settings: dict[str, Any]) -> dict[str, Any]:
        if self._keys is not None:
            hint = self._keys.hint(self._owner, str(settings["alt_endpoint_url"]))
            settings["api_key_hint"] = hint
        return settings

    def change(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change the settings; `api_key` keeps the account's key for the endpoint in
        force after the change ("" removes it). A key is checked before anything is stored."""
        _check(changes)
        key = changes.get("api_key")
        if key is not None:
            if self._keys is None:
                raise FormatError(
                    "this server keeps no keys for recall", field="api_key", code="recall_no_keys"
                )
            if str(key).strip():
                endpoint = changes.get("alt_endpoint_url")
                if endpoint is None:
                    endpoint = read_recall_settings(self._store, self._owner)["alt_endpoint_url"]
                self._keys.put(self._owner, str(endpoint), str(key))
            else:
                self._keys.remove(self._owner)
        return self._hinted(change_recall_settings(self._store, changes, self._owner))
