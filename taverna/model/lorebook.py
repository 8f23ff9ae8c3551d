"""Lorebooks (SillyTavern "world info"): books, their entries, and entry timers.

An `Entry` carries every field SillyTavern 1.12.6 stores for a world info entry
(formats-world-info.md §2), typed, under Python names. Three bookkeeping fields make
reading and writing a foreign file lossless:

- `extras`: fields this model does not know (newer SillyTavern fields such as
  `outletName`, `ignoreBudget`, `triggers`, extension data), kept verbatim;
- `missing`: the SillyTavern names of known fields the source file did not have. Such a
  field holds the value SillyTavern's generation code behaves as if it had (the "if
  missing" column of the spec, e.g. `selective` False, `position` None = inserted
  nowhere) and is left out again when written back;
- `field_order`: the source file's key order. It matters beyond cosmetics: SillyTavern
  identifies an entry's timers by a hash of its JSON in file order (§6).

Entries built in code leave all three empty and are written with every field in
SillyTavern's own order. Use `Entry.changed(...)` rather than `dataclasses.replace` to
edit an entry: it also forgets that the changed fields were missing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from types import MappingProxyType
from typing import Any

from taverna.model.injection import InjectionRole

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


_GROUP_SPLIT = re.compile(r",\s*")


class Position(IntEnum):
    """Where an activated entry's content goes (formats-world-info.md §3.2)."""

    BEFORE = 0  # "World Info (before)" slot, before the character definitions
    AFTER = 1  # "World Info (after)" slot
    AN_TOP = 2  # prepended to the Author's Note
    AN_BOTTOM = 3  # appended to the Author's Note
    AT_DEPTH = 4  # injected into the chat history at `depth`, as `role`
    EM_TOP = 5  # before the example dialogue
    EM_BOTTOM = 6  # after the example dialogue
    OUTLET = 7  # only where a `{{outlet::name}}` macro asks for it (newer SillyTavern)


class SelectiveLogic(IntEnum):
    """How secondary keys combine with a primary match (formats-world-info.md §3.1)."""

    AND_ANY = 0
    NOT_ALL = 1
    NOT_ANY = 2
    AND_ALL = 3


class CharacterStrategy(IntEnum):
    """How global and character lore are ordered together (formats-world-info.md §3.4)."""

    EVENLY = 0
    CHARACTER_FIRST = 1
    GLOBAL_FIRST = 2


class Boundaries(StrEnum):
    """Which characters end a word for whole-word matching (see engine/lorebook/matching.py)."""

    ASCII = "ascii"  # SillyTavern 1.12.6: JavaScript's ASCII `\W`
    UNICODE = "unicode"  # every script's letters are word characters; CJK-aware


@dataclass(frozen=True, slots=True)
class WorldInfoSettings:
    r"""SillyTavern's global world-info settings (`world_info_settings`, algo-world-info.md §0).

    Defaults are SillyTavern's code defaults; `DEFAULT_WORLD_INFO` holds a new install's.
    `global_select` names the books selected for every chat. `boundaries` chooses the
    whole-word rule: `UNICODE` (taverna's, CJK-aware) or `ASCII` (SillyTavern's exact
    JavaScript `\W`).
    """

    global_select: tuple[str, ...] = ()
    depth: int = 2
    budget_percent: float = 25  # of the prompt budget
    budget_cap: int = 0
    include_names: bool = True
    recursive: bool = False
    case_sensitive: bool = False
    match_whole_words: bool = False
    use_group_scoring: bool = False
    character_strategy: CharacterStrategy = CharacterStrategy.CHARACTER_FIRST
    min_activations: int = 0
    min_activations_depth_max: int = 0
    max_recursion_steps: int = 0
    overflow_alert: bool = False
    boundaries: Boundaries = Boundaries.UNICODE

    def budget_for(self, max_context: int) -> int:
        """Tokens the scan may spend: a share of the prompt budget, capped (§4.1 step 2)."""
        raw = self.budget_percent * max_context / 100
        budget = int(raw + 0.5) if raw >= 0 else -int(-raw + 0.5)  # JavaScript Math.round
        budget = budget or 1
        if self.budget_cap > 0 and budget > self.budget_cap:
            budget = self.budget_cap
        return budget


