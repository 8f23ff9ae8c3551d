"""Library documents parsed once per stored version, and how each kind a turn uses is read.

A turn asks the store only for the versions of what it uses; the parsed card, preset,
persona, regex script, group, settings or lorebook is kept under its version, so a
lorebook of 10,000 entries is read, parsed and compiled once per edit, not once per
turn. Another process's edit bumps the version, which the next turn here sees.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from taverna.engine.assembly.context import CharacterInfo
from taverna.formats.card_json import card_from_json
from taverna.formats.st_settings import (
    TEXT_COMPLETION_API,
    preset_regex_allowed,
    read_extension_choices,
    read_power_user_settings,
    read_world_info_settings,
)
from taverna.formats.world_info import world_info_from_json
from taverna.model.group import Group
from taverna.model.lorebook import Lorebook, WorldInfoSettings
from taverna.model.persona import Persona
from taverna.model.settings import PowerUserSettings
from taverna.model.summary import SummarySettings
from taverna.services.chats.groups import read_group as read_group_file
from taverna.services.interchange.settings_import import POWER_USER
from taverna.services.library.active_settings import (
    SYSPROMPT_ENABLED,
    active_choices_document,
    world_info_settings,
)
from taverna.services.library.regex_library import regex_order, stored_regex_script
from taverna.services.turns.inputs import character_info
from taverna.store.repository import Document, DocumentVersion, Store

__all__ = [
    "ActiveSettings",
    "ParsedBook",
    "ParsedDocuments",
    "read_active",
    "read_character",
    "read_group",
    "read_lorebook",
    "read_persona",
    "read_regex_script",
]

T = TypeVar("T")


class ParsedDocuments:
    """Library documents parsed once per stored version and kept for every turn.

    Keyed by `(what, id, revision, updated)`: an edit, a delete and re-create, or a
    write by another process gives a new key. Bounded to the `size` most recent.
    """

    def __init__(self, store: Store, *, size: int = 256) -> None:
        self.store = store
        self.size = size
        self._parsed: OrderedDict[tuple[str, str, int, Any], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, str, int, Any], threading.Lock] = {}
        self.parses = 0  # documents parsed (for tests and benchmarks)

    def get(self, what: str, version: DocumentVersion, parse: Callable[[Document], T]) -> T:
        """The document of `version` through `parse`, parsed at most once."""
        key = (what, version.id, version.revision, version.updated)
        with self._lock:
            if key in self._parsed:
                self._parsed.move_to_end(key)
                found: T = self._parsed[key]
                return found
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # two turns wanting the same big book parse it once
            with self._lock:
                if key in self._parsed:
                    again: T = self._parsed[key]
                    return again
            value = parse(self.store.get_document(version.id))
            self.parses += 1
            with self._lock:
                self._parsed[key] = value
                self._loading.pop(key, None)
                while len(self._parsed) > self.size:
                    self._parsed.popitem(last=False)
            return value


@dataclass(frozen=True, slots=True)
class ParsedBook:
    """A parsed lorebook and what the window needs to know of it."""

    book: Lorebook
    deepest_scan: int


@dataclass(frozen=True, slots=True)
class ActiveSettings:
    """The user's `active` settings document, read: the chosen presets' ids, the
    world-info settings as stored and as read, the power-user settings, and what its
    `extension_settings` hold for prompts (the global variables, the cards allowed their
    own regex scripts); None and empty where the user has none."""

    choices: Mapping[str, str] = field(default_factory=dict)
    world: tuple[Mapping[str, Any], WorldInfoSettings] | None = None
    power_user: PowerUserSettings | None = None
    global_variables: Mapping[str, Any] = field(default_factory=dict)
    regex_allowed: tuple[str, ...] = ()
    preset_regex_allowed: tuple[str, ...] = ()  # Chat Completion presets, by name
    text_preset_regex_allowed: tuple[str, ...] = ()  # Text Completion presets, by name
    regex_order: tuple[str, ...] = ()  # the global scripts' ids, in the order they run
    vectors: Mapping[str, Any] = field(default_factory=dict)  # `extension_settings.vectors`
    summary: SummarySettings = field(default_factory=SummarySettings)  # `...memory`
    # `power_user.sysprompt.enabled`: the system prompt is used (`/sysprompt-state`).
    system_prompt_enabled: bool = True


def read_active(doc: Document) -> ActiveSettings:
    """The `active` settings document read (once per version, like every document)."""
    world = world_info_settings(doc)
    read = None if world is None else (world, read_world_info_settings(world, file=doc.name))
    power = doc.data.get(POWER_USER)
    variables, allowed = read_extension_choices(doc.data, file=doc.name)
    extensions = doc.data.get("extension_settings")
    vectors = extensions.get("vectors") if isinstance(extensions, Mapping) else None
    return ActiveSettings(
        active_choices_document(doc),
        read,
        read_power_user_settings(power, file=doc.name) if isinstance(power, Mapping) else None,
        variables,
        allowed,
        preset_regex_allowed=preset_regex_allowed(doc.data, file=doc.name),
        text_preset_regex_allowed=preset_regex_allowed(
            doc.data, TEXT_COMPLETION_API, file=doc.name
        ),
        regex_order=regex_order(doc),
        vectors=vectors if isinstance(vectors, Mapping) else {},
        summary=_summary_settings(extensions),
        system_prompt_enabled=doc.data.get(SYSPROMPT_ENABLED, True) is not False,
    )


def _summary_settings(extensions: Any) -> SummarySettings:
    memory = extensions.get("memory") if isinstance(extensions, Mapping) else None
    return SummarySettings.from_st(memory) if isinstance(memory, Mapping) else SummarySettings()


def read_group(doc: Document) -> Group:
    return read_group_file(doc.data, file=doc.name)


def read_character(doc: Document) -> CharacterInfo:
    return character_info(card_from_json(dict(doc.data), file=doc.name))


def read_persona(doc: Document) -> Persona:
    return Persona.model_validate(dict(doc.data))


read_regex_script = stored_regex_script


def read_lorebook(version: DocumentVersion) -> Callable[[Document], ParsedBook]:
    """The reader of the lorebook stored as `version` (its compiled index is named by it)."""

    def parse(doc: Document) -> ParsedBook:
        book = world_info_from_json(doc.data, name=doc.name, file=doc.name)
        # The compiled index is kept per name and revision: this names the content.
        book = replace(book, revision=f"{version.id}:{version.revision}:{version.updated}")
        deepest = max((e.scan_depth or 0 for e in book.entries), default=0)
        return ParsedBook(book, deepest)

    return parse
