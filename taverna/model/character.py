"""Characters: the V3 card field set (a superset of V1 and V2) with SillyTavern's extensions.

A card file holds one JSON object in up to three layers (formats-character-card.md §2):
the V1 fields at the top level, the V2/V3 `data` object, and SillyTavern's own top-level
keys (`chat`, `create_date`, `creatorcomment`, ...). `Character` is the `data` layer, typed;
`Character.envelope` keeps every top-level key verbatim (including `spec`, `spec_version`
and the V1 mirror), so that a card read and written again is the same document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, Field, PrivateAttr

from taverna.model.card_fields import ENVELOPE_KEY as ENVELOPE_KEY
from taverna.model.card_fields import SPEC_V2 as SPEC_V2
from taverna.model.card_fields import SPEC_V3 as SPEC_V3
from taverna.model.card_fields import V1_FIELDS as V1_FIELDS
from taverna.model.card_fields import V2_FIELDS as V2_FIELDS
from taverna.model.document import JsonInt, Number, STDocument
from taverna.model.injection import InjectionRole
from taverna.model.regex_script import RegexScript


def _wrap_single_string(value: Any) -> Any:
    # formats-character-card.md §2.2: a single string greeting is wrapped into an array.
    return [value] if isinstance(value, str) else value


GreetingList = Annotated[list[str], BeforeValidator(_wrap_single_string)]


class DepthPrompt(STDocument):
    """The "character's note": text injected into the chat at a depth, with a role."""

    prompt: str = ""
    depth: Number = 4
    role: str = "system"

    @property
    def injection_depth(self) -> int:
        """The depth as a whole number of messages from the end of the chat."""
        return int(self.depth)

    @property
    def injection_role(self) -> InjectionRole:
        """The role the note is sent as (a name SillyTavern does not know means system)."""
        return InjectionRole.parse(self.role)


class CharacterExtensions(STDocument):
    """`data.extensions`: SillyTavern's keys typed, every other key kept (§6).

    `talkativeness` is usually the string "0.5" (it comes from an HTML form) and `fav`
    may be the string "true" in old files; both keep their stored form. Use the
    `Character` properties for the values as numbers and booleans.
    """

    talkativeness: str | Number | None = None
    fav: bool | str | None = None
    world: str | None = None
    depth_prompt: DepthPrompt | None = None
    regex_scripts: list[RegexScript] | None = None


class CardAsset(STDocument):
    """A V3 asset: `{type, uri, name, ext}`; `uri` may be `ccdefault:` or `embeded://path`."""

    type: str = ""
    uri: str = ""
    name: str = ""
    ext: str = ""


class CharacterBookEntry(STDocument):
    """One entry of a card's embedded lorebook (V2 spec, V3 additions, §7.1).

    SillyTavern's own entry fields travel in `extensions` (`position`, `depth`, `role`,
    `probability`, `sticky`, ...). Third-party cards are loose about optional fields, so
    those accept null.
    """

    keys: list[str] = Field(default_factory=list)
    content: str = ""
    extensions: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True
    insertion_order: Number = 100
    case_sensitive: bool | None = None
    use_regex: bool | None = None
    constant: bool | None = None
    name: str | None = None
    priority: Number | None = None
    id: JsonInt | str | None = None
    comment: str | None = None
    selective: bool | None = None
    secondary_keys: list[str] | None = None
    position: str | None = None


class CharacterBook(STDocument):
    """A card's embedded lorebook (`data.character_book`)."""

    name: str | None = None
    description: str | None = None
    scan_depth: Number | None = None
    token_budget: Number | None = None
    recursive_scanning: bool | None = None
    extensions: dict[str, Any] = Field(default_factory=dict)
    entries: list[CharacterBookEntry] = Field(default_factory=list)


