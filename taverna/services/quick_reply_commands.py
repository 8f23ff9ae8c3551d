"""The `/qr-*` script commands carried out on the library's Quick Reply sets
(SillyTavern's quick-reply extension, `SlashCommandHandler` over `QuickReplyApi`).

A command that cannot be carried out (no such set, no such reply) is told as an error
notice and gives an empty result; the script goes on, as it does in SillyTavern.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from taverna.engine.script.values import is_true
from taverna.errors import TavernaError
from taverna.model.chat import Chat
from taverna.model.quick_reply import QuickReply, QuickReplySet
from taverna.services.quick_replies import QuickReplyService, StoredSet

# `/qr-create` and `/qr-update` flags and the fields they set.
FLAGS = {
    "hidden": "isHidden",
    "startup": "executeOnStartup",
    "user": "executeOnUser",
    "bot": "executeOnAi",
    "load": "executeOnChatChange",
    "new": "executeOnNewChat",
    "group": "executeOnGroupMemberDraft",
}


class QuickReplyCommandError(TavernaError):
    """A `/qr-*` command that names a set or reply that does not exist."""


class QuickReplyCommands:
    """`/qr-*` for one script run; `chat` is None outside a chat (chat sets then fail).

    `on_chat` receives the chat after a command changed its sets (a new revision)."""

    def __init__(
        self,
        service: QuickReplyService,
        chat: Chat | None,
        notify: Callable[[str, str], None],
        on_chat: Callable[[Chat], None] | None = None,
    ) -> None:
        self.service = service
        self.chat = chat
        self.notify = notify
        self.on_chat = on_chat

    def run(self, command: str, named: Mapping[str, str], text: str) -> str:
        handler = getattr(self, "_" + command.replace("-", "_"), None)
        if handler is None:
            raise QuickReplyCommandError(f"no command /{command}")
        try:
            result: str = handler(named, text.strip())
        except TavernaError as error:
            self.notify(f"/{command}: {error}", "error")
            return ""
        return result

    # ------------------------------------------------------------------ reading

    def _set(self, name: str) -> StoredSet:
        found = self.service.by_name(name)
        if found is None:
            raise QuickReplyCommandError(f'no Quick Reply set named "{name}"')
        return found

    def _qr_list(self, named: Mapping[str, str], text: str) -> str:
        found = self._set(named.get("set") or text)
        return json.dumps([reply.label for reply in found.set.qr_list], ensure_ascii=False)

    def _qr_set_list(self, named: Mapping[str, str], text: str) -> str:
        if text == "global":
            names = self.service.global_sets()
        elif text == "chat":
            names = self.service.chat_sets(self.chat) if self.chat else []
        else:
            names = [s.set.name for s in self.service.sets()]
        return json.dumps(names, ensure_ascii=False)

    def _qr_get(self, named: Mapping[str, str], text: str) -> str:
        found = self.service.by_name(named.get("set", ""))
        reply = _find(found.set, named, text) if found else None
        return "" if reply is None else json.dumps(_reply_json(reply), ensure_ascii=False)

    # ------------------------------------------------------------------ writing

    def _qr_create(self, named: Mapping[str, str], text: str) -> str:
        stored = self._set(named.get("set", ""))
        data = stored.set.to_json()
        replies = list(data.get("qrList") or [])
        new_id = max([int(data.get("idIndex") or 0), *(int(r.get("id", 0)) for r in replies)]) + 1
        reply: dict[str, Any] = {
            "id": new_id,
            "label": named.get("label", ""),
            "title": named.get("title", ""),
            "message": text,
            "automationId": named.get("automationId", ""),
            **{field: is_true(named.get(flag, "false")) for flag, field in FLAGS.items()},
        }
        if "icon" in named:
            reply["icon"] = named["icon"]
        if "showlabel" in named:
            reply["showLabel"] = is_true(named["showlabel"])
        self._save({**data, "qrList": [*replies, reply], "idIndex": new_id})
        return ""

    def _qr_update(self, named: Mapping[str, str], text: str) -> str:
        stored = self._set(named.get("set", ""))
        reply = _find(stored.set, named, "")
        if reply is None:
            raise QuickReplyCommandError(f'no Quick Reply "{_which(named, "")}" in that set')
        changes: dict[str, Any] = {
            field: is_true(named[flag]) for flag, field in FLAGS.items() if flag in named
        }
        for arg, field in (("newlabel", "label"), ("title", "title"), ("icon", "icon")):
            if arg in named:
                changes[field] = named[arg]
        if "showlabel" in named:
            changes["showLabel"] = is_true(named["showlabel"])
        if "automationId" in named:
            changes["automationId"] = named["automationId"]
        if text:  # a blank script leaves the reply's own
            changes["message"] = text
        self._replace(stored, reply, {**reply.to_json(), **changes})
        return ""

    def _qr_delete(self, named: Mapping[str, str], text: str) -> str:
        stored = self._set(named.get("set", ""))
        reply = _find(stored.set, named, text)
        if reply is None:
            raise QuickReplyCommandError(f'no Quick Reply "{_which(named, text)}" in that set')
        self._replace(stored, reply, None)
        return ""

    def _qr_set_create(self, named: Mapping[str, str], text: str) -> str:
        name = named.get("name") or text
        if not name:
            raise QuickReplyCommandError("a Quick Reply set needs a name")
        if self.service.by_name(name) is not None:
            raise QuickReplyCommandError(f'a Quick Reply set named "{name}" exists already')
        self.service.save(
            QuickReplySet.from_json(
                {
                    "version": 2,
                    "name": name,
                    "disableSend": is_true(named.get("nosend", "false")),
                    "placeBeforeInput": is_true(named.get("before", "false")),
                    "injectInput": is_true(named.get("inject", "false")),
                    "qrList": [],
                }
            )
        )
        return ""

    def _qr_set_delete(self, named: Mapping[str, str], text: str) -> str:
        self.service.delete(self._set(named.get("name") or text).id)
        return ""

    def _save(self, data: Mapping[str, Any]) -> None:
        self.service.save(QuickReplySet.from_json(dict(data)))

    def _replace(self, stored: StoredSet, old: QuickReply, new: Mapping[str, Any] | None) -> None:
        data = stored.set.to_json()
        replies = []
        for item in data.get("qrList") or []:
            if item.get("id") == old.id:
                if new is not None:
                    replies.append(dict(new))
            else:
                replies.append(item)
        self._save({**data, "qrList": replies})

    # --------------------------------------------------------------- activation

    def _global(self, name: str, on: bool | None) -> str:
        self._set(name)
        names = self.service.global_sets()
        on = (name not in names) if on is None else on
        kept = [n for n in names if n != name]
        self.service.set_global([*kept, name] if on else kept)
        return ""

    def _in_chat(self, name: str, on: bool | None) -> str:
        if self.chat is None:
            raise QuickReplyCommandError("needs a chat (run the script in one)")
        self._set(name)
        names = self.service.chat_sets(self.chat)
        on = (name not in names) if on is None else on
        kept = [n for n in names if n != name]
        chat = self.service.set_chat(
            self.chat.id, [*kept, name] if on else kept, revision=self.chat.revision
        )
        self.chat = chat
        if self.on_chat is not None:
            self.on_chat(chat)
        return ""

    def _qr_set(self, named: Mapping[str, str], text: str) -> str:
        return self._global(text, None)

    def _qr_set_on(self, named: Mapping[str, str], text: str) -> str:
        return self._global(text, True)

    def _qr_set_off(self, named: Mapping[str, str], text: str) -> str:
        return self._global(text, False)

    def _qr_chat_set(self, named: Mapping[str, str], text: str) -> str:
        return self._in_chat(text, None)

    def _qr_chat_set_on(self, named: Mapping[str, str], text: str) -> str:
        return self._in_chat(text, True)

    def _qr_chat_set_off(self, named: Mapping[str, str], text: str) -> str:
        return self._in_chat(text, False)


def _which(named: Mapping[str, str], text: str) -> str:
    return named.get("id") or named.get("label") or text


def _find(qr_set: QuickReplySet, named: Mapping[str, str], text: str) -> QuickReply | None:
    """By `id=` when given (a number), else by `label=` (or the unnamed text)."""
    if "id" in named:
        try:
            wanted = int(named["id"])
        except ValueError:
            return None
        return next((r for r in qr_set.qr_list if r.id == wanted), None)
    label = named.get("label", text)
    return next((r for r in qr_set.qr_list if r.label == label), None)


def _reply_json(reply: QuickReply) -> dict[str, Any]:
    """A reply in SillyTavern's `QuickReply.toJSON` shape."""
    data = reply.model_dump(mode="json", by_alias=True)
    keys = (
        "id", "icon", "showLabel", "label", "title", "message", "contextList",
        "preventAutoExecute", "isHidden", "executeOnStartup", "executeOnUser", "executeOnAi",
        "executeOnChatChange", "executeOnGroupMemberDraft", "executeOnNewChat", "automationId",
    )  # fmt: skip
    return {key: data.get(key) for key in keys}
