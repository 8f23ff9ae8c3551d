"""The chat as the Text Completion prompt sees it: SillyTavern's `coreChat` and `chat2`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from taverna.engine.assembly.context import ChatMessage, Speaker
from taverna.engine.textgen.instruct import SequenceVariant


@dataclass(frozen=True, slots=True)
class Item:
    """A message of SillyTavern's `coreChat` as the Text Completion path sees it."""

    name: str
    text: str
    is_user: bool
    is_narrator: bool = False
    forced_avatar: bool = False
    injected: bool = False
    source: str = ""
    kind: str = "history"
    # the code of `source`'s words (LEDGER_SOURCES) and its values, for a page's language
    source_code: str = ""
    source_params: Mapping[str, str | int] | None = None


Entry = ChatMessage | Item


def as_item(entry: Entry) -> Item:
    """A chat message as an `Item` (an `Item` as it is)."""
    if isinstance(entry, Item):
        return entry
    message = entry
    return Item(
        message.name,
        message.text,
        message.is_user,
        is_narrator=message.speaker is Speaker.NARRATOR,
        forced_avatar=message.forced_avatar,
        source=message.id,
    )


def entry_source(entry: Entry | None) -> str:
    """Where a message came from, as the ledger names it (a message id, a slot)."""
    if entry is None:
        return ""
    return entry.source if isinstance(entry, Item) else entry.id


class History:
    """SillyTavern's `chat2`: the formatted messages, newest first, formatted on demand.

    Only the messages the context can hold are ever formatted, which keeps a long
    chat's turn cheap; the text of each is exactly what SillyTavern formats
    (§6.4 FIRST/LAST selection, §6.5 step 2 for the continued message).
    """

    def __init__(
        self,
        items: list[Entry],
        *,
        format_message: Callable[[Entry, SequenceVariant], str],
        instruct_on: bool,
        is_continue: bool,
    ) -> None:
        self.format_message = format_message
        self.instruct_on = instruct_on
        self.is_continue = is_continue
        # §6.5 step 1: regenerating the greeting leaves one empty message.
        self.items: list[Entry] = items if items else [Item("", "", False, kind="empty")]
        self.empty = not items
        self.count = len(self.items)
        self.offset = 0  # 1 once a continue has taken the newest message out
        self.last_user = -1
        for j in range(self.count - 1, -1, -1):
            if self.items[j].is_user:
                self.last_user = j
                break
        self._texts: dict[int, str] = {}

    def __len__(self) -> int:
        return self.count - self.offset

    def entry(self, index: int) -> Entry | None:
        """The message at this position (0 = newest still in the history)."""
        if self.empty:
            return None
        return self.items[self.count - 1 - (index + self.offset)]

    def was_user(self, index: int) -> bool:
        """Whether SillyTavern counted this position as a user message.

        Its list of user positions is taken before a continue shifts the history,
        and excludes the continued message (§6.5 step 6 quirk kept for fidelity).
        """
        if index < 0 or index >= self.count or self.empty:
            return False
        if index == 0 and self.is_continue:
            return False
        return self.items[self.count - 1 - index].is_user

    def text(self, index: int) -> str:
        """The formatted message at this position."""
        i = index + self.offset
        found = self._texts.get(i)
        if found is not None:
            return found
        if self.empty:
            return ""
        j = self.count - 1 - i
        item = self.items[j]
        instruct = self.instruct_on
        variant = SequenceVariant.MIDDLE
        if j == 0 and instruct:
            variant = SequenceVariant.FIRST
        if j == self.last_user and instruct:
            variant = SequenceVariant.LAST
        if i == 0 and self.is_continue:
            if instruct:
                variant = SequenceVariant.LAST
            text = self.format_message(item, variant)
            cut = text.rfind(item.text)
            text = text[: cut + len(item.text)] if cut >= 0 else text
        else:
            text = self.format_message(item, variant)
        self._texts[i] = text
        return text
