"""Connection profiles: a connection with the model, preset, templates, tokenizer and stop
strings to use with it, switched to in one go, as SillyTavern's connection manager keeps
them (`extension_settings.connectionManager.profiles`).

A profile names its connection; the rest are names of library items (a preset, an instruct
or context template, a system prompt) and SillyTavern's own words for the tokenizer. What
a profile leaves empty is left as it is when switching to it, as SillyTavern does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.store.repository import Store

KIND = "connection_profile"
CHAT_MODE = "cc"  # SillyTavern's `mode` of a Chat Completion profile
TEXT_MODE = "tc"

# SillyTavern's tokenizer keys (`/tokenizer`) and their ids (`power_user.tokenizer`)
TOKENIZER_IDS = {
    "none": 0,
    "gpt2": 1,
    "openai": 2,
    "llama": 3,
    "nerd": 4,
    "nerd2": 5,
    "api_current": 6,
    "mistral": 7,
    "yi": 8,
    "api_textgenerationwebui": 9,
    "api_kobold": 10,
    "claude": 11,
    "llama3": 12,
    "gemma": 13,
    "jamba": 14,
    "qwen2": 15,
    "command_r": 16,
    "nemo": 17,
    "best_match": 99,
}


@dataclass(frozen=True, slots=True)
class Profile:
    """One profile: the connection and what goes with it ("" and () leave a part as it is).

    `mode` is `cc` (Chat Completion: `preset` is a Chat Completion preset) or `tc` (Text
    Completion: a Text Completion preset, with the templates). `sysprompt_enabled` None
    leaves the system prompt's switch as it is. `st_id`: SillyTavern's id of the profile.
    """

    name: str
    connection: str
    mode: str = CHAT_MODE
    model: str = ""
    preset: str = ""
    instruct: str = ""
    context: str = ""
    sysprompt: str = ""
    sysprompt_enabled: bool | None = None
    tokenizer: str = ""
    stop_strings: tuple[str, ...] | None = None
    start_reply_with: str = ""
    st_id: str = ""
    revision: int = 0
    extras: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tokenizer_id(self) -> int | None:
        """The tokenizer as SillyTavern's `power_user.tokenizer` id, when it names one."""
        return TOKENIZER_IDS.get(self.tokenizer.strip().lower())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("revision")
        data["stop_strings"] = None if self.stop_strings is None else list(self.stop_strings)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], revision: int = 0) -> Profile:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        stops = known.get("stop_strings")
        known["stop_strings"] = None if stops is None else tuple(str(s) for s in stops)
        known["revision"] = revision
        return cls(**known)


def check_profile(profile: Profile) -> Profile:
    """A profile as given, or TavernaError naming the field that cannot be."""
    if not profile.name.strip():
        raise TavernaError("a profile needs a name", field="name", code="profile_needs_name")
    if not profile.connection.strip():
        raise TavernaError(
            "a profile names its connection", field="connection", code="profile_needs_connection"
        )
    if profile.mode not in (CHAT_MODE, TEXT_MODE):
        raise TavernaError(
            "a profile's mode is cc (Chat Completion) or tc (Text Completion)",
            field="mode",
            code="profile_mode_cc_or_tc",
        )
    if profile.tokenizer and profile.tokenizer_id is None:
        names = ", ".join(TOKENIZER_IDS)
        raise TavernaError(
            f"unknown tokenizer {profile.tokenizer!r}; expected one of {names}",
            field="tokenizer",
            code="profile_unknown_tokenizer",
            params={"name": profile.tokenizer, "names": names},
        )
    return profile


class Profiles:
    """The profiles of one account, stored beside its connections."""

    def __init__(self, store: Store, owner: str = "") -> None:
        self.store = store
        self.owner = owner

    def list(self) -> list[Profile]:
        docs = self.store.find_documents(KIND, owner=self.owner)
        return sorted(
            (Profile.from_json(d.data, d.revision) for d in docs), key=lambda p: p.name.lower()
        )

    def get(self, name: str) -> Profile:
        for profile in self.list():
            if profile.name == name:
                return profile
        raise NotFound(
            f"no connection profile named {name!r}",
            code="no_connection_profile_named",
            params={"name": name},
        )

    def put(self, profile: Profile) -> Profile:
        """Create or replace the profile of its name."""
        profile = check_profile(profile)
        docs = self.store.find_documents(KIND, name=profile.name, owner=self.owner)
        doc = self.store.put_document(
            KIND,
            profile.name,
            profile.to_json(),
            id=docs[-1].id if docs else None,
            revision=docs[-1].revision if docs else None,
            owner=self.owner,
        )
        return Profile.from_json(doc.data, doc.revision)

    def delete(self, name: str) -> None:
        docs = self.store.find_documents(KIND, name=name, owner=self.owner)
        if not docs:
            self.get(name)  # NotFound, named
        for doc in docs:
            self.store.delete_document(doc.id, revision=doc.revision)


def _stops(value: Any) -> tuple[str, ...] | None:
    """SillyTavern's `stop-strings`: a JSON array as text (or an array); "" keeps the
    custom stop strings as they are."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, list):
        return tuple(str(s) for s in value if isinstance(s, str) and s)
    return None


def _state(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    # SillyTavern writes `<None>`-less empties; a missing part is ""
    return value.strip() if isinstance(value, str) else ""


def from_sillytavern(raw: Mapping[str, Any], connection: str) -> Profile:
    """A profile of SillyTavern's connection manager, on the connection `connection`
    (made from the profile's API and URL by the caller)."""
    mode = TEXT_MODE if raw.get("mode") == TEXT_MODE else CHAT_MODE
    kept = {
        k: v
        for k in ("api", "api-url", "proxy", "reasoning-template", "prompt-post-processing")
        if (v := raw.get(k))
    }
    return Profile(
        name=_text(raw, "name") or _text(raw, "id") or connection,
        connection=connection,
        mode=mode,
        model=_text(raw, "model"),
        preset=_text(raw, "preset"),
        instruct=_text(raw, "instruct"),
        context=_text(raw, "context"),
        sysprompt=_text(raw, "sysprompt"),
        sysprompt_enabled=_state(raw.get("sysprompt-state")),
        tokenizer=_text(raw, "tokenizer")
        if _text(raw, "tokenizer").lower() in TOKENIZER_IDS
        else "",
        stop_strings=_stops(raw.get("stop-strings")),
        start_reply_with=_text(raw, "start-reply-with"),
        st_id=_text(raw, "id"),
        extras=kept,
    )


def sillytavern_profiles(settings: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The profiles a SillyTavern `settings.json` keeps, each an object."""
    extensions = settings.get("extension_settings")
    manager = extensions.get("connectionManager") if isinstance(extensions, Mapping) else None
    found = manager.get("profiles") if isinstance(manager, Mapping) else None
    return [p for p in found if isinstance(p, Mapping)] if isinstance(found, list) else []
