"""Groups: making and changing them, starting their chats, and choosing who speaks.

A group is a library document in SillyTavern's own shape (`model/group.py`); its chats
are trees like any chat, with the members as the chat's characters and every message
naming its speaker. Who answers a message is the engine's scheduler's choice, seeded by
the chat and the position on its path, so the same turn draws the same speakers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from taverna.engine.group import ActivationStrategy, GroupTurn, Member, next_speakers, round_seed
from taverna.engine.macros.evaluate import MacroContext, evaluate
from taverna.errors import FormatError, NotFound, TavernaError
from taverna.formats import json_text
from taverna.model.character import Character
from taverna.model.chat import CharacterRef, Chat, Node, NodeRole
from taverna.model.group import Group
from taverna.services.chats.editing import default_persona
from taverna.services.chats.service import ChatService
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.store.repository import Document, Store

__all__ = [
    "GroupMember",
    "GroupService",
    "read_group",
    "speakers_for",
]

# How far back the path's speakers are read for the pooled order: a few cycles.
POOL_WINDOW_PER_MEMBER = 3


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member: its file name in the group, its character, muted or not."""

    file: str
    name: str
    character_id: str | None
    muted: bool
    talkativeness: float = 0.5
    connection: str | None = None
    preset: str | None = None


def read_group(data: Mapping[str, Any], *, file: str = "") -> Group:
    """A stored or uploaded group definition, typed (a clear error naming the field)."""
    try:
        return Group.from_json(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ()))
        raise FormatError(
            f"not a group definition: {first.get('msg')}",
            file=file,
            field=field,
            code="not_group_definition",
            params={"get": str(first.get("msg"))},
        ) from None


def speakers_for(
    group: Group,
    members: Sequence[GroupMember],
    chat_id: str,
    path: Sequence[Node],
    *,
    position: int,
    user_input: bool,
    text: str | None = None,
) -> tuple[str, ...]:
    """The members who answer at the end of `path` (its last nodes, oldest first), by
    the group's strategy; `text` is what the person is sending now (not yet on the path)."""
    live = [n for n in path if not n.deleted]
    last = live[-1] if live else None
    if text is not None:
        last_text, last_speaker = text, None
    elif last is None or last.hidden:
        last_text, last_speaker = "", None
    else:
        last_text = last.content
        last_speaker = last.speaker if last.role is NodeRole.ASSISTANT else None
    spoken = tuple(n.speaker for n in live if n.role is NodeRole.ASSISTANT)
    turn = GroupTurn(
        members=tuple(Member(m.name, m.talkativeness, m.muted) for m in members),
        strategy=ActivationStrategy.parse(group.activation_strategy),
        allow_self_responses=group.allow_self_responses,
        last_text=last_text,
        last_speaker=last_speaker,
        user_input=user_input,
        spoken=spoken,
        seed=round_seed(chat_id, position),
    )
    return next_speakers(turn)


