"""Which cards, persona, presets and lorebooks apply to a turn, chosen as SillyTavern does.

The chosen presets and templates come from the user's `active` settings (a group member
may have a Chat Completion preset of its own); the persona is the one named for the
chat, else the default; the lorebooks are the global selection, the chat's own, the
characters' linked and extra books and the persona's (algo-world-info.md §1). Only
those are loaded: a turn looks at the versions of the documents it may use, in one
query, and parses each through `ParsedDocuments` once per version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any, TypeVar

from taverna.engine.assembly.context import CharacterInfo
from taverna.formats.st_settings import (
    SillyTavernSettings,
    chosen_chat_completion,
    chosen_context_template,
    chosen_instruct_template,
    preset_regex_scripts,
)
from taverna.model.chat import Chat
from taverna.model.group import Group
from taverna.model.injection import InjectionRole
from taverna.model.lorebook import Lorebook
from taverna.model.persona import Persona, PersonaPosition
from taverna.model.regex_script import RegexScript
from taverna.model.settings import ChatCompletionSettings, PersonaInfo, TextCompletionSettings
from taverna.services.kept_bytes import KeptBytes, text_bytes
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND
from taverna.services.library.regex_library import in_order
from taverna.services.library.service import LibraryKind
from taverna.services.turns.documents import (
    ActiveSettings,
    ParsedBook,
    ParsedDocuments,
    read_active,
    read_character,
    read_group,
    read_lorebook,
    read_persona,
    read_regex_script,
)
from taverna.services.turns.inputs import character_extra_books
from taverna.store.repository import DocumentVersion, Store

__all__ = ["LibraryChoices", "TurnLibrary", "muted_names"]

T = TypeVar("T")

# The documents every turn checks, in one query: settings, presets, templates and the rest.
_SMALL_KINDS = (
    SETTINGS_KIND,
    LibraryKind.CHAT_COMPLETION_PRESET.value,
    LibraryKind.TEXT_COMPLETION_PRESET.value,
    LibraryKind.INSTRUCT_TEMPLATE.value,
    LibraryKind.CONTEXT_TEMPLATE.value,
    LibraryKind.REGEX_SCRIPT.value,
    LibraryKind.PERSONA.value,
)
# The chosen documents the `active` settings name, by setting.
_CHOSEN = (
    ("chat_completion_preset", LibraryKind.CHAT_COMPLETION_PRESET),
    ("text_completion_preset", LibraryKind.TEXT_COMPLETION_PRESET),
    ("instruct_template", LibraryKind.INSTRUCT_TEMPLATE),
    ("context_template", LibraryKind.CONTEXT_TEMPLATE),
)
# The book names of the chats whose last turn's are kept (the next turn looks them up at
# once), in this many bytes.
BOOK_NAMES_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class TurnLibrary:
    """What the library gives one turn, parsed."""

    settings: SillyTavernSettings
    preset: Mapping[str, Any]  # the chosen Chat Completion preset as stored ({} if none)
    characters: tuple[CharacterInfo, ...]
    persona: PersonaInfo
    lorebooks: Mapping[str, Lorebook]
    deepest_scan: int = 0  # the largest scan depth an entry of these books asks for
    group: Group | None = None  # a group chat's group


class LibraryChoices:
    """The library documents that apply to a chat's turn, parsed (see module doc)."""

    def __init__(self, store: Store, documents: ParsedDocuments) -> None:
        self.store = store
        self.documents = documents
        # The books each recently built chat's last turn used: looked up with the rest.
        self._book_names: KeptBytes[str, tuple[str, ...]] = KeptBytes(
            BOOK_NAMES_BYTES, lambda chat_id, names: text_bytes([chat_id, *names]) + 64
        )

    def forget(self, chat_id: str) -> None:
        """Let go of what is kept for chat `chat_id` (it left the chats kept)."""
        self._book_names.pop(chat_id)

    def for_chat(self, chat: Chat, speaker: str | None = None) -> TurnLibrary:
        """The settings, cards, persona and applying lorebooks of a chat, as parsed (in a
        group chat, with the preset of the member `speaker` when it has one of its own)."""
        # One look at the versions: the small documents, the chat's cards and the books
        # its last turn used; a book named anew is looked up after.
        guessed = self._book_names.get(chat.id) or ()
        found, books_found = self._versions(chat, guessed)
        characters = self._characters(chat, found[LibraryKind.CHARACTER.value])
        groups = [v for v in found[LibraryKind.GROUP.value] if v.id == chat.group_id]
        group = self.documents.get("group", groups[-1], read_group) if groups else None
        own_preset = _member_preset(group, characters, speaker) if group is not None else None
        settings, preset = self._settings(found, own_preset)
        persona = self._persona(chat.user_name, found[LibraryKind.PERSONA.value])
        names = _applying_books(chat, characters, persona, settings)
        if set(names) - set(guessed):
            books_found = self.store.versions_of(
                owner=chat.owner, names={LibraryKind.LOREBOOK.value: names}
            )
        self._book_names.put(chat.id, tuple(names))
        books = self._lorebooks([v for v in books_found if v.name in names])
        return TurnLibrary(
            settings,
            preset,
            characters,
            persona,
            {name: item.book for name, item in books.items()},
            max((item.deepest_scan for item in books.values()), default=0),
            group,
        )

    def _versions(
        self, chat: Chat, book_names: Sequence[str]
    ) -> tuple[dict[str, list[DocumentVersion]], list[DocumentVersion]]:
        """The versions of the small documents, the chat's cards and group (by kind) and
        of the books named `book_names`, in one query."""
        ids = [ref.document_id for ref in chat.characters if ref.document_id]
        if chat.group_id:
            ids.append(chat.group_id)
        found: dict[str, list[DocumentVersion]] = {
            kind: []
            for kind in (*_SMALL_KINDS, LibraryKind.CHARACTER.value, LibraryKind.GROUP.value)
        }
        books: list[DocumentVersion] = []
        for version in self.store.versions_of(
            owner=chat.owner,
            kinds=_SMALL_KINDS,
            ids=ids,
            names={LibraryKind.LOREBOOK.value: book_names},
        ):
            if version.kind == LibraryKind.LOREBOOK.value:
                books.append(version)
            elif version.kind in found:
                found[version.kind].append(version)
        return found, books

    def _active(
        self, found: Mapping[str, list[DocumentVersion]]
    ) -> tuple[dict[str, DocumentVersion], ActiveSettings]:
        """The chosen preset and templates (by setting) and the user's other settings."""
        versions = [v for v in found[SETTINGS_KIND] if v.name == ACTIVE]
        if not versions:
            return {}, ActiveSettings()
        active = self.documents.get("settings", versions[-1], read_active)
        chosen = active.choices
        out: dict[str, DocumentVersion] = {}
        for key, kind in _CHOSEN:
            doc_id = chosen.get(key)
            # a preset deleted since it was chosen is not found: the defaults
            for version in found[kind.value]:
                if version.id == doc_id:
                    out[key] = version
        return out, active

    def _settings(
        self, found: Mapping[str, list[DocumentVersion]], own_preset: str | None = None
    ) -> tuple[SillyTavernSettings, Mapping[str, Any]]:
        """The settings a turn assembles with, and the chosen preset as stored
        (`own_preset`: a group member's own Chat Completion preset, by id)."""
        choices, active = self._active(found)
        for version in found[LibraryKind.CHAT_COMPLETION_PRESET.value]:
            if own_preset and version.id == own_preset:
                choices["chat_completion_preset"] = version
        chat_completion = ChatCompletionSettings()
        preset: Mapping[str, Any] = {}
        if "chat_completion_preset" in choices:
            preset, chat_completion = self.documents.get(
                "chat_completion_preset",
                choices["chat_completion_preset"],
                lambda d: (dict(d.data), chosen_chat_completion(d.data, file=d.name)),
            )
        settings = SillyTavernSettings(
            chat_completion=chat_completion,
            text_completion=replace(
                self._text_completion(choices),
                system_prompt_enabled=active.system_prompt_enabled,
            ),
            regex_scripts=tuple(
                self.documents.get("regex_script", version, read_regex_script)
                for version in in_order(found[LibraryKind.REGEX_SCRIPT.value], active.regex_order)
            ),
            regex_allowed=active.regex_allowed,
            preset_regex_scripts=self._preset_scripts(
                choices.get("chat_completion_preset"), active.preset_regex_allowed
            ),
            text_preset_regex_scripts=self._preset_scripts(
                choices.get("text_completion_preset"), active.text_preset_regex_allowed
            ),
            summary=active.summary,
            global_variables=active.global_variables,
        )
        return _with_active(settings, active), preset

    def _text_completion(self, choices: Mapping[str, DocumentVersion]) -> TextCompletionSettings:
        """The Text Completion settings of the chosen instruct and context templates."""
        text_completion = TextCompletionSettings()
        if "instruct_template" in choices:
            instruct = self._read(choices, "instruct_template", chosen_instruct_template)
            text_completion = replace(text_completion, instruct=instruct, instruct_enabled=True)
        if "context_template" in choices:
            context = self._read(choices, "context_template", chosen_context_template)
            text_completion = replace(text_completion, context=context)
        return text_completion

    def _preset_scripts(
        self, version: DocumentVersion | None, allowed: tuple[str, ...]
    ) -> tuple[RegexScript, ...]:
        """A chosen preset's own regex scripts, if the person allowed that preset's."""
        if version is None or version.name not in allowed:
            return ()
        return self.documents.get(
            "preset_regex", version, lambda d: preset_regex_scripts(dict(d.data), file=d.name)
        )

    def _read(self, choices: Mapping[str, DocumentVersion], key: str, read: Callable[..., T]) -> T:
        """The chosen document `key`, read once per version by a SillyTavern file reader."""
        return self.documents.get(key, choices[key], lambda doc: read(doc.data, file=doc.name))

    def _characters(
        self, chat: Chat, versions: Sequence[DocumentVersion]
    ) -> tuple[CharacterInfo, ...]:
        by_id = {v.id: v for v in versions}
        characters = []
        for ref in chat.characters:
            version = by_id.get(ref.document_id or "")
            if version is None:
                continue
            info = self.documents.get("character", version, read_character)
            characters.append(replace(info, avatar=f"{ref.name}.png"))
        if not characters:
            name = chat.characters[0].name if chat.characters else "Assistant"
            characters.append(CharacterInfo(name=name))
        return tuple(characters)

    def personas(self, owner: str) -> list[tuple[str, Persona]]:
        """An account's personas with their ids, oldest first, as parsed and kept for turns:
        a chat view names the chat's persona after every reply, with one look at the
        versions rather than every persona read and parsed again."""
        versions = self.store.versions_of(owner=owner, kinds=(LibraryKind.PERSONA.value,))
        return [(v.id, self.documents.get("persona", v, read_persona)) for v in versions]

    def _persona(self, user_name: str, versions: Sequence[DocumentVersion]) -> PersonaInfo:
        personas = [self.documents.get("persona", v, read_persona) for v in versions]
        chosen = next((p for p in personas if p.name == user_name), None)
        chosen = chosen or next((p for p in personas if p.is_default), None)
        if chosen is None:
            return PersonaInfo(name=user_name or "User")
        descriptor = chosen.descriptor
        try:
            position = PersonaPosition(int(descriptor.position))
        except ValueError:
            position = PersonaPosition.IN_PROMPT
        lorebook = descriptor.model_extra.get("lorebook") if descriptor.model_extra else None
        return PersonaInfo(
            name=user_name or chosen.name or "User",
            description=descriptor.description,
            position=position,
            depth=int(descriptor.depth),
            role=InjectionRole.parse(descriptor.role),
            avatar=chosen.avatar,
            lorebook=lorebook if isinstance(lorebook, str) else "",
        )

    def _lorebooks(self, versions: Sequence[DocumentVersion]) -> dict[str, ParsedBook]:
        books: dict[str, ParsedBook] = {}
        # Two books of one name: the newest wins, as a name picks one file in SillyTavern.
        for version in versions:
            books[version.name] = self.documents.get("lorebook", version, read_lorebook(version))
        return books


