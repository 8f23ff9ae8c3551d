"""A chat host for tests: records what a script asked of the chat, answers generations."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from taverna.engine.macros import MacroContext
from taverna.engine.script import ChatLine, Generation, Injection


class RecordingHost:
    """Every chat effect appended to `log` as text; Quick Replies from `quick_replies`."""

    def __init__(self, quick_replies: Mapping[str, str] | None = None) -> None:
        self.log: list[str] = []
        self.notices: list[str] = []
        self.injections: dict[str, Injection] = {}
        self.quick_replies = dict(quick_replies or {})
        self.states: dict[str, bool] = {}
        self.tags: dict[str, list[str]] = {"Alice": ["friend"]}

    def send(self, text: str, *, at: int | None, name: str | None) -> str:
        self.log.append(f"send:{text}" + (f":at={at}" if at is not None else ""))
        return ""

    def send_as(self, name: str, text: str, *, at: int | None) -> str:
        self.log.append(f"sendas:{name}:{text}")
        return ""

    def narrate(self, text: str, *, at: int | None) -> str:
        self.log.append(f"sys:{text}")
        return ""

    def comment(self, text: str, *, at: int | None) -> str:
        self.log.append(f"comment:{text}")
        return ""

    def messages(self) -> list[ChatLine]:
        """A chat of ten messages (the cases only need its length)."""
        return [ChatLine(name="Bob", text=f"message {i}") for i in range(10)]

    def delete_messages(self, indices: Sequence[int]) -> None:
        self.log.append("delete:" + ",".join(map(str, indices)))

    def run_regex(self, name: str, text: str, substitute: Callable[[str], str]) -> str | None:
        return None

    def delete_swipe(self, index: int | None) -> int | None:
        self.log.append(f"delswipe:{index}")
        return 0

    def add_swipe(self, text: str, *, switch: bool) -> int:
        self.log.append(f"addswipe:{text}" + (":switch" if switch else ""))
        return 1

    def delay(self, seconds: float) -> None:
        self.log.append(f"delay:{seconds:g}")

    def set_narrator_name(self, name: str) -> None:
        self.log.append(f"sysname:{name}")

    def hide(self, start: int, end: int, *, hidden: bool) -> str:
        self.log.append(f"{'hide' if hidden else 'unhide'}:{start}-{end}")
        return ""

    def generate(self, request: Generation) -> str:
        options = ",".join(f"{k}={v}" for k, v in sorted((request.options or {}).items()))
        self.log.append(f"{request.kind}:{request.prompt}" + (f":{options}" if options else ""))
        return f"<{request.kind}:{request.prompt}>" if request.kind in ("gen", "genraw") else ""

    def inject(self, injection: Injection) -> str:
        if injection.text:
            self.injections[injection.id] = injection
        else:
            self.injections.pop(injection.id, None)
        self.log.append(
            f"inject:{injection.id}:{injection.position}:{injection.depth}:{injection.role}:"
            f"{injection.text}"
        )
        return ""

    def flush_injections(self, injection_id: str | None) -> str:
        if injection_id is None:
            self.injections.clear()
        else:
            self.injections.pop(injection_id, None)
        self.log.append(f"flushinject:{injection_id or '*'}")
        return ""

    def list_injections(self) -> Mapping[str, Injection]:
        return dict(self.injections)

    def find_entry(self, book: str, field: str, text: str) -> str:
        self.log.append(f"findentry:{book}:{field}:{text}")
        return "7"

    def entry_field(self, book: str, uid: str, field: str) -> str:
        self.log.append(f"getentryfield:{book}:{uid}:{field}")
        return f"{field} of {uid}"

    def quick_reply(self, name: str) -> str | None:
        return self.quick_replies.get(name)

    def group_member(self, action: str, member: str) -> str:
        self.log.append(f"member-{action}:{member}")
        return ""

    def quick_reply_command(self, command: str, named: Mapping[str, str], text: str) -> str:
        self.log.append(f"{command}:{sorted(named.items())}:{text}")
        return ""

    def notify(self, text: str, severity: str) -> None:
        self.notices.append(text if severity == "info" else f"{severity}:{text}")

    def count_tokens(self, text: str) -> int:
        """One token a word: the cases count words."""
        return len(text.split())

    def set_input(self, text: str) -> None:
        self.log.append(f"setinput:{text}")

    def stop_generation(self) -> bool:
        self.log.append("stop")
        return False

    def switch(self, name: str, state: bool | None) -> bool:
        if state is not None:
            self.states[name] = state
        return self.states.get(name, name == "sysprompt")

    def select_books(self, names: Sequence[str], state: str) -> None:
        self.log.append(f"world:{state}:{','.join(names)}")

    def character_tags(self, name: str | None) -> Sequence[str] | None:
        return self.tags.get(name or "Alice")

    def change_tag(self, name: str | None, tag: str, *, add: bool) -> bool:
        tags = self.tags.setdefault(name or "Alice", [])
        if (tag in tags) == add:
            return False
        if add:
            tags.append(tag)
        else:
            tags.remove(tag)
        return True

    def writes(self) -> int:
        """The recorded chat never changes what the macros read."""
        return 0

    def chat_macros(self, macros: MacroContext) -> MacroContext:
        return macros