# A new install's world-info settings (its `settings.json`): recursive scanning and whole
# words on (algo-world-info.md §0).
DEFAULT_WORLD_INFO = WorldInfoSettings(recursive=True, match_whole_words=True)


# ------------------------------------------------------------------- scan results


class EntryOutcome(StrEnum):
    """What finally happened to an entry in one lorebook scan."""

    ACTIVATED = "activated"
    DISABLED = "disabled"
    CHARACTER_FILTER = "character filter"
    TAG_FILTER = "tag filter"
    DELAY = "delay"
    COOLDOWN = "cooldown"
    DELAY_UNTIL_RECURSION = "delay until recursion"
    EXCLUDE_RECURSION = "exclude recursion"
    DONT_ACTIVATE = "@@dont_activate"
    NO_KEYS = "no keys"
    NO_MATCH = "no match"
    SECONDARY = "secondary keys"
    GROUP = "inclusion group"
    PROBABILITY = "probability"
    BUDGET = "budget"
    NOT_REACHED = "not reached"


# Why an entry fired or not, by a stable code, and the English sentence of each code (with
# its params in braces). A page says the reason in its language by the code; the English
# is for the command line and the API.
REASON_TEXTS: Mapping[str, str] = {
    "activated": "activated",
    "disabled": "disabled",
    "constant": "constant",
    "sticky": "sticky",
    "on_cooldown": "on cooldown",
    "no_primary_keys": "has no primary keys",
    "no_primary_key": "no primary key found in the scanned text",
    "primary_key": "primary key '{key}'",
    "secondary_fail": "primary key '{key}' found but secondary keys fail {logic}",
    "secondary_pass": "primary key '{key}' and secondary keys satisfy {logic}",
    "character_filter": "filtered out for this character",
    "tag_filter": "filtered out by the character's tags",
    "delay": "delayed until the chat has {n} messages",
    "waits_recursion": "waits for a recursion pass",
    "waits_level": "waits for recursion level {level} (now {now})",
    "exclude_recursion": "cannot be activated by other entries",
    "activate_decorator": "@@activate decorator",
    "dont_activate_decorator": "@@dont_activate decorator",
    "forced": "activated from outside the scan",
    "similarity": "similarity {score} (vectorized)",
    "after_budget": "after the budget overflowed",
    "probability": "rolled {roll} > probability {chance}",
    "budget": "budget of {budget} tokens reached; the scan stops here",
    "group_sticky": "lost group '{group}' to a sticky member",
    "group_prioritized": "lost group '{group}' to a prioritized member",
    "group_cooldown": "on cooldown inside group '{group}'",
    "group_delay": "delayed inside group '{group}'",
    "group_score": "scored {score} < {best} in group '{group}'",
    "group_earlier": "group '{group}' already activated in an earlier pass",
    "group_draw": "lost the weighted draw of group '{group}' ({roll} of {total})",
    "group_quirk": "removed by SillyTavern's splice(-1) quirk",
}

# Said after a no-match reason whose param `stopped` is 1: a regex key ran out of time.
REGEX_KEY_STOPPED = " (a regex key was stopped by a time limit and counted as no match)"


@dataclass(frozen=True, slots=True)
class Reason:
    """Why the scan decided as it did: a code of `REASON_TEXTS` and the values its
    sentence names. `given`: a sentence from outside the scan, with no code of its own."""

    code: str
    params: Mapping[str, str | int] = field(default_factory=_empty)
    given: str = ""

    @property
    def text(self) -> str:
        """The reason in English."""
        if not self.code:
            return self.given
        text = REASON_TEXTS[self.code].format_map(self.params)
        return text + REGEX_KEY_STOPPED if self.params.get("stopped") else text


