"""A connection: a named way to reach a model, as stored (its key only by reference)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taverna.providers.request import Api, PostProcessing


@dataclass(frozen=True, slots=True)
class Connection:
    """A named way to reach a model: API, base URL, model, and where its key is.

    `key_ref` is `env:NAME`, `secret:<id>` or empty (no key). `options` holds
    per-API request settings (e.g. `use_system_prompt`, `stream`).
    """

    name: str
    api: Api
    url: str = ""
    model: str = ""
    key_ref: str = ""
    post_processing: PostProcessing = PostProcessing.NONE
    default: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""
    revision: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "api": self.api.value,
            "url": self.url,
            "model": self.model,
            "key_ref": self.key_ref,
            "post_processing": self.post_processing.value,
            "default": self.default,
            "options": dict(self.options),
        }

    def public(self, key_hint: str = "") -> dict[str, Any]:
        """What a listing may show: everything but the key, which is masked."""
        key_source = self.key_ref.split(":", 1)[0] if self.key_ref else "none"
        shown = {k: v for k, v in self.to_json().items() if k != "key_ref"}
        if key_source == "env":
            shown["key"] = f"from ${self.key_ref.split(':', 1)[1]}"
        else:
            shown["key"] = key_hint if key_source == "secret" else "none"
        return {"name": self.name, **shown}
