"""Quick Replies that run by themselves on an event of the bus.

A reply lists event names in `executeOnEvents` (taverna's own key, beside SillyTavern's
`executeOn...` switches, which the page runs); when one of the chat's active sets has
such a reply and the event happens in that chat, its script runs there with `{{var::event}}`
and `{{var::message_id}}` set. Scripts run one at a time on a thread of their own, after
the write that emitted the event; what a script writes emits events too, but those do
not start automations again (no endless chains).

SillyTavern's own "on group member draft" switch (`executeOnGroupMemberDraft`) is run here
too: in a group round, before each member writes, on the thread that announced the member
(so what the script does, an /inject say, is in that member's prompt), with
`{{var::member}}` set to the member's name.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.model.chat import Chat
from taverna.model.quick_reply import QuickReply
from taverna.services.chats.service import ChatService
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND
from taverna.services.library.service import LibraryKind
from taverna.services.library.watch import Kept, LibraryWatch
from taverna.services.plugins import Event, EventName
from taverna.services.scripts.quick_replies import QuickReplyService
from taverna.services.scripts.runner import ScriptService

__all__ = ["QuickReplyAutomations"]

log = logging.getLogger(__name__)

# Chats whose account is remembered (a chat's owner never changes), at most.
OWNERS_KEPT = 4096
_SETS = LibraryKind.QUICK_REPLY_SET.value

# events whose payload is not a chat's change (the prompt is handed round, not announced)
_NOT_FOR_SCRIPTS = frozenset({EventName.CHAT_COMPLETION_PROMPT_READY})


def _runs_on(reply: QuickReply, event: Event) -> bool:
    if event.name.value in (reply.execute_on_events or ()):
        return True
    return event.name is EventName.GROUP_MEMBER_DRAFTED and reply.execute_on_group_member_draft


class QuickReplyAutomations:
    """Listens on the chat service's bus and runs the replies bound to each event."""

    def __init__(self, chats: ChatService, *, watch: LibraryWatch | None = None) -> None:
        self.chats = chats
        # Whether an account has any reply that runs on an event, read again only once
        # the library changed: most have none, and every event of a turn asks.
        self._automated: Kept[str, bool] = Kept(watch or LibraryWatch().watch(chats.store))
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qr-events")
        self._inside = threading.local()
        self._off = chats.events.on(None, self.heard)
        # the latest runs (event, chat, set.label) and failures, newest last
        self.ran: deque[tuple[str, str, str]] = deque(maxlen=100)
        self.failures: deque[str] = deque(maxlen=100)
        # Every event of a turn comes here: what they all ask is kept. A chat's account,
        # and each account's global sets by the version of the settings naming them.
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._globals: dict[str, tuple[Any, list[str]]] = {}
        self._kept_lock = threading.Lock()  # a group member's draft runs on another thread

    def heard(self, event: Event) -> None:
        if event.name in _NOT_FOR_SCRIPTS or getattr(self._inside, "running", False):
            return
        if event.name is EventName.GROUP_MEMBER_DRAFTED:
            self._run(event)  # before the member's prompt is built: see the module's docstring
            return
        with contextlib.suppress(RuntimeError):  # closed: the workspace is shutting down
            self._worker.submit(self._run, event)

    def _run(self, event: Event) -> None:
        chat: Chat | None = None
        owner = self._owners.get(event.chat_id)
        if owner is None:
            try:
                chat = self.chats.get_chat(event.chat_id)
            except NotFound:
                return
            owner = self._remember_owner(chat)
        if not self._automated.get(owner, lambda: self._has_automations(owner)):
            return
        # One light query (versions, not data): an account with no stored set has nothing
        # to run, and its global sets are read again only when its settings changed.
        versions = self.chats.store.versions_of(owner=owner, kinds=(SETTINGS_KIND, _SETS))
        if not any(v.kind == _SETS for v in versions):
            return
        if chat is None:
            try:
                chat = self.chats.get_chat(event.chat_id)
            except NotFound:
                return
        replies = QuickReplyService(self.chats, owner=owner)
        settings = [v for v in versions if v.kind == SETTINGS_KIND and v.name == ACTIVE]
        version = (
            (settings[-1].id, settings[-1].revision, settings[-1].updated) if settings else None
        )
        kept = self._globals.get(owner)
        if kept is None or kept[0] != version:
            kept = (version, replies.global_sets() if version is not None else [])
            self._globals[owner] = kept
        names = dict.fromkeys([*kept[1], *replies.chat_sets(chat)])
        if not names:
            return  # no set active here: the sets are not read (every event of a turn asks)
        by_name = {s.set.name: s.set for s in replies.sets()}
        self._inside.running = True
        try:
            for name in names:
                qr_set = by_name.get(name)
                for reply in qr_set.qr_list if qr_set is not None else ():
                    if not _runs_on(reply, event):
                        continue
                    arguments = {"event": event.name.value, "message_id": event.node_id or ""}
                    if event.name is EventName.GROUP_MEMBER_DRAFTED:
                        arguments["member"] = str(event.detail.get("member", ""))
                    try:
                        ScriptService(self.chats, owner=chat.owner).run(
                            reply.message, chat_id=chat.id, arguments=arguments
                        )
                        self.ran.append((event.name.value, chat.id, f"{name}.{reply.label}"))
                    except TavernaError as exc:
                        failure = f"{name}.{reply.label} on {event.name.value}: {exc}"
                        self.failures.append(failure)
                        log.warning("Quick Reply %s", failure)
        finally:
            self._inside.running = False

    def _has_automations(self, owner: str) -> bool:
        """Whether any stored set of the account has a reply that runs on some event."""
        for stored in QuickReplyService(self.chats, owner=owner).sets():
            for reply in stored.set.qr_list:
                if reply.execute_on_events or reply.execute_on_group_member_draft:
                    return True
        return False

    def _remember_owner(self, chat: Chat) -> str:
        with self._kept_lock:
            self._owners[chat.id] = chat.owner
            while len(self._owners) > OWNERS_KEPT:
                self._owners.popitem(last=False)
        return chat.owner

    def wait(self) -> None:
        """Return once every event heard so far has run its replies."""
        done: Future[None] = self._worker.submit(lambda: None)
        done.result()

    def close(self) -> None:
        self._off()
        self._worker.shutdown(wait=True)