@dataclass(frozen=True, slots=True)
class EntryTrace:
    """Why one entry fired or not, for the prompt inspector.

    `loop` is the scan pass (1 = first) of the last decision; `primary_key` the first
    primary key found; `secondary_keys` the secondary keys found; `roll` the probability
    roll (0-100) when one was made. `keys`: the entry's primary keys when it has no title
    (`comment`), so a page can name it by them. `found_in`: for an entry whose key was
    found by recursion, the activated entry whose text holds it (`book`, `uid`, `title`).
    """

    book: str
    uid: int
    comment: str
    outcome: EntryOutcome
    reason: str
    loop: int = 0
    primary_key: str | None = None
    secondary_keys: tuple[str, ...] = ()
    roll: float | None = None
    # the reason's code and params (`Reason`), for a page to say it in its language
    code: str = ""
    params: Mapping[str, str | int] = field(default_factory=_empty)
    keys: tuple[str, ...] = ()
    found_in: Mapping[str, str | int] = field(default_factory=_empty)

    def to_json(self) -> dict[str, Any]:
        """The record as plain JSON (a stored prompt's ledger keeps it so)."""
        # the keys and the recursion's source only where there are some: a record stays small
        extra: dict[str, Any] = {}
        if self.keys:
            extra["keys"] = list(self.keys)
        if self.found_in:
            extra["found_in"] = dict(self.found_in)
        return {
            "book": self.book,
            "uid": self.uid,
            "comment": self.comment,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "code": self.code,
            "params": dict(self.params),
            "loop": self.loop,
            "primary_key": self.primary_key,
            "secondary_keys": list(self.secondary_keys),
            "roll": self.roll,
            **extra,
        }


@dataclass(frozen=True, slots=True)
class CharacterFilter:
    """Limits an entry to (or excludes it from) some characters or tags.

    `names` are character file stems (the avatar file name without `.png`), `tags` are
    tag ids.
    """

    is_exclude: bool = False
    names: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=_empty)
    missing: frozenset[str] = frozenset()
    field_order: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Entry:
    """One lorebook entry with every SillyTavern field, typed.

    Numbers keep the JSON type they were read with (an `order` of `100.0` stays a
    float) so that writing gives the same JSON back. `delay_until_recursion` is
    SillyTavern's bool-or-level field: `False`/`0` off, `True` level 1, N level N.
    """

    uid: int
    key: tuple[str, ...] = ()
    keysecondary: tuple[str, ...] = ()
    comment: str = ""
    content: str = ""
    constant: bool = False
    vectorized: bool = False
    selective: bool = True
    selective_logic: SelectiveLogic = SelectiveLogic.AND_ANY
    add_memo: bool = False
    order: int | float = 100
    position: Position | None = Position.BEFORE
    disable: bool = False
    exclude_recursion: bool = False
    prevent_recursion: bool = False
    delay_until_recursion: bool | int = 0
    probability: int | float = 100
    use_probability: bool = True
    depth: int | None = 4
    group: str = ""
    group_override: bool = False
    group_weight: int | float | None = 100
    scan_depth: int | None = None
    case_sensitive: bool | None = None
    match_whole_words: bool | None = None
    use_group_scoring: bool | None = None
    automation_id: str = ""
    role: InjectionRole | None = InjectionRole.SYSTEM
    sticky: int | None = None
    cooldown: int | None = None
    delay: int | None = None
    display_index: int | None = None
    character_filter: CharacterFilter | None = None
    extras: Mapping[str, Any] = field(default_factory=_empty)
    missing: frozenset[str] = frozenset()
    field_order: tuple[str, ...] = ()

    def changed(self, **changes: Any) -> Entry:
        """A copy with `changes` applied (Python names); changed fields count as present."""
        names = {ATTR_TO_JSON[name] for name in changes if name in ATTR_TO_JSON}
        return dataclasses.replace(self, missing=self.missing - names, **changes)

    @property
    def delay_level(self) -> int:
        """The recursion level this entry waits for; 0 when it does not wait."""
        value = self.delay_until_recursion
        if value is True:
            return 1
        if value is False:
            return 0
        return max(int(value), 0)

    @property
    def groups(self) -> tuple[str, ...]:
        """Inclusion group names: `group` split on commas, empty parts dropped.

        algo-world-info.md §6.1: split on `,` plus following whitespace.
        """
        if not self.group:
            return ()
        return tuple(part for part in _GROUP_SPLIT.split(self.group) if part)


