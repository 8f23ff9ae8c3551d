"""A long chat for the browser tests and the benchmarks: 20,000 messages on one path,
imported in bulk; and the ways a person goes to its ends and its middle in the page
(Home / End, the rail's buttons, a drag of the rail's thumb), each timed until the message
is in sight."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from taverna.model.chat import CharacterRef, Node, NodeRole, new_id
from taverna.store import NewChat
from taverna.store.sql import open_store

COUNT = 20_000

# Whether the message at path position `n` is in sight in the list (at least partly).
IN_SIGHT = """(n) => {
  const list = document.querySelector('ol.messages');
  const item = list && list.querySelector(`li.message[data-index="${n}"]`);
  if (!item) return false;
  const a = item.getBoundingClientRect();
  const b = list.getBoundingClientRect();
  return a.bottom > b.top + 2 && a.top < b.bottom - 2;
}"""
# The positions of the messages in sight.
SHOWN = """() => {
  const list = document.querySelector('ol.messages');
  const b = list.getBoundingClientRect();
  return [...list.querySelectorAll('li.message')].filter((el) => {
    const a = el.getBoundingClientRect();
    return a.bottom > b.top + 2 && a.top < b.bottom - 2;
  }).map((el) => Number(el.dataset.index));
}"""


def build_long_chat(data: Path, count: int = COUNT) -> tuple[str, list[str]]:
    """`count` messages on one path, the last reply with three candidates (bulk import):
    the chat's id and the path's message ids."""
    nodes: list[Node] = []
    path: list[str] = []
    parent: str | None = None
    for i in range(count):
        role = NodeRole.USER if i % 2 == 0 else NodeRole.ASSISTANT
        speaker = "Ann" if role is NodeRole.USER else "Mira"
        if i == count - 1:
            for other in ("First draft of the end.", "Second draft of the end."):
                nodes.append(Node(new_id(), "", parent, role, other, speaker=speaker))
        text = f"Message {i}: *the lamp* burns over the map of <b>Brasswater</b>."
        node = Node(new_id(), "", parent, role, text, speaker=speaker)
        nodes.append(node)
        path.append(node.id)
        parent = node.id
    store = open_store(data)
    try:
        chat = store.import_tree(
            NewChat(title="The long voyage", characters=(CharacterRef("Mira", None),)),
            nodes,
            active_leaf_id=parent,
        )
    finally:
        store.close()
    return chat.id, path


def _until(page: Any, check: str, arg: object, timeout_ms: float) -> float:
    page.wait_for_function(check, arg=arg, timeout=timeout_ms, polling="raf")
    return time.perf_counter()


def take_rail(page: Any, share: float) -> None:
    """Take the rail's thumb and move it to `share` (0 the top, 1 the bottom) of the track,
    not letting go yet."""
    thumb = page.locator(".rail-thumb").bounding_box()
    track = page.locator(".rail-track").bounding_box()
    assert thumb and track
    page.mouse.move(thumb["x"] + thumb["width"] / 2, thumb["y"] + thumb["height"] / 2)
    page.mouse.down()
    y = track["y"] + min(track["height"] - 1, max(0.0, share * track["height"]))
    page.mouse.move(track["x"] + track["width"] / 2, (thumb["y"] + y) / 2, steps=2)
    page.mouse.move(track["x"] + track["width"] / 2, y, steps=2)


def drag_rail(page: Any, share: float) -> None:
    """Drag the rail's thumb to `share` of the track and drop it there."""
    take_rail(page, share)
    page.mouse.up()


def time_jumps(page: Any, count: int = COUNT, timeout_ms: float = 15_000) -> dict[str, float]:
    """With the chat open at its end: each way to its first and last message and to its
    middle, the seconds until that message is in sight. The rail's buttons are found by
    their ids, Home and End are pressed with the focus off any field."""
    took: dict[str, float] = {}
    last = count - 1
    page.evaluate("() => document.activeElement?.blur()")

    def timed(name: str, act: Any, position: int) -> None:
        started = time.perf_counter()
        act()
        took[name] = _until(page, IN_SIGHT, position, timeout_ms) - started

    timed("home_s", lambda: page.keyboard.press("Home"), 0)
    timed("end_s", lambda: page.keyboard.press("End"), last)
    timed("first_button_s", lambda: page.locator("#to-first").click(), 0)
    timed("last_button_s", lambda: page.locator("#to-last").click(), last)
    # A drag is timed from the drop.
    take_rail(page, 0.0)
    timed("drag_top_s", page.mouse.up, 0)
    take_rail(page, 1.0)
    timed("drag_bottom_s", page.mouse.up, last)
    middle = count // 2
    take_rail(page, 0.5)
    started = time.perf_counter()
    page.mouse.up()
    # The middle as a drag can aim at it: within half a percent of the chat.
    near = (middle - count // 200, middle + count // 200)
    page.wait_for_function(
        f"([lo, hi]) => ({SHOWN})().some((n) => n >= lo && n <= hi)",
        arg=list(near),
        timeout=timeout_ms,
        polling="raf",
    )
    took["drag_middle_s"] = time.perf_counter() - started
    return took
