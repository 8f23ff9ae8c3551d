"""Example dialogue blocks split into speaker turns (algo-prompt-assembly.md §3.4)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExampleTurn:
    """One turn of an example block: who speaks (`example_user`/`example_assistant`) and what."""

    name: str
    content: str

    @property
    def is_user(self) -> bool:
        """Whether the user speaks this turn."""
        return self.name == "example_user"


def split_example_turns(
    block: str, user: str, char: str, group: bool = False
) -> tuple[ExampleTurn, ...]:
    """The turns of one example block, as SillyTavern's `parseExampleIntoIndividual` reads them.

    The first line is the block's heading and is skipped. A line starting with
    `"{user}:"` or `"{char}:"` starts a turn; other lines continue the current one
    (lines before the first speaker line join the first turn). A turn's text is its
    lines joined, with the first `Name:` removed, trimmed; in a group the speaker's
    name is put back in front (algo-prompt-assembly.md §3.4).
    """
    turns: list[ExampleTurn] = []
    lines: list[str] = []
    in_user = False
    in_char = False

    def close(name: str, kind: str) -> None:
        text = "\n".join(lines).replace(name + ":", "", 1).strip()
        if group:
            text = f"{name}: {text}"
        turns.append(ExampleTurn(kind, text))
        lines.clear()

    for line in block.split("\n")[1:]:
        if line.startswith(user + ":"):
            in_user = True
            if in_char:
                close(char, "example_assistant")
            in_char = False
        elif line.startswith(char + ":"):
            in_char = True
            if in_user:
                close(user, "example_user")
            in_user = False
        lines.append(line)
    if in_user:
        close(user, "example_user")
    elif in_char:
        close(char, "example_assistant")
    return tuple(turns)