# (Python attribute, SillyTavern JSON name), in the order SillyTavern writes new entries.
ENTRY_FIELDS: tuple[tuple[str, str], ...] = (
    ("uid", "uid"),
    ("key", "key"),
    ("keysecondary", "keysecondary"),
    ("comment", "comment"),
    ("content", "content"),
    ("constant", "constant"),
    ("vectorized", "vectorized"),
    ("selective", "selective"),
    ("selective_logic", "selectiveLogic"),
    ("add_memo", "addMemo"),
    ("order", "order"),
    ("position", "position"),
    ("disable", "disable"),
    ("exclude_recursion", "excludeRecursion"),
    ("prevent_recursion", "preventRecursion"),
    ("delay_until_recursion", "delayUntilRecursion"),
    ("probability", "probability"),
    ("use_probability", "useProbability"),
    ("depth", "depth"),
    ("group", "group"),
    ("group_override", "groupOverride"),
    ("group_weight", "groupWeight"),
    ("scan_depth", "scanDepth"),
    ("case_sensitive", "caseSensitive"),
    ("match_whole_words", "matchWholeWords"),
    ("use_group_scoring", "useGroupScoring"),
    ("automation_id", "automationId"),
    ("role", "role"),
    ("sticky", "sticky"),
    ("cooldown", "cooldown"),
    ("delay", "delay"),
    ("display_index", "displayIndex"),
    ("character_filter", "characterFilter"),
)
ATTR_TO_JSON: Mapping[str, str] = MappingProxyType(dict(ENTRY_FIELDS))
JSON_TO_ATTR: Mapping[str, str] = MappingProxyType({j: a for a, j in ENTRY_FIELDS})

# How SillyTavern's generation code treats a field absent from the file
# (formats-world-info.md §2, "If missing"), where that differs from a new entry's default.
MISSING_VALUES: Mapping[str, Any] = MappingProxyType(
    {
        "selective": False,
        "use_probability": False,
        "position": None,  # the entry activates but is inserted nowhere
        "depth": None,
        "role": None,
        "display_index": None,
    }
)


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Lorebook:
    """A named lorebook: its entries in file order plus unknown top-level fields.

    `name` is the file stem (SillyTavern keeps no name inside the file); `extras` holds
    `originalData` and anything else besides `entries`. Hashing is by identity so that
    compiled key indexes can be cached per book object (books are immutable: an edit
    makes a new object). `revision`, when a store sets it, names this exact content:
    two objects with the same name and revision share one compiled index, so a book
    loaded afresh every turn is not recompiled. It takes no part in equality.
    """

    name: str
    entries: tuple[Entry, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=_empty)
    field_order: tuple[str, ...] = ()
    revision: str = field(default="", compare=False)

    __hash__ = object.__hash__

    def with_entry(self, entry: Entry) -> Lorebook:
        """A copy with `entry` replacing the entry of the same uid, or added at the end."""
        entries = list(self.entries)
        for index, item in enumerate(entries):
            if item.uid == entry.uid:
                entries[index] = entry
                break
        else:
            entries.append(entry)
        return dataclasses.replace(self, entries=tuple(entries), revision="")

    def without_entry(self, uid: int) -> Lorebook:
        """A copy without the entry of this uid."""
        entries = tuple(item for item in self.entries if item.uid != uid)
        return dataclasses.replace(self, entries=entries, revision="")

    def entry(self, uid: int) -> Entry | None:
        """The entry with this uid, if any."""
        for item in self.entries:
            if item.uid == uid:
                return item
        return None

    def free_uid(self) -> int:
        """The uid a new entry gets: the smallest non-negative integer not in use."""
        used = {item.uid for item in self.entries}
        uid = 0
        while uid in used:
            uid += 1
        return uid


