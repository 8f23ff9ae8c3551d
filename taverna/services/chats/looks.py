"""A chat's own looks and the expression its character wears.

A chat may have its own background and custom CSS over the global ones
(`library/looks.py`). The background is kept as SillyTavern keeps a locked one,
`chat_metadata.custom_background` as CSS `url("…")`; the custom CSS under `custom_css`,
a key of taverna's that SillyTavern carries along unread.

The expression: after each reply, the one the reply's text reads as
(`engine/expressions.py`), shown with the speaking character's sprite for it (or the
nearest it has). `/expression` sets one by hand; it holds until the next reply, as it is
kept with the reply it was set after (`chat_metadata.expression`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taverna.engine.expressions import LABELS, classify, sprite_for
from taverna.errors import TavernaError
from taverna.formats.custom_css import clean_css
from taverna.model.chat import Chat, NodeRole
from taverna.services.chats.service import ChatService
from taverna.services.library.looks import Looks, LooksLibrary, background_url, checked_css
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.library.sprites import SpriteLibrary, checked_label

__all__ = ["LABELS", "ChatLooks", "Expression", "reply_text"]

CUSTOM_BACKGROUND = "custom_background"  # SillyTavern's locked background
CUSTOM_CSS = "custom_css"
EXPRESSION = "expression"
# How far back the last reply is looked for (past the user's messages and notes after it).
_LOOK_BACK = 20
_MARKUP = re.compile(r"<(style|script)\b.*?</\1\s*>|<[^>]*>", re.S | re.I)


@dataclass(frozen=True, slots=True)
class Expression:
    """What a chat's character looks like now: the character, the label, where the label
    came from (`reply`: read from the last reply; `set`: `/expression`; `none`: no reply
    yet), the sprite shown (its label and URL; None when the pack has no fitting one) and
    every label the character's pack has."""

    character: str
    character_id: str | None
    label: str
    source: str
    sprite: str | None
    url: str | None
    labels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "character": self.character,
            "character_id": self.character_id,
            "label": self.label,
            "source": self.source,
            "sprite": self.sprite,
            "url": self.url,
            "labels": list(self.labels),
        }


def reply_text(content: str) -> str:
    """A reply as the classifier reads it: without markup and style blocks."""
    return _MARKUP.sub(" ", content)


class ChatLooks:
    """A chat's looks and its character's expression, for one account."""

    def __init__(self, chats: ChatService, library: LibraryService) -> None:
        self.chats = chats
        self.library = library
        self.looks = LooksLibrary(library.store, owner=library.owner)
        self.sprites = SpriteLibrary(library.store, owner=library.owner)

    # ------------------------------------------------------------------ looks

    def chat_looks(self, chat: Chat) -> Looks:
        """The chat's own background and custom CSS (not the global ones)."""
        css = chat.metadata.get(CUSTOM_CSS)
        return Looks(
            background=background_url(
                chat.metadata.get(CUSTOM_BACKGROUND), self.looks.backgrounds()
            ),
            css=clean_css(css if isinstance(css, str) else ""),
        )

    def set_chat_looks(
        self,
        chat_id: str,
        *,
        revision: int,
        background: str | bool | None = False,
        custom_css: str | None = None,
    ) -> Chat:
        """Change the chat's background (a picture URL, None: the global one, False:
        unchanged) and custom CSS (None: unchanged, "": none)."""
        changes: dict[str, Any] = {}
        if background is not False:
            if background:
                assert isinstance(background, str)
                self.looks.require_picture(background)
                changes[CUSTOM_BACKGROUND] = f'url("{background}")'
            else:
                changes[CUSTOM_BACKGROUND] = None
        if custom_css is not None:
            changes[CUSTOM_CSS] = checked_css(custom_css) or None
        return self.chats.update_metadata(chat_id, changes, revision=revision).chat

    # ------------------------------------------------------------- expression

    def _speaker(self, chat: Chat, name: str) -> tuple[str, str | None]:
        """The character of a chat called `name` (its first one when none is): its name
        and library id."""
        for ref in chat.characters:
            if ref.name == name:
                return ref.name, ref.document_id or self._character_id(ref.name)
        if chat.characters:
            first = chat.characters[0]
            return first.name, first.document_id or self._character_id(first.name)
        return name, self._character_id(name) if name else None

    def _character_id(self, name: str) -> str | None:
        found = self.library.find(LibraryKind.CHARACTER, name)
        return found.id if found is not None else None

    def expression(self, chat_id: str) -> Expression:
        """The expression the chat's last reply leaves its character with."""
        chat = self.chats.get_chat(chat_id)
        window = self.chats.window(chat_id, limit=_LOOK_BACK)
        last = next(
            (
                e.node
                for e in reversed(window.entries)
                if e.node.role is NodeRole.ASSISTANT and not e.node.deleted
            ),
            None,
        )
        set_by_hand = chat.metadata.get(EXPRESSION)
        set_by_hand = set_by_hand if isinstance(set_by_hand, Mapping) else {}
        at = last.id if last is not None else None
        if set_by_hand.get("after") == at and isinstance(set_by_hand.get("label"), str):
            name, character_id = self._speaker(chat, str(set_by_hand.get("character") or ""))
            label, source = str(set_by_hand["label"]), "set"
        elif last is not None:
            name, character_id = self._speaker(chat, last.speaker)
            label, source = classify(reply_text(last.content)).label, "reply"
        else:
            name, character_id = self._speaker(chat, "")
            label, source = "neutral", "none"
        sprites = self.sprites.sprites(character_id) if character_id else {}
        shown = sprite_for(label, sprites)
        return Expression(
            name,
            character_id,
            label,
            source,
            shown,
            sprites.get(shown) if shown else None,
            tuple(sorted(sprites)),
        )

    def set_expression(self, chat_id: str, label: str, *, character: str | None = None) -> Chat:
        """`/expression`: show `label` on the chat's character (or `character`) until the
        next reply. A label is one of the classifier's, or one the character's pack has."""
        wanted = checked_label(label)
        chat = self.chats.get_chat(chat_id)
        name, character_id = self._speaker(chat, character or "")
        if character and name != character:
            raise TavernaError(
                f"{character!r} is not in this chat",
                field="name",
                code="expression_character_not_in_chat",
                params={"name": character},
            )
        own = self.sprites.sprites(character_id) if character_id else {}
        if wanted not in LABELS and wanted not in own:
            raise TavernaError(
                f"no expression {label!r}: use one of {', '.join(LABELS)}",
                field="label",
                code="no_expression_named",
                params={"label": label},
            )
        window = self.chats.window(chat_id, limit=_LOOK_BACK)
        after = next(
            (e.node.id for e in reversed(window.entries) if e.node.role is NodeRole.ASSISTANT),
            None,
        )
        value = {"label": wanted, "character": name, "after": after}
        return self.chats.update_metadata(chat_id, {EXPRESSION: value}, revision=chat.revision).chat
