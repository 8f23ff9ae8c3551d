"""Activated lorebook entries and where they go in the prompt (algo-world-info.md §9)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from taverna.engine.lorebook.inputs import BookSource
from taverna.model.injection import InjectionRole
from taverna.model.lorebook import Entry, Position

DEFAULT_DEPTH = 4  # world-info.js DEFAULT_DEPTH: an @depth entry without a depth


@dataclass(frozen=True, slots=True)
class ActivatedEntry:
    """An activated entry with its macro-expanded content and where it goes."""

    book: str
    source: BookSource
    entry: Entry
    content: str
    loop: int
    sticky: bool = False

    @property
    def uid(self) -> int:
        return self.entry.uid

    @property
    def position(self) -> Position | None:
        return self.entry.position

    @property
    def order(self) -> float:
        return float(self.entry.order) if "order" not in self.entry.missing else 100.0


@dataclass(frozen=True, slots=True)
class DepthGroup:
    """Entries injected together into the history: one message at `depth` as `role`.

    `depth` is None when the group's first entry has no depth (SillyTavern then loses
    the injection, §9.2).
    """

    depth: int | None
    role: InjectionRole
    entries: tuple[ActivatedEntry, ...]
    contents: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.contents)


@dataclass(frozen=True, slots=True)
class Placement:
    """Activated entries arranged per position, in SillyTavern's final order (§9).

    Lists are in ascending `order` with ties in reverse activation order. `examples`
    holds the example-message positions as (position, content) in SillyTavern's
    `EMEntries` order; `outlets` (a newer position) maps outlet names to their text.
    """

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    an_top: tuple[str, ...] = ()
    an_bottom: tuple[str, ...] = ()
    depth: tuple[DepthGroup, ...] = ()
    examples: tuple[tuple[Position, str], ...] = ()
    outlets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def before_text(self) -> str:
        return "\n".join(self.before)

    @property
    def after_text(self) -> str:
        return "\n".join(self.after)


def place(
    entries: Sequence[ActivatedEntry], transform: Callable[[ActivatedEntry], str] | None = None
) -> Placement:
    """SillyTavern's prompt building from activated entries (algo-world-info.md §9)."""
    ordered = sorted(entries, key=lambda item: -item.order)  # stable, like JS sort
    lists: dict[Position, list[str]] = {p: [] for p in Position}
    examples: list[tuple[Position, str]] = []
    depth_groups: list[tuple[int | None, InjectionRole, list[ActivatedEntry], list[str]]] = []
    outlets: dict[str, list[str]] = {}
    for item in ordered:
        text = transform(item) if transform is not None else item.content
        if not text:
            continue  # §9: empty processed content is dropped
        position = item.position
        if position is None:
            continue  # a file entry without `position` is inserted nowhere
        if position in (Position.EM_TOP, Position.EM_BOTTOM):
            examples.insert(0, (position, text))
        elif position is Position.AT_DEPTH:
            depth = item.entry.depth if item.entry.depth is not None else DEFAULT_DEPTH
            role = item.entry.role if item.entry.role is not None else InjectionRole.SYSTEM
            for group in depth_groups:
                # §9.2: a group keeps its first entry's raw depth; a missing one (NaN in
                # SillyTavern) equals nothing, so such a group never takes more entries
                if group[0] is not None and group[0] == depth and group[1] == role:
                    group[2].insert(0, item)
                    group[3].insert(0, text)
                    break
            else:
                depth_groups.append((item.entry.depth, role, [item], [text]))
        elif position is Position.OUTLET:
            name = str(item.entry.extras.get("outletName", ""))
            # newer SillyTavern: outlet lists iterate highest order first (unverified)
            outlets.setdefault(name, []).append(text)
        else:
            lists[position].insert(0, text)
    return Placement(
        before=tuple(lists[Position.BEFORE]),
        after=tuple(lists[Position.AFTER]),
        an_top=tuple(lists[Position.AN_TOP]),
        an_bottom=tuple(lists[Position.AN_BOTTOM]),
        depth=tuple(
            DepthGroup(depth, role, tuple(items), tuple(texts))
            for depth, role, items, texts in depth_groups
        ),
        examples=tuple(examples),
        outlets=MappingProxyType({k: tuple(v) for k, v in outlets.items()}),
    )