class GroupService:
    """The groups of one owner, and their chats."""

    def __init__(self, chats: ChatService, *, owner: str = "") -> None:
        self.chats = chats
        self.store: Store = chats.store
        self.owner = owner
        self.library = LibraryService(chats.store, owner=owner)

    # ------------------------------------------------------------------ reading

    def document(self, group_id: str) -> Document:
        doc = self.store.get_document(group_id)
        if doc.kind != LibraryKind.GROUP.value or (self.owner and doc.owner != self.owner):
            raise NotFound("no such group", field="group", code="no_such_group")
        return doc

    def get(self, group_id: str) -> Group:
        doc = self.document(group_id)
        return read_group(doc.data, file=doc.name)

    def find(self, name_or_id: str) -> Document:
        """A group by its id or its name."""
        try:
            return self.document(name_or_id)
        except NotFound:
            pass
        docs = self.store.find_documents(LibraryKind.GROUP.value, name=name_or_id, owner=self.owner)
        if not docs:
            raise NotFound(
                f"no group named {name_or_id!r}",
                field="group",
                code="no_group_named",
                params={"name_or_id": str(name_or_id)},
            )
        return docs[-1]

    def all(self) -> list[Document]:
        return self.store.find_documents(LibraryKind.GROUP.value, owner=self.owner)

    def members(self, group: Group, chat: Chat | None = None) -> list[GroupMember]:
        """The group's members in order, each matched to its stored character.

        A member is its card's file name; a chat imported with the group knows each
        member's character already (in the group's order), else the name decides.
        """
        refs = list(chat.characters) if chat is not None else []
        out = []
        for index, file in enumerate(group.members):
            stem = PurePath(file).stem
            ref = refs[index] if len(refs) == len(group.members) else None
            doc = self._character_doc(ref.document_id if ref else None, stem)
            character = _character(doc) if doc is not None else None
            name = character.name if character else (ref.name if ref else stem)
            settings = group.member_settings(file)
            out.append(
                GroupMember(
                    file=file,
                    name=name or stem,
                    character_id=doc.id if doc is not None else None,
                    muted=group.is_muted(file),
                    talkativeness=character.talkativeness if character else 0.5,
                    connection=settings.connection,
                    preset=settings.preset,
                )
            )
        return out

    def _character_doc(self, doc_id: str | None, stem: str) -> Document | None:
        if doc_id:
            try:
                return self.store.get_document(doc_id)
            except NotFound:
                pass
        found = self.library.find(LibraryKind.CHARACTER, stem)
        if found is not None:
            return found
        for doc in self.store.find_documents(LibraryKind.CHARACTER.value, owner=self.owner):
            if doc.name and stem.endswith(doc.name):
                return doc
        return None

    # ------------------------------------------------------------------ writing

    def create(
        self,
        name: str,
        character_ids: Sequence[str],
        *,
        settings: Mapping[str, Any] | None = None,
    ) -> Document:
        """A new group of these stored characters, in this order."""
        if not name.strip():
            raise TavernaError("a group needs a name", field="name", code="group_needs_name")
        if not character_ids:
            raise TavernaError(
                "a group needs at least one member",
                field="members",
                code="group_needs_at_least_one",
            )
        files = self.member_files(character_ids)
        data: dict[str, Any] = {
            "id": str(int(datetime.now(UTC).timestamp() * 1000)),
            "name": name.strip(),
            "members": files,
            "avatar_url": "",
            "allow_self_responses": False,
            "activation_strategy": 0,
            "generation_mode": 0,
            "disabled_members": [],
            "chat_metadata": {},
            "fav": False,
            "chat_id": "",
            "chats": [],
            "auto_mode_delay": 5,
            "generation_mode_join_prefix": "",
            "generation_mode_join_suffix": "",
            "hideMutedSprites": False,
        }
        data.update(settings or {})
        group = read_group(data, file=name)
        return self.store.put_document(
            LibraryKind.GROUP.value, group.name, group.to_json(), owner=self.owner
        )

    def update(
        self, group_id: str, changes: Mapping[str, Any], *, revision: int | None = None
    ) -> Document:
        """Change a group's settings (SillyTavern's keys); the rest is kept as it was."""
        doc = self.document(group_id)
        data = dict(doc.data) | dict(changes)
        if data.get("taverna") == {}:
            del data["taverna"]  # no member has settings of its own: the file as SillyTavern's
        group = read_group(data, file=doc.name)
        disabled = [m for m in group.disabled_members if m in group.members]
        data["disabled_members"] = disabled
        return self.library.rewrite(
            doc,
            read_group(data, file=doc.name).to_json(),
            name=group.name or doc.name,
            revision=doc.revision if revision is None else revision,
        )

    def set_muted(self, group_id: str, member: str, muted: bool) -> Document:
        """Mute or unmute a member, named by its character's name or its file name."""
        group = self.get(group_id)
        file = self._member_file(group, member)
        disabled = [m for m in group.disabled_members if m != file]
        if muted:
            disabled.append(file)
        return self.update(group_id, {"disabled_members": disabled})

    def set_connection(self, group_id: str, member: str, connection: str | None) -> Document:
        """Give a member a connection of its own (None: the chat's again)."""
        changes = {"taverna": self.own_settings(group_id, "connection", {member: connection})}
        return self.update(group_id, changes)

    def set_preset(self, group_id: str, member: str, preset_id: str | None) -> Document:
        """Give a member a Chat Completion preset of its own, by id (None: the chat's)."""
        changes = {"taverna": self.own_settings(group_id, "preset", {member: preset_id})}
        return self.update(group_id, changes)

    def own_settings(
        self,
        group_id: str,
        key: str,
        values: Mapping[str, str | None],
        base: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The group's `taverna` settings with `key` ("connection" or "preset") set for
        these members (by name; None: the chat's again), over `base` (default: stored)."""
        group = self.get(group_id)
        if base is None:
            own = {k: v.to_json() for k, v in group.taverna.items()}
        else:
            own = {k: dict(v) for k, v in base.items()}
        for member, value in values.items():
            file = self._member_file(group, member)
            settings = dict(own.get(file) or {})
            if value:
                settings[key] = value
            else:
                settings.pop(key, None)
            if settings:
                own[file] = settings
            else:
                own.pop(file, None)
        return own

    def _member_file(self, group: Group, member: str) -> str:
        for m in self.members(group):
            if member in (m.name, m.file, PurePath(m.file).stem):
                return m.file
        raise NotFound(
            f"no member named {member!r} in the group",
            field="member",
            code="no_member_named_in_group",
            params={"member": str(member)},
        )

    def start_chat(
        self, group_id: str, *, title: str | None = None, user_name: str | None = None
    ) -> Chat:
        """A new chat of the group, opened by each unmuted member's greeting in order
        (a member's group-only greetings, when it has them, are its candidates)."""
        doc = self.document(group_id)
        group = read_group(doc.data, file=doc.name)
        members = self.members(group)
        if user_name is None:
            persona = default_persona(self.store, self.owner)
            user_name = (persona.name if persona else "") or "User"
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
        refs = [CharacterRef(m.name, m.character_id) for m in members]
        outcome = self.chats.create_chat(
            title or f"{group.name} – {stamp}",
            characters=refs,
            group_id=doc.id,
            user_name=user_name,
            owner=self.owner,
        )
        chat = outcome.chat
        for member in members:
            if member.muted or member.character_id is None:
                continue
            character = _character(self.store.get_document(member.character_id))
            texts = list(character.group_only_greetings) or character.greetings
            if not texts:
                continue
            names = MacroContext(user=user_name, char=member.name)
            first = evaluate(texts[0], names).text
            written = self.chats.append(
                chat.id,
                NodeRole.ASSISTANT,
                first,
                revision=chat.revision,
                speaker=member.name,
            )
            chat = written.chat
            for other in texts[1:]:
                assert written.node is not None
                chat = self.chats.add_candidate(
                    chat.id,
                    written.node.id,
                    evaluate(other, names).text,
                    revision=chat.revision,
                    speaker=member.name,
                    label="greeting",
                ).chat
        return self.chats.get_chat(chat.id)

    def newest_chat(self, group_id: str) -> Chat | None:
        """The group's most recently changed chat, if it has one."""
        found = [
            item.chat
            for item in self.store.list_chats(owner=self.owner)
            if item.chat.group_id == group_id
        ]
        oldest = datetime.min.replace(tzinfo=UTC)
        return max(found, key=lambda c: c.updated or c.created or oldest, default=None)

    def preset(self, preset_id: str) -> Document:
        """A stored Chat Completion preset (NotFound naming the field if it is none)."""
        try:
            doc = self.store.get_document(preset_id)
        except NotFound:
            raise NotFound("no such preset", field="presets", code="no_such_preset") from None
        if doc.kind != LibraryKind.CHAT_COMPLETION_PRESET.value or (
            self.owner and doc.owner != self.owner
        ):
            raise NotFound("no such preset", field="presets", code="no_such_preset")
        return doc

    def delete(self, group_id: str) -> None:
        """Remove a group; its chats stay, with the members they had."""
        doc = self.document(group_id)
        self.store.delete_document(doc.id, revision=doc.revision)

    def member_files(self, character_ids: Sequence[str]) -> list[str]:
        """The group member file names of these stored characters."""
        files = []
        for character_id in character_ids:
            try:
                doc = self.store.get_document(character_id)
            except NotFound:
                raise NotFound(
                    "no such character", field="character_ids", code="no_such_character"
                ) from None
            if doc.kind != LibraryKind.CHARACTER.value or (self.owner and doc.owner != self.owner):
                raise NotFound("no such character", field="character_ids", code="no_such_character")
            files.append(f"{doc.name}.png")
        return files

    def files_of(
        self, group_id: str, names: Sequence[str], members: Sequence[str] | None = None
    ) -> list[str]:
        """The member files of members named by their characters' names (or files)."""
        group = self.get(group_id)
        if members is not None:
            group = group.model_copy(update={"members": list(members)})
        return [self._member_file(group, name) for name in names]

    def export(self, group_id: str) -> bytes:
        """The group definition as SillyTavern writes it (`JSON.stringify(group, null, 4)`),
        so a group file SillyTavern wrote comes back byte for byte."""
        doc = self.document(group_id)
        return json_text.dump_as(dict(doc.data))


def _character(doc: Document) -> Character:
    from taverna.formats.card_json import card_from_json

    return card_from_json(dict(doc.data), file=doc.name)
