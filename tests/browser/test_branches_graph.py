"""Checkpoints and branches in the page: opening a checkpoint leaves every branch where it
was and Undo takes any move back; at a fork in the middle the page says what follows on the
other candidate and goes back there; the tree view draws a 2,500-message chat's forks as a
graph of a few rows and jumps by click. Desktop in English, phone in Chinese."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from taverna.model.chat import CharacterRef, Node, NodeRole, new_id
from taverna.store import NewChat
from taverna.store.sql import open_store
from tests.browser.conftest import TavernaServer, shot
from tests.support.browser import catalog, new_page, say
from tests.support.served import serving

pytestmark = pytest.mark.browser

CASES = [("desktop", "en", 1280, 800), ("phone", "zh-CN", 375, 812)]


def line(nodes: list[Node], parent: str | None, count: int, start: int, tag: str) -> str | None:
    for i in range(count):
        role = NodeRole.USER if (start + i) % 2 == 0 else NodeRole.ASSISTANT
        speaker = "Ann" if role is NodeRole.USER else "Mira"
        node = Node(new_id(), "", parent, role, f"{tag} message {start + i}.", speaker=speaker)
        nodes.append(node)
        parent = node.id
    return parent


def build(data: Path) -> dict[str, str]:
    """Two chats per language: seven messages on one path, and 2,500 messages with a fork
    at #1250 whose older candidate goes on for ten messages."""
    store = open_store(data)
    made: dict[str, str] = {}
    try:
        for _, lang, _, _ in CASES:
            nodes: list[Node] = []
            end = line(nodes, None, 7, 0, "Seven")
            chat = store.import_tree(
                NewChat(title=f"Seven {lang}", characters=(CharacterRef("Mira", None),)),
                nodes,
                active_leaf_id=end,
            )
            made[f"seven-{lang}"] = chat.id
            nodes = []
            trunk = line(nodes, None, 1250, 0, "Trunk")
            line(nodes, trunk, 10, 1250, "Side")
            end = line(nodes, trunk, 1250, 1250, "Main")
            chat = store.import_tree(
                NewChat(title=f"Long {lang}", characters=(CharacterRef("Mira", None),)),
                nodes,
                active_leaf_id=end,
            )
            made[f"long-{lang}"] = chat.id
    finally:
        store.close()
    return made


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[TavernaServer, dict[str, str]]]:
    data = tmp_path_factory.mktemp("graph") / "data"
    made = build(data)
    with serving(data) as running:
        yield running, made


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_a_checkpoint_leaves_the_branch_where_it_was(  # type: ignore[no-untyped-def]
    chromium,
    server: tuple[TavernaServer, dict[str, str]],
    size: str,
    lang: str,
    width: int,
    height: int,
) -> None:
    taverna, made = server
    chat_id = made[f"seven-{lang}"]
    words = catalog(lang)
    context, page, errors = new_page(chromium, {"width": width, "height": height}, lang)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    items = page.locator("ol.messages > li.message")
    expect(items).to_have_count(7)
    ids = [m["id"] for m in taverna.api("GET", f"/chats/{chat_id}").json()["messages"]]

    page.once("dialog", lambda d: d.accept("before"))
    items.nth(3).get_by_role("button", name=words["chat.checkpoint"], exact=True).click()
    expect(page.locator(".toast").last).to_contain_text("before")
    page.get_by_role("button", name=words["tree.open"]).click()
    tree = page.locator("#tree")
    expect(tree.locator(".graph-row")).to_have_count(1)
    expect(tree.locator(".graph-row .badge.checkpoint")).to_have_text("⚑ before")
    tree.get_by_role("button", name=say(words, "tree.checkpoint_open", name="before")).click()
    expect(tree).to_have_count(0)
    expect(items).to_have_count(4)
    expect(page.locator(".toast").last).to_contain_text(
        say(words, "tree.checkpoint_opened", name="before")
    )
    picker = page.locator(".branch-select")
    expect(picker).to_be_visible()
    expect(picker.locator("option:checked")).to_have_text(words["chat.no_branch"])
    # The first branch, "main", is named in the page's language.
    main_option = f"{words['names.main_branch']} (7)"
    expect(picker.locator("option")).to_have_text([words["chat.no_branch"], main_option])
    [main] = taverna.api("GET", f"/chats/{chat_id}/branches").json()
    assert (main["head_id"], main["length"], main["active"]) == (ids[-1], 7, False)
    shot(page, f"checkpoint-open-{size}")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width

    # Undo takes the move back; Redo makes it again; picking "main" brings its path back.
    page.get_by_role("button", name=words["chat.undo"]).click()
    expect(items).to_have_count(7)
    expect(picker).to_be_hidden()
    page.get_by_role("button", name=words["chat.redo"]).click()
    expect(items).to_have_count(4)
    picker.select_option(label=main_option)
    expect(items).to_have_count(7)
    expect(items.last).to_contain_text("Seven message 6.")

    # Leaving the chat closes its drawers.
    page.get_by_role("button", name=words["tree.open"]).click()
    expect(tree).to_be_visible()
    page.goto(f"{taverna.url}/#/chats")
    expect(tree).to_have_count(0)
    assert errors == []
    context.close()


@pytest.mark.parametrize(("size", "lang", "width", "height"), CASES)
def test_a_fork_in_the_middle_of_a_long_chat(  # type: ignore[no-untyped-def]
    chromium,
    server: tuple[TavernaServer, dict[str, str]],
    size: str,
    lang: str,
    width: int,
    height: int,
) -> None:
    taverna, made = server
    chat_id = made[f"long-{lang}"]
    words = catalog(lang)
    context, page, errors = new_page(chromium, {"width": width, "height": height}, lang)
    page.goto(f"{taverna.url}/#/chat/{chat_id}")
    items = page.locator("ol.messages > li.message")
    expect(items.last.locator(".index")).to_have_text("#2499")

    # The tree: three rows (the trunk, the side way, the way on), not 2,510.
    page.get_by_role("button", name=words["tree.open"]).click()
    tree = page.locator("#tree")
    rows = tree.locator(".graph-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(2)).to_have_class("graph-row on-path here")
    expect(rows.nth(2).locator(".badge.here")).to_have_text(say(words, "tree.here", n=2499))
    expect(tree.locator(".graph-lines path")).to_have_count(2)
    assert tree.locator(".graph-lines").bounding_box()["width"] < 60  # type: ignore[index]
    shot(page, f"tree-graph-{size}")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width

    # Jump to the side way by a click: the path now ends at #1259.
    rows.nth(1).get_by_role(
        "button", name=say(words, "tree.go_run", range="#1250–#1259", n=10)
    ).click()
    expect(tree).to_have_count(0)
    expect(items.last.locator(".index")).to_have_text("#1259")
    fork = page.locator("li.message[data-index='1250']")
    note = fork.locator(".fork-note")
    expect(note).to_contain_text(say(words, "chat.fork_follow", n=1249, k=2))
    fork.scroll_into_view_if_needed()
    shot(page, f"fork-note-{size}")

    # Back to the other candidate, then Undo steps through both moves.
    note.get_by_role("button", name=say(words, "chat.fork_go", k=2)).click()
    expect(items.last.locator(".index")).to_have_text("#2499")
    page.get_by_role("button", name=words["chat.undo"]).click()
    expect(items.last.locator(".index")).to_have_text("#1259")
    page.get_by_role("button", name=words["chat.undo"]).click()
    expect(items.last.locator(".index")).to_have_text("#2499")
    assert errors == []
    context.close()
