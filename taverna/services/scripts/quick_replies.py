"""Quick Reply sets: stored in the library, active everywhere or in one chat.

Which sets are active is kept where SillyTavern keeps it (formats-extensions.md §2.3):
the global list in the user's settings (`extension_settings.quickReplyV2.config.setList`),
a chat's list in its metadata (`quickReply.setList`). A chat shows the buttons of the
global sets first, then of its own (a set in both shows once), hidden replies and the
replies of sets switched on as not visible (`isVisible: false`) left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.formats.quick_replies import read_quick_reply_set, write_quick_reply_set
from taverna.model.chat import Chat
from taverna.model.lorebook import EntryOutcome
from taverna.model.prompt import Prompt
from taverna.model.quick_reply import LegacyQuickReplySet, QuickReply, QuickReplySet
from taverna.services.chats import sent_prompts
from taverna.services.chats.service import ChatService
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, set_active
from taverna.services.library.service import LibraryKind, LibraryService

__all__ = ["QuickReplyButton", "QuickReplyService", "StoredSet"]

CHAT_KEY = "quickReply"
TRIGGERS = ("startup", "user", "ai", "chat_change", "group_member_draft", "new_chat")


@dataclass(frozen=True, slots=True)
class StoredSet:
    """A set as stored: its library id and the set in version-2 form."""

    id: str
    set: QuickReplySet


@dataclass(frozen=True, slots=True)
class QuickReplyButton:
    """A reply a chat offers: which set, its label and tooltip, the script, its triggers.

    `hidden`: no button (it still runs by name and on its triggers).
    """

    set: str
    id: int
    label: str
    title: str
    message: str
    hidden: bool
    triggers: tuple[str, ...]
    automation_id: str = ""


def _triggers(reply: QuickReply) -> tuple[str, ...]:
    flags = (
        reply.execute_on_startup,
        reply.execute_on_user,
        reply.execute_on_ai,
        reply.execute_on_chat_change,
        reply.execute_on_group_member_draft,
        reply.execute_on_new_chat,
    )
    return tuple(name for name, on in zip(TRIGGERS, flags, strict=True) if on)


def _links(set_list: Any) -> dict[str, bool]:
    """A stored `setList`: each active set's name and whether its buttons are shown
    (`isVisible`; a hidden set still runs on its triggers and by name)."""
    if not isinstance(set_list, list):
        return {}
    links: dict[str, bool] = {}
    for item in set_list:
        if isinstance(item, Mapping) and isinstance(item.get("set"), str):
            links.setdefault(item["set"], item.get("isVisible", True) is not False)
    return links


def _set_list(
    names: Iterable[str], visible: Mapping[str, bool], kept: Mapping[str, bool]
) -> list[dict[str, Any]]:
    """`names` as a `setList`: each set's visibility as `visible` says, else as it was
    (`kept`), else shown."""
    return [
        {"set": name, "isVisible": visible.get(name, kept.get(name, True))}
        for name in dict.fromkeys(names)
    ]


class QuickReplyService:
    """The Quick Reply sets of one account and where they are active."""

    def __init__(self, chats: ChatService, *, owner: str = "") -> None:
        self.chats = chats
        self.owner = owner
        self.library = LibraryService(chats.store, owner=owner)

    # ------------------------------------------------------------------ sets

    def sets(self) -> list[StoredSet]:
        found = []
        for doc in self.library.documents(LibraryKind.QUICK_REPLY_SET):
            item = self.library.item(LibraryKind.QUICK_REPLY_SET, doc.id)
            if isinstance(item, LegacyQuickReplySet):
                item = item.migrated()
            found.append(StoredSet(doc.id, item))
        return found

    def by_name(self, name: str) -> StoredSet | None:
        return next((s for s in self.sets() if s.set.name == name), None)

    def save(self, qr_set: QuickReplySet) -> StoredSet:
        """Store a set under its name (replacing the one of that name)."""
        if not qr_set.name.strip():
            raise TavernaError(
                "a Quick Reply set needs a name", field="name", code="quick_reply_set_needs_name"
            )
        data = qr_set.model_dump(by_alias=True, mode="json", exclude_none=True)
        item = self.library.put(LibraryKind.QUICK_REPLY_SET, qr_set.name, data)
        return StoredSet(item.id, qr_set)

    def import_file(self, data: bytes, file_name: str) -> StoredSet:
        """Store a SillyTavern Quick Reply set file (version 2, or version 1 migrated as
        SillyTavern migrates it); a set without a name takes the file's."""
        read = read_quick_reply_set(data, file=file_name)
        qr_set = read.migrated() if isinstance(read, LegacyQuickReplySet) else read
        if not qr_set.name.strip():
            stem = PurePath(file_name).stem or "Quick Replies"
            qr_set = qr_set.model_copy(update={"name": stem})
        return self.save(qr_set)

    def export(self, set_id: str) -> tuple[str, bytes]:
        """A set as SillyTavern's file (its name and bytes)."""
        doc = self.library.get(LibraryKind.QUICK_REPLY_SET, set_id)
        item = self.library.item(LibraryKind.QUICK_REPLY_SET, set_id)
        return doc.name, write_quick_reply_set(item)

    def delete(self, set_id: str) -> None:
        doc = self.library.get(LibraryKind.QUICK_REPLY_SET, set_id)
        self.library.delete(LibraryKind.QUICK_REPLY_SET, set_id)
        self.set_global([n for n in self.global_sets() if n != doc.name])

    # ------------------------------------------------------------ activation

    def _settings(self) -> Mapping[str, Any]:
        docs = self.chats.store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=self.owner)
        return docs[-1].data if docs else {}

    def global_sets(self) -> list[str]:
        """The sets active in every chat, shown or not."""
        return list(self.global_links())

    def global_links(self) -> dict[str, bool]:
        """The sets active in every chat, each with whether its buttons are shown."""
        extensions = self._settings().get("extension_settings")
        if not isinstance(extensions, Mapping):
            return {}
        settings = extensions.get("quickReplyV2")
        config = settings.get("config") if isinstance(settings, Mapping) else None
        return _links(config.get("setList") if isinstance(config, Mapping) else None)

    def set_global(self, names: Sequence[str], visible: Mapping[str, bool] | None = None) -> None:
        """The sets active in every chat (SillyTavern's `quickReplyV2.config.setList`);
        `visible` shows or hides some sets' buttons, the others keep their visibility."""
        self._known(names)
        kept = self.global_links()
        found = self._settings().get("extension_settings")
        extensions = dict(found) if isinstance(found, Mapping) else {}
        settings = extensions.get("quickReplyV2")
        settings = dict(settings) if isinstance(settings, Mapping) else {"isEnabled": True}
        config = settings.get("config")
        config = dict(config) if isinstance(config, Mapping) else {}
        config["setList"] = _set_list(names, visible or {}, kept)
        settings["config"] = config
        extensions["quickReplyV2"] = settings
        set_active(self.chats.store, "extension_settings", extensions, owner=self.owner)

    def chat_sets(self, chat: Chat) -> list[str]:
        """The sets active in one chat besides the global ones, shown or not."""
        return list(self.chat_links(chat))

    def chat_links(self, chat: Chat) -> dict[str, bool]:
        """The chat's own sets, each with whether its buttons are shown."""
        found = chat.metadata.get(CHAT_KEY)
        return _links(found.get("setList") if isinstance(found, Mapping) else None)

    def set_chat(
        self,
        chat_id: str,
        names: Sequence[str],
        *,
        revision: int,
        visible: Mapping[str, bool] | None = None,
    ) -> Chat:
        """The sets active in one chat besides the global ones (`chat_metadata.quickReply`);
        `visible` as for `set_global`."""
        self._known(names)
        kept = self.chat_links(self.chats.get_chat(chat_id))
        set_list = _set_list(names, visible or {}, kept)
        return self.chats.update_metadata(
            chat_id, {CHAT_KEY: {"setList": set_list}}, revision=revision
        ).chat

    def _known(self, names: Sequence[str]) -> None:
        known = {s.set.name for s in self.sets()}
        for name in names:
            if name not in known:
                raise NotFound(
                    f"no Quick Reply set named {name!r}",
                    field="sets",
                    code="no_quick_reply_set_named",
                    params={"name": str(name)},
                )

    # --------------------------------------------------------------- buttons

    def replies(self, chat_id: str) -> list[QuickReplyButton]:
        """The replies a chat offers: global sets first, then the chat's own; the replies
        of a set shown nowhere are hidden (they still run on their triggers and by name)."""
        chat = self.chats.get_chat(chat_id)
        by_name = {s.set.name: s.set for s in self.sets()}
        shown: dict[str, bool] = {}
        for links in (self.global_links(), self.chat_links(chat)):
            for name, visible in links.items():
                shown[name] = shown.get(name, False) or visible
        out = []
        for name, visible in shown.items():
            qr_set = by_name.get(name)
            if qr_set is None:
                continue
            for reply in qr_set.qr_list:
                out.append(
                    QuickReplyButton(
                        set=name,
                        id=int(reply.id),
                        label=reply.label,
                        title=reply.title,
                        message=reply.message,
                        hidden=reply.is_hidden or not visible,
                        triggers=_triggers(reply),
                        automation_id=reply.automation_id,
                    )
                )
        return out

    # ------------------------------------------------------------ automations

    def activated_automations(
        self, chat_id: str, node_id: str, *, pending: Prompt | None = None
    ) -> list[str]:
        """The automation ids of the lorebook entries that went into reply `node_id`'s
        prompt, in activation order: the Quick Replies with the same `automationId` run
        after that reply (SillyTavern's WORLD_INFO_ACTIVATED). The prompt comes from the
        reply's stored record, or is `pending` (the chat's last prompt, for a reply whose
        record is still being written)."""
        data = self.chats.store.sent_prompt(chat_id, node_id)
        if data is not None:
            ledger = sent_prompts.decode(data).get("prompt", {}).get("ledger", {})
            trace = ledger.get("trace", [])
        elif pending is not None and self.chats.get_chat(chat_id).active_leaf_id == node_id:
            trace = [entry.to_json() for entry in pending.ledger.trace]
        else:
            return []
        books: dict[str, dict[int, str]] = {}
        found: list[str] = []
        for item in trace:
            if not isinstance(item, Mapping) or item.get("outcome") != EntryOutcome.ACTIVATED:
                continue
            book = str(item.get("book", ""))
            if book not in books:
                books[book] = self._automation_ids(book)
            uid = item.get("uid")
            automation = books[book].get(uid) if isinstance(uid, int) else None
            if automation and automation not in found:
                found.append(automation)
        return found

    def _automation_ids(self, book: str) -> dict[int, str]:
        doc = self.library.find(LibraryKind.LOREBOOK, book)
        if doc is None:
            return {}
        return {
            entry.uid: entry.automation_id
            for entry in self.library.lorebook(doc.id).entries
            if entry.automation_id
        }


def quick_reply_sets(library: LibraryService) -> list[QuickReplySet]:
    """Every Quick Reply set of the library, in version-2 form."""
    sets = []
    for doc in library.documents(LibraryKind.QUICK_REPLY_SET):
        item = library.item(LibraryKind.QUICK_REPLY_SET, doc.id)
        sets.append(item.migrated() if isinstance(item, LegacyQuickReplySet) else item)
    return sets


def find_quick_reply(library: LibraryService, name: str) -> str | None:
    """The script of the Quick Reply labelled `name`, else of `Set.Label` (SillyTavern's
    lookup order for `/run` and `/:`)."""
    sets = quick_reply_sets(library)
    for qr_set in sets:
        for reply in qr_set.qr_list:
            if reply.label == name:
                return reply.message
    for index, char in enumerate(name):
        if char != ".":
            continue
        set_name, label = name[:index], name[index + 1 :]
        for qr_set in sets:
            if qr_set.name == set_name:
                for reply in qr_set.qr_list:
                    if reply.label == label:
                        return reply.message
    return None