class Character(STDocument):
    """A character: the card's `data` fields, typed, plus the card's top-level envelope.

    Persist a character with `to_json()` and restore it with `from_json`: that keeps
    which fields the card had (a full `model_dump()` would mark every field as present).

    Fields missing from the source stay unset and are not written back; `Character.create`
    builds a new character with every V2 field set, as SillyTavern writes them.
    """

    # V1 / V2
    name: str = ""
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    mes_example: str = ""
    creator_notes: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    alternate_greetings: GreetingList = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    creator: str = ""
    character_version: str = ""
    extensions: CharacterExtensions = Field(default_factory=CharacterExtensions)
    character_book: CharacterBook | None = None
    # V3
    group_only_greetings: GreetingList = Field(default_factory=list)
    assets: list[CardAsset] | None = None
    nickname: str | None = None
    creator_notes_multilingual: dict[str, str] | None = None
    source: list[str] | None = None
    creation_date: Number | None = None
    modification_date: Number | None = None
    # Not a card field: the keys around `data` in the file, verbatim and in order (left out
    # of `data_json`); a V2/V3 card's `data` key holds a null that marks its place.
    envelope: dict[str, Any] = Field(default_factory=dict, alias=ENVELOPE_KEY)
    # The mirrored `data` values when the card was read (None: made in code), so that a
    # write refreshes only the top-level copies of values that changed since.
    _mirror_as_read: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def create(cls, name: str, **fields: Any) -> Self:
        """A new character with every V2 field present, as SillyTavern saves a new card."""
        values: dict[str, Any] = {
            "name": name,
            "description": "",
            "personality": "",
            "scenario": "",
            "first_mes": "",
            "mes_example": "",
            "creator_notes": "",
            "system_prompt": "",
            "post_history_instructions": "",
            "alternate_greetings": [],
            "tags": [],
            "creator": "",
            "character_version": "",
            "extensions": {
                "talkativeness": "0.5",
                "fav": False,
                "world": "",
                "depth_prompt": {"prompt": "", "depth": 4, "role": "system"},
            },
            "group_only_greetings": [],
        }
        values.update(fields)
        # SillyTavern's top-level layer; the mirrored keys are refreshed from `data`
        # whenever the card is written (formats-character-card.md §2.1).
        envelope: dict[str, Any] = {key: "" for key in V1_FIELDS}
        envelope.update(
            {
                "creatorcomment": "",
                "avatar": "none",
                "talkativeness": "0.5",
                "fav": False,
                "tags": [],
                "spec": SPEC_V3,
                "spec_version": "3.0",
            }
        )
        values[ENVELOPE_KEY] = {**envelope, **values.pop("envelope", {})}
        return cls.model_validate(values)

    def data_json(self) -> dict[str, Any]:
        """The `data` object: fields the card had or code set, unknown keys included."""
        out = self.to_json()
        out.pop(ENVELOPE_KEY, None)
        return out

    @property
    def spec(self) -> str | None:
        """The card's `spec` label (`chara_card_v2`, `chara_card_v3`), None for V1."""
        value = self.envelope.get("spec")
        return value if isinstance(value, str) else None

    @property
    def greetings(self) -> list[str]:
        """The first message's swipes: `[first_mes, *alternate_greetings]`, empty ones out.

        formats-character-card.md §8: an empty `first_mes` is dropped from the list.
        """
        out = [self.first_mes] if self.first_mes else []
        return out + list(self.alternate_greetings)

    @property
    def talkativeness(self) -> float:
        """Chance (0..1) to speak unprompted in a group; 0.5 when unset or unreadable."""
        raw = self.extensions.talkativeness
        if raw is None:
            raw = self.envelope.get("talkativeness")
        try:
            value = float(raw) if raw is not None and raw != "" else 0.5
        except (TypeError, ValueError):
            return 0.5
        return value if 0.0 <= value <= 1.0 else 0.5

    @property
    def favorite(self) -> bool:
        """SillyTavern's favourite mark (`data.extensions.fav`, else the top-level `fav` of
        an older card); old files write it as the string "true"."""
        raw = self.extensions.fav
        if raw is None:
            raw = self.envelope.get("fav")
        return raw is True or (isinstance(raw, str) and raw.strip().lower() == "true")

    @property
    def linked_world(self) -> str | None:
        """Name of the linked world-info book (`extensions.world`), None when unlinked."""
        return self.extensions.world or None

    @property
    def depth_prompt(self) -> DepthPrompt:
        """The character's note, with SillyTavern's defaults when the card has none."""
        return self.extensions.depth_prompt or DepthPrompt()

    @property
    def regex_scripts(self) -> list[RegexScript]:
        """Character-scoped regex scripts (they run only if the user allowed them)."""
        return list(self.extensions.regex_scripts or [])


@dataclass(frozen=True)
class CardFile:
    """A character together with the pictures of the file it came in.

    `avatar` is the PNG the card was stored in (or a CHARX's icon); `assets` holds the
    other files of a CHARX by their path inside the zip.
    """

    character: Character
    avatar: bytes | None = None
    assets: dict[str, bytes] = field(default_factory=dict)
