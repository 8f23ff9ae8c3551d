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
from taverna.services.scripts.quick_replies import QuickReplyService, StoredSet

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

# `/qr-set-create` and `/qr-set-update` options and the set fields they set.
SET_OPTIONS = {"nosend": "disableSend", "before": "placeBeforeInput", "inject": "injectInput"}


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
            raise QuickReplyCommandError(
                f"no command /{command}", code="no_command", params={"command": str(command)}
            )
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
            raise QuickReplyCommandError(
                f'no Quick Reply set named "{name}"',
                code="no_quick_reply_set_quoted",
                params={"name": str(name)},
            )
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
            raise QuickReplyCommandError(
                f'no Quick Reply "{_which(named, "")}" in that set',
                code="no_quick_reply_in_that",
                params={"named": str(_which(named, ""))},
            )
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
            raise QuickReplyCommandError(
                f'no Quick Reply "{_which(named, text)}" in that set',
                code="no_quick_reply_in_that",
                params={"named": str(_which(named, text))},
            )
        self._replace(stored, reply, None)
        return ""

    def _reply(self, named: Mapping[str, str], text: str = "") -> tuple[StoredSet, QuickReply]:
        stored = self._set(named.get("set", ""))
        reply = _find(stored.set, named, text)
        if reply is None:
            raise QuickReplyCommandError(
                f'no Quick Reply "{_which(named, text)}" in that set',
                code="no_quick_reply_in_that",
                params={"named": str(_which(named, text))},
            )
        return stored, reply

    def _qr_contextadd(self, named: Mapping[str, str], text: str) -> str:
        """Link another set into a reply's context menu (`chain=true`: chained)."""
        stored, reply = self._reply(named)
        linked = self._set(text).set.name
        link = {"set": linked, "isChained": is_true(named.get("chain", "false"))}
        data = reply.to_json()
        self._replace(
            stored, reply, {**data, "contextList": [*(data.get("contextList") or []), link]}
        )
        return ""

    def _qr_contextdel(self, named: Mapping[str, str], text: str) -> str:
        """Take a set's link (the first) out of a reply's context menu."""
        stored, reply = self._reply(named)
        linked = self._set(text).set.name
        data = reply.to_json()
        links = list(data.get("contextList") or [])
        at = next((i for i, link in enumerate(links) if link.get("set") == linked), None)
        if at is not None:
            del links[at]
            self._replace(stored, reply, {**data, "contextList": links})
        return ""

    def _qr_contextclear(self, named: Mapping[str, str], text: str) -> str:
        """Empty a reply's context menu (the reply by `label=`, `id=` or the unnamed text)."""
        stored, reply = self._reply(named, text)
        self._replace(stored, reply, {**reply.to_json(), "contextList": []})
        return ""

    def _qr_set_create(self, named: Mapping[str, str], text: str) -> str:
        name = named.get("name") or text
        if not name:
            raise QuickReplyCommandError(
                "a Quick Reply set needs a name", code="quick_reply_set_needs_name"
            )
        if self.service.by_name(name) is not None:
            raise QuickReplyCommandError(
                f'a Quick Reply set named "{name}" exists already',
                code="quick_reply_set_named_exists",
                params={"name": str(name)},
            )
        self.service.save(
            QuickReplySet.from_json(
                {
                    "version": 2,
                    "name": name,
                    **{
                        field: is_true(named.get(arg, "false"))
                        for arg, field in SET_OPTIONS.items()
                    },
                    "qrList": [],
                }
            )
        )
        return ""

    def _qr_set_update(self, named: Mapping[str, str], text: str) -> str:
        """Change a set's send options; the options not given stay as they are."""
        stored = self._set(named.get("name") or text)
        changes = {
            field: is_true(named[arg])
            for arg, field in SET_OPTIONS.items()
            if named.get(arg) is not None
        }
        self._save({**stored.set.to_json(), **changes})
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

    # SillyTavern's QuickReplyApi: a toggle adds a set absent from the list (shown or not
    # as `visible=` says) and removes a present one; `-on` adds it or sets its visibility.

    def _global(self, name: str, on: bool | None, named: Mapping[str, str]) -> str:
        self._set(name)
        names, visible = _switched(self.service.global_links(), name, on, named)
        self.service.set_global(names, visible)
        return ""

    def _in_chat(self, name: str, on: bool | None, named: Mapping[str, str]) -> str:
        if self.chat is None:
            raise QuickReplyCommandError(
                "needs a chat (run the script in one)", code="command_needs_chat"
            )
        self._set(name)
        names, visible = _switched(self.service.chat_links(self.chat), name, on, named)
        chat = self.service.set_chat(
            self.chat.id, names, revision=self.chat.revision, visible=visible
        )
        self.chat = chat
        if self.on_chat is not None:
            self.on_chat(chat)
        return ""

    def _qr_set(self, named: Mapping[str, str], text: str) -> str:
        return self._global(text, None, named)

    def _qr_set_on(self, named: Mapping[str, str], text: str) -> str:
        return self._global(text, True, named)

    def _qr_set_off(self, named: Mapping[str, str], text: str) -> str:
        return self._global(text, False, named)

    def _qr_chat_set(self, named: Mapping[str, str], text: str) -> str:
        return self._in_chat(text, None, named)

    def _qr_chat_set_on(self, named: Mapping[str, str], text: str) -> str:
        return self._in_chat(text, True, named)

    def _qr_chat_set_off(self, named: Mapping[str, str], text: str) -> str:
        return self._in_chat(text, False, named)


def _switched(
    links: Mapping[str, bool], name: str, on: bool | None, named: Mapping[str, str]
) -> tuple[list[str], dict[str, bool]]:
    """A set list after `/qr-set` (`on` None: toggle), `-on` or `-off`, as SillyTavern's
    QuickReplyApi does it: a toggle adds an absent set and removes a present one; `-on`
    adds the set or, when present, sets its visibility; an added set is shown unless
    `visible=false`."""
    present = name in links
    if on is False or (on is None and present):
        return [n for n in links if n != name], {}
    names = list(links) if present else [*links, name]
    return names, {name: is_true(named.get("visible", "true"))}


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
