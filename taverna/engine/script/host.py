"""What a script may do to a chat, through the services that own it.

The interpreter never touches a chat, a model or a file itself: the commands that
change a chat (`/send`, `/sys`, `/hide`, `/gen`, `/inject` ...) call a `ChatHost`. The
services implement it over the chat's tree; `NoChat` answers when a script runs
without a chat (each such command then fails with a clear error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from taverna.engine.macros import MacroContext
from taverna.engine.script.errors import ScriptError
from taverna.engine.tokens import get_tokenizer


@dataclass(frozen=True, slots=True)
class Injection:
    """`/inject`: a prompt placed by id (algo-chat-ops.md §9.2, formats-extensions.md §3).

    `position`: `after` (after the story string), `before`, `chat` (at `depth`) or
    `none`; `role`: system, user or assistant; `scan`: lorebooks see the text;
    `ephemeral`: removed after the next generation.
    """

    id: str
    text: str
    position: str = "after"
    depth: int = 4
    role: str = "system"
    scan: bool = False
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class Generation:
    """A generation a script asks for.

    `kind`: `gen` (the chat's prompt plus `prompt`, nothing stored), `genraw` (only
    `prompt`), `trigger` (a normal reply), `continue`, `impersonate`, `swipe`.
    """

    kind: str
    prompt: str = ""
    options: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class ChatLine:
    """One message of the chat as a script reads it (`/messages`): who wrote it, its text,
    whether the user wrote it, whether it is hidden from the model (SillyTavern's
    `is_system`) and whether it is a narrator's message (`/sys`)."""

    name: str
    text: str
    is_user: bool = False
    hidden: bool = False
    narrator: bool = False


class ChatHost(Protocol):
    """The chat effects of a script; each returns what the command puts in the pipe."""

    def send(self, text: str, *, at: int | None, name: str | None) -> str: ...

    def send_as(self, name: str, text: str, *, at: int | None) -> str: ...

    def narrate(self, text: str, *, at: int | None) -> str: ...

    def comment(self, text: str, *, at: int | None) -> str: ...

    def hide(self, start: int, end: int, *, hidden: bool) -> str: ...

    def messages(self) -> Sequence[ChatLine]:
        """The chat's messages in order (the active path), index 0 first."""
        ...

    def delete_messages(self, indices: Sequence[int]) -> None:
        """Delete the messages at these places of `messages()` (each with its swipes)."""
        ...

    def set_narrator_name(self, name: str) -> None:
        """`/sysname`: the name the chat's narrator messages (`/sys`) are written under."""
        ...

    def delay(self, seconds: float) -> None:
        """`/delay`: wait this long before the script goes on."""
        ...

    def delete_swipe(self, index: int | None) -> int | None:
        """`/delswipe`: delete the last message's swipe at `index` (0-based; None: the one
        shown) and show the next one (or the one before); its place, None when nothing
        could be deleted (no such swipe, or only one)."""
        ...

    def add_swipe(self, text: str, *, switch: bool) -> int:
        """`/addswipe`: a new swipe of the last message, shown only with `switch`; its
        0-based place among the message's swipes."""
        ...

    def run_regex(self, name: str, text: str, substitute: Callable[[str], str]) -> str | None:
        """`/regex name=`: the regex script of that name (any case) run on `text`; the
        text unchanged when it is disabled, None when there is none. `substitute` fills
        macros in its pattern."""
        ...

    def generate(self, request: Generation) -> str: ...

    def inject(self, injection: Injection) -> str: ...

    def flush_injections(self, injection_id: str | None) -> str: ...

    def list_injections(self) -> Mapping[str, Injection]: ...

    def find_entry(self, book: str, field: str, text: str) -> str:
        """The uid of the entry of `book` whose `field` best matches `text` ('' if none)."""
        ...

    def entry_field(self, book: str, uid: str, field: str) -> str: ...

    def quick_reply(self, name: str) -> str | None:
        """The script of the Quick Reply `Set.Label` (or `Label`), None when none exists."""
        ...

    def group_member(self, action: str, member: str) -> str:
        """`/member-{action}` in a group chat: disable, enable, add, remove, up, down."""
        ...

    def quick_reply_command(self, command: str, named: Mapping[str, str], text: str) -> str:
        """A `/qr-*` command on the library's Quick Reply sets (and this chat's)."""
        ...

    def notify(self, text: str, severity: str) -> None: ...

    def count_tokens(self, text: str) -> int:
        """`/tokens`, `/count`, `/trimtokens`: the tokens of `text` as the chat's next prompt
        counts them (the same tokenizer)."""
        ...

    def set_input(self, text: str) -> None:
        """`/setinput`: the text of the chat input box, which the page shows after the run."""
        ...

    def stop_generation(self) -> bool:
        """`/stop`: stop the chat's running generation; whether one was running."""
        ...

    def switch(self, name: str, state: bool | None) -> bool:
        """`/instruct-state`, `/sysprompt-state`: whether instruct mode (`instruct`) or the
        system prompt (`sysprompt`) is on, after turning it on or off (None: just read)."""
        ...

    def select_books(self, names: Sequence[str], state: str) -> None:
        """`/world`: turn the lorebooks named (any case) `on`, `off` or `toggle` them in the
        selection used by every chat; no names: turn every one of them off."""
        ...

    def character_tags(self, name: str | None) -> Sequence[str] | None:
        """`/tag-list`, `/tag-exists`: the tags of the character called `name` (None: the
        chat's character); None when there is no such character."""
        ...

    def change_tag(self, name: str | None, tag: str, *, add: bool) -> bool:
        """`/tag-add`, `/tag-remove`: whether the character's tags changed."""
        ...

    def set_expression(self, label: str, name: str | None) -> str:
        """`/expression`: show `label` on the chat's character (or the one called `name`)
        until the next reply; the label shown."""
        ...

    def writes(self) -> int:
        """How many times the script has changed the chat: macros read the chat again
        after each change, as SillyTavern reads the chat at each command."""
        ...

    def chat_macros(self, macros: MacroContext) -> MacroContext:
        """`macros` with what it reads from the chat (the last messages, their ids, the swipe
        ids) read from the chat as it is now."""
        ...


