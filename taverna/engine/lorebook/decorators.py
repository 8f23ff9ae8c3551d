"""Decorator lines at the top of an entry's content (algo-world-info.md §1.1)."""

from __future__ import annotations

KNOWN_DECORATORS = ("@@activate", "@@dont_activate")


def _known(line: str) -> bool:
    if line.startswith("@@@"):
        line = line[1:]
    return any(line.startswith(name) for name in KNOWN_DECORATORS)


def parse_decorators(content: str) -> tuple[tuple[str, ...], str]:
    """The known decorators of `content` and the content without its decorator lines.

    Leading lines starting `@@` are decorators; `@@@name` counts only right after an
    unknown decorator (a fallback). If every line is a decorator the content is kept
    unchanged, as SillyTavern does.
    """
    if not content.startswith("@@"):
        return (), content
    lines = content.split("\n")
    decorators: list[str] = []
    fallback = False
    for index, line in enumerate(lines):
        if not line.startswith("@@"):
            return tuple(decorators), "\n".join(lines[index:])
        if line.startswith("@@@") and not fallback:
            continue
        if _known(line):
            decorators.append(line[1:] if line.startswith("@@@") else line)
            fallback = False
        else:
            fallback = True
    return tuple(decorators), content