@dataclass(frozen=True, slots=True)
class TimedEffect:
    """One running sticky or cooldown period (algo-world-info.md §7).

    `start` and `end` count visible messages on the active path; `hash` names the entry
    version that started it (SillyTavern's content hash, §1 step 6).
    """

    hash: int
    start: int
    end: int
    protected: bool = False


@dataclass(frozen=True, slots=True)
class TimedEffects:
    """The sticky and cooldown periods of one chat path, keyed `"<book>.<uid>"`.

    This is SillyTavern's `chat_metadata.timedWorldInfo`; it lives on the conversation
    node that last changed it.
    """

    sticky: Mapping[str, TimedEffect] = field(default_factory=_empty)
    cooldown: Mapping[str, TimedEffect] = field(default_factory=_empty)

    @staticmethod
    def from_json(data: Any) -> TimedEffects:
        """Read `timedWorldInfo`; non-object records are dropped, as SillyTavern does."""
        if not isinstance(data, Mapping):
            return TimedEffects()

        def read(kind: str) -> Mapping[str, TimedEffect]:
            records = data.get(kind)
            out: dict[str, TimedEffect] = {}
            if not isinstance(records, Mapping):
                return out
            for name, value in records.items():
                if not isinstance(value, Mapping):
                    continue
                try:
                    out[str(name)] = TimedEffect(
                        hash=int(value.get("hash", 0)),
                        start=int(value.get("start", 0)),
                        end=int(value.get("end", 0)),
                        protected=bool(value.get("protected", False)),
                    )
                except (TypeError, ValueError):
                    continue
            return out

        return TimedEffects(sticky=read("sticky"), cooldown=read("cooldown"))

    def to_json(self) -> dict[str, Any]:
        """`timedWorldInfo` as SillyTavern stores it in the chat header."""

        def write(records: Mapping[str, TimedEffect]) -> dict[str, Any]:
            return {
                name: {
                    "hash": rec.hash,
                    "start": rec.start,
                    "end": rec.end,
                    "protected": rec.protected,
                }
                for name, rec in records.items()
            }

        return {"sticky": write(self.sticky), "cooldown": write(self.cooldown)}


def _entry_value(name: str, value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Position | SelectiveLogic | InjectionRole):
        return int(value)
    if isinstance(value, CharacterFilter):
        return _filter_to_json(value)
    return value


def _filter_to_json(value: CharacterFilter) -> dict[str, Any]:
    known: dict[str, Any] = {
        "isExclude": value.is_exclude,
        "names": list(value.names),
        "tags": list(value.tags),
    }
    known = {k: v for k, v in known.items() if k not in value.missing}
    return ordered_fields(known, value.extras, value.field_order)


def ordered_fields(
    known: Mapping[str, Any], extras: Mapping[str, Any], order: tuple[str, ...]
) -> dict[str, Any]:
    """Known fields and extras, in the source order first, then anything new."""
    out: dict[str, Any] = {}
    for name in order:
        if name in known:
            out[name] = known[name]
        elif name in extras:
            out[name] = extras[name]
    for source in (known, extras):
        for name, value in source.items():
            if name not in out:
                out[name] = value
    return out


def entry_to_json(entry: Entry) -> dict[str, Any]:
    """An `Entry` as the JSON object SillyTavern stores (fields read as missing stay out)."""
    known = {
        json_name: _entry_value(json_name, getattr(entry, attr))
        for attr, json_name in ENTRY_FIELDS
        if json_name not in entry.missing
    }
    for optional in ("characterFilter", "displayIndex"):
        # SillyTavern writes these only when set; keep a stored null, add none of our own.
        if known.get(optional, 0) is None and optional not in entry.field_order:
            del known[optional]
    return ordered_fields(known, entry.extras, entry.field_order)


def new_entry_json() -> dict[str, Any]:
    """SillyTavern's template of a new entry (world-info.js `newWorldInfoEntryDefinition`):
    a new `Entry`'s fields as JSON, in the order SillyTavern writes them, without `uid`.

    The one statement of an entry's defaults is `Entry`; this is it in SillyTavern's terms,
    for the conversions that lay their fields over the template.
    """
    template = entry_to_json(Entry(uid=0))
    del template["uid"]
    return template