def _with_active(settings: SillyTavernSettings, active: ActiveSettings) -> SillyTavernSettings:
    """`settings` with the power-user, world-info and vectors settings the user keeps."""
    if active.power_user is not None:
        settings = replace(settings, power_user=active.power_user)
    if active.world is not None:
        # SillyTavern's shape: the global selection and the characters' extra books.
        raw, world_info = active.world
        settings = replace(settings, world_info=world_info, raw={"world_info_settings": raw})
    if active.vectors:
        raw_vectors = {"extension_settings": {"vectors": dict(active.vectors)}}
        settings = replace(settings, raw={**settings.raw, **raw_vectors})
    return settings


def _member_preset(
    group: Group, characters: Sequence[CharacterInfo], speaker: str | None
) -> str | None:
    """The id of the Chat Completion preset the group gives member `speaker`, if any."""
    if not speaker:
        return None
    names = [c.name for c in characters]
    for index, file in enumerate(group.members):
        if len(names) == len(group.members):
            named = names[index] == speaker
        else:
            stem = PurePath(file).stem
            named = stem == speaker or stem.endswith(speaker)
        if named:
            return group.member_settings(file).preset
    return None


def muted_names(group: Group, characters: Sequence[CharacterInfo]) -> tuple[str, ...]:
    """The names of the group's muted members (the chat's characters follow the group's
    order; a member file is otherwise matched to a character by its name)."""
    names = [c.name for c in characters]
    muted = []
    for index, file in enumerate(group.members):
        if not group.is_muted(file):
            continue
        if len(names) == len(group.members):
            muted.append(names[index])
        else:
            stem = PurePath(file).stem
            muted.extend(n for n in names if n == stem or stem.endswith(n))
    return tuple(muted)


def _applying_books(
    chat: Chat,
    characters: Sequence[CharacterInfo],
    persona: PersonaInfo,
    settings: SillyTavernSettings,
) -> list[str]:
    """The names of the books SillyTavern would scan this turn (algo-world-info.md §1)."""
    names: list[str] = list(settings.world_info.global_select)
    book = chat.metadata.get("world_info")
    if isinstance(book, str) and book:
        names.append(book)
    # The books added to a character in the UI, by card file stem (`world_info.charLore`).
    extra = character_extra_books(settings.raw)
    for character in characters:
        if character.linked_lorebook:
            names.append(character.linked_lorebook)
        names.extend(character.extra_lorebooks)
        names.extend(extra.get(character.avatar.rsplit(".", 1)[0], ()))
    if persona.lorebook:
        names.append(persona.lorebook)
    return list(dict.fromkeys(names))