# What `/tokens` counts with where no chat (so no connection) says which tokenizer.
NO_CHAT_TOKENIZER = "cl100k_base"


class NoChat:
    """The host of a script run outside any chat: chat commands fail, echoes are kept."""

    def __init__(self) -> None:
        self.notices: list[tuple[str, str]] = []
        self.input: str | None = None  # what /setinput put in the input box

    def _none(self, command: str) -> ScriptError:
        return ScriptError(
            f"/{command} needs a chat (run the script in one)",
            command=command,
            code="needs_chat_run_script_in",
            params={"command": str(command)},
        )

    def send(self, text: str, *, at: int | None, name: str | None) -> str:
        raise self._none("send")

    def send_as(self, name: str, text: str, *, at: int | None) -> str:
        raise self._none("sendas")

    def narrate(self, text: str, *, at: int | None) -> str:
        raise self._none("sys")

    def comment(self, text: str, *, at: int | None) -> str:
        raise self._none("comment")

    def hide(self, start: int, end: int, *, hidden: bool) -> str:
        raise self._none("hide" if hidden else "unhide")

    def messages(self) -> Sequence[ChatLine]:
        raise self._none("messages")

    def delete_messages(self, indices: Sequence[int]) -> None:
        raise self._none("cut")

    def set_narrator_name(self, name: str) -> None:
        raise self._none("sysname")

    def delay(self, seconds: float) -> None:
        """The engine waits on nothing itself: the services' hosts sleep."""

    def add_swipe(self, text: str, *, switch: bool) -> int:
        raise self._none("addswipe")

    def set_expression(self, label: str, name: str | None) -> str:
        raise self._none("expression")

    def delete_swipe(self, index: int | None) -> int | None:
        raise self._none("delswipe")

    def run_regex(self, name: str, text: str, substitute: Callable[[str], str]) -> str | None:
        return None

    def generate(self, request: Generation) -> str:
        raise self._none(request.kind)

    def inject(self, injection: Injection) -> str:
        raise self._none("inject")

    def flush_injections(self, injection_id: str | None) -> str:
        raise self._none("flushinject")

    def list_injections(self) -> Mapping[str, Injection]:
        return {}

    def find_entry(self, book: str, field: str, text: str) -> str:
        raise self._none("findentry")

    def entry_field(self, book: str, uid: str, field: str) -> str:
        raise self._none("getentryfield")

    def quick_reply(self, name: str) -> str | None:
        return None

    def group_member(self, action: str, member: str) -> str:
        raise self._none(f"member-{action}")

    def quick_reply_command(self, command: str, named: Mapping[str, str], text: str) -> str:
        raise self._none(command)

    def notify(self, text: str, severity: str) -> None:
        self.notices.append((severity, text))

    def count_tokens(self, text: str) -> int:
        return get_tokenizer(NO_CHAT_TOKENIZER).count(text)

    def set_input(self, text: str) -> None:
        self.input = text

    def stop_generation(self) -> bool:
        return False

    def switch(self, name: str, state: bool | None) -> bool:
        raise self._none(f"{name}-state")

    def select_books(self, names: Sequence[str], state: str) -> None:
        raise self._none("world")

    def character_tags(self, name: str | None) -> Sequence[str] | None:
        raise self._none("tag-list")

    def change_tag(self, name: str | None, tag: str, *, add: bool) -> bool:
        raise self._none("tag-add" if add else "tag-remove")

    def writes(self) -> int:
        return 0

    def chat_macros(self, macros: MacroContext) -> MacroContext:
        return macros
