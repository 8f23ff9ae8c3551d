"""`taverna import`, `taverna chats ...` and `taverna backup ...`: the library and the chats
of a data folder from the command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from taverna.cli.main import app
from taverna.cli.notices import echo_warnings, warnings_json
from taverna.errors import NotFound, TavernaError
from taverna.model.chat import ChatListing, ChatTree, Node
from taverna.services.chats import reads as chat_reads
from taverna.services.house.data import resolve_data_dir
from taverna.services.interchange.library_import import LibraryImport
from taverna.services.interchange.report import ImportReport, Progress

if TYPE_CHECKING:
    from taverna.services.house.workspace import Workspace

chats_app = typer.Typer(help="List, show and export chats.", no_args_is_help=True)
backup_app = typer.Typer(help="List and restore chat backups.", no_args_is_help=True)
app.add_typer(chats_app, name="chats")
app.add_typer(backup_app, name="backup")

DATA_HELP = "Data folder (default: $TAVERNA_DATA or the user's data directory)."
DataOption = typer.Option(None, "--data", help=DATA_HELP)


@contextmanager
def _opened(data: Path | None) -> Iterator[Workspace]:
    """The data folder's services; pending backups are written as the command ends."""
    # Imported here: the services behind a turn load only for the command that runs.
    from taverna.services.house.workspace import open_workspace

    folder = open_workspace(resolve_data_dir(data), background_backups=False)
    try:
        yield folder
    finally:
        folder.close()


def _emit_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _short(text: str, width: int = 72) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _chat_id(folder: Workspace, given: str) -> str:
    return chat_reads.chat_id(folder.chats, given)


# ------------------------------------------------------------------- import


def _report_json(report: ImportReport) -> dict[str, Any]:
    return {
        "stored": [
            {
                "kind": s.kind,
                "id": s.id,
                "name": s.name,
                "replaced": s.replaced,
                "file": s.file,
                "warnings": warnings_json(s.warnings),
            }
            for s in report.stored
        ],
        "chats": [
            {
                "id": c.chat.id,
                "title": c.chat.title,
                "messages": c.messages,
                "nodes": c.nodes,
                "branches": list(c.branches),
                "checkpoints": list(c.checkpoints),
                "files": list(c.files),
                "already_imported": c.already_imported,
                "warnings": warnings_json(c.warnings),
            }
            for c in report.chats
        ],
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "warnings": warnings_json(report.warnings),
    }


@app.command("import")
def import_files(
    files: list[Path] = typer.Argument(
        ..., help="Cards, lorebooks, presets, chats (with their branch files) or a data folder."
    ),
    data: Path | None = DataOption,
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    again: bool = typer.Option(
        False, "--again", help="Import chats again even if these files were imported before."
    ),
    accounts: bool = typer.Option(
        False,
        "--accounts",
        help="A SillyTavern install (or its data/ folder): each user's folder data/<user>/ "
        "goes into the account of the same name.",
    ),
    mapping: list[str] = typer.Option(
        [],
        "--as",
        metavar="HANDLE=ACCOUNT",
        help="With --accounts: the user folder HANDLE goes into ACCOUNT (repeatable).",
    ),
) -> None:
    """Import SillyTavern files into the library and chats; prints what was stored, with ids.

    One file that cannot be read is an error; among several, it is reported and skipped.
    """
    for path in files:
        if not path.exists():
            raise NotFound("no such file or folder", file=str(path))
    if accounts or mapping:
        _import_accounts(files, data, mapping, as_json=as_json)
        return
    with _opened(data) as folder:
        library = folder.library()

        def progress(step: Progress) -> None:
            if not as_json and step.current and step.total >= 20 and step.done % 20 == 0:
                typer.echo(f"  … {step.done}/{step.total} {step.current}", err=True)

        report = LibraryImport(library, folder.connections_of("")).import_paths(
            files, progress=progress, strict=len(files) == 1, again=again
        )
    if as_json:
        _emit_json(_report_json(report))
        return
    for item in report.stored:
        verb = "replaced" if item.replaced else "stored"
        typer.echo(f"{verb} {item.kind} {item.name!r}  id {item.id}")
    for chat in report.chats:
        if chat.already_imported:
            typer.echo(f"already imported chat {chat.chat.title!r}  id {chat.chat.id}")
            continue
        extra = []
        if chat.branches:
            extra.append(f"{len(chat.branches)} branches")
        if chat.checkpoints:
            extra.append(f"{len(chat.checkpoints)} checkpoints")
        tail = f" ({', '.join(extra)})" if extra else ""
        typer.echo(
            f"stored chat {chat.chat.title!r}  id {chat.chat.id}  {chat.messages} messages{tail}"
        )
    echo_warnings(report.warnings)
    for skipped in report.skipped:
        typer.echo(f"skipped {skipped.path}: {skipped.reason}", err=True)
    if not report.stored and not report.chats:
        raise TavernaError("nothing was imported")


def _import_accounts(
    files: list[Path], data: Path | None, pairs: list[str], *, as_json: bool
) -> None:
    """`taverna import ROOT --accounts`: each SillyTavern user folder into its account."""
    from taverna.services.accounts.account_import import parse_mapping

    if len(files) != 1:
        raise TavernaError("--accounts takes one SillyTavern folder", field="--accounts")
    mapping = parse_mapping(pairs)
    with _opened(data) as folder:
        done = folder.import_accounts(files[0], accounts=mapping)
    if as_json:
        _emit_json(
            [
                {
                    "handle": item.handle,
                    "folder": str(item.folder),
                    "account": item.account,
                    "skipped": item.skipped or None,
                    "report": _report_json(item.report) if item.report else None,
                }
                for item in done
            ]
        )
    else:
        for item in done:
            if item.report is None:
                typer.echo(f"skipped user folder {item.handle}: {item.skipped}", err=True)
                continue
            report = item.report
            typer.echo(
                f"user folder {item.handle} -> account {item.account}: "
                f"{len(report.stored)} items, {len(report.chats)} chats"
            )
            echo_warnings(report.warnings)
            for skipped in report.skipped:
                typer.echo(f"  skipped {skipped.path}: {skipped.reason}", err=True)
    if not any(item.report for item in done):
        raise TavernaError("no user folder has an account of its name: nothing was imported")


# ------------------------------------------------------------------- chats


def _listing_json(listing: ChatListing) -> dict[str, Any]:
    chat = listing.chat
    return {
        "id": chat.id,
        "title": chat.title,
        "characters": [c.name for c in chat.characters],
        "messages": listing.path_length,
        "branches": listing.branch_count,
        "checkpoints": listing.checkpoint_count,
        "nodes": listing.node_count,
        "updated": chat.updated.isoformat() if chat.updated else None,
        "revision": chat.revision,
    }


@chats_app.command("list")
def list_chats(
    data: Path | None = DataOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Every chat: id, title, characters, messages on the active path, branches, checkpoints."""
    with _opened(data) as folder:
        listings = chat_reads.listings(folder.chats)
    rows = [_listing_json(item) for item in listings]
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        typer.echo("no chats yet (import some with `taverna import FILE`)")
        return
    for row in rows:
        who = ", ".join(row["characters"]) or "-"
        typer.echo(
            f"{row['id']}  {row['title']}  [{who}]  {row['messages']} messages, "
            f"{row['branches']} branches, {row['checkpoints']} checkpoints"
        )


@chats_app.command("search")
def search_chats(
    query: str = typer.Argument(..., metavar="QUERY", help="Words to find (each anywhere)."),
    chat: str | None = typer.Option(None, "--chat", help="Search this chat only (id or prefix)."),
    limit: int = typer.Option(50, "--limit", min=1, max=200, help="At most this many."),
    data: Path | None = DataOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Messages holding every word of QUERY (case and accents aside), newest first: chat,
    message id, speaker, whether on the active path (* when not), and a snippet."""
    with _opened(data) as folder:
        chat_id = _chat_id(folder, chat) if chat is not None else None
        found = folder.search().search(query, chat_id=chat_id, limit=limit)
    if as_json:
        _emit_json(
            [
                {
                    "chat_id": r.chat_id,
                    "chat_title": r.chat_title,
                    "node_id": r.node_id,
                    "role": r.role,
                    "speaker": r.speaker,
                    "position": r.position,
                    "on_path": r.on_path,
                    "snippet": "".join(text for text, _ in r.snippet),
                    "matches": [text for text, match in r.snippet if match],
                }
                for r in found
            ]
        )
        return
    if not found:
        typer.echo("nothing found")
        return
    for r in found:
        text = "".join(f"[{piece}]" if match else piece for piece, match in r.snippet)
        mark = " " if r.on_path else "*"
        who = r.speaker or r.role
        typer.echo(f"{r.chat_id}  {r.chat_title}  #{r.position} {r.node_id}{mark} {who}: {text}")
    if any(not r.on_path for r in found):
        typer.echo("* on another branch, not on the chat's active path")


def _node_json(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "parent_id": node.parent_id,
        "role": node.role.value,
        "speaker": node.speaker,
        "content": node.content,
        "hidden": node.hidden,
        "deleted": node.deleted,
        "created": node.created.isoformat() if node.created else None,
    }


@chats_app.command("show")
def show_chat(
    chat_id: str = typer.Argument(..., metavar="ID", help="Chat id (or a unique prefix)."),
    tree: bool = typer.Option(False, "--tree", help="The whole tree, not just the active path."),
    data: Path | None = DataOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The active path of a chat (`‹k/n›` where a message has candidates), or its whole tree."""
    with _opened(data) as folder:
        chat_id = _chat_id(folder, chat_id)
        if tree:
            whole = chat_reads.tree(folder.chats, chat_id)
            if as_json:
                _emit_json(_tree_json(whole))
            else:
                for line in tree_lines(whole):
                    typer.echo(line)
            return
        path = folder.chats.active_path(chat_id)
    if as_json:
        _emit_json(
            {
                "chat": {"id": path.chat.id, "title": path.chat.title},
                "messages": [
                    {
                        **_node_json(e.node),
                        "position": e.position,
                        "candidate": [e.candidate_index + 1, e.candidate_count],
                    }
                    for e in path.entries
                ],
            }
        )
        return
    typer.echo(f"{path.chat.title}  ({path.chat.id}, revision {path.chat.revision})")
    for entry in path.entries:
        node = entry.node
        fork = (
            f" ‹{entry.candidate_index + 1}/{entry.candidate_count}›"
            if entry.candidate_count > 1
            else ""
        )
        tags = " (hidden)" if node.hidden else ""
        typer.echo(f"[{entry.position}]{fork} {node.speaker or node.role.value}{tags}:")
        for line in node.content.splitlines() or [""]:
            typer.echo(f"    {line}")


def _tree_json(tree: ChatTree) -> dict[str, Any]:
    return {
        "chat": {
            "id": tree.chat.id,
            "title": tree.chat.title,
            "active_leaf_id": tree.chat.active_leaf_id,
        },
        "nodes": [_node_json(n) for n in tree.nodes],
        "branches": [{"id": b.id, "name": b.name, "head_id": b.head_id} for b in tree.branches],
        "checkpoints": [
            {"id": c.id, "name": c.name, "node_id": c.node_id} for c in tree.checkpoints
        ],
    }


def tree_lines(tree: ChatTree) -> list[str]:
    """The tree as text: a fork indents its candidates, each marked `‹k/n›`.

    A run of single children stays at one indentation, so a long chat does not drift right;
    `*` marks the active path, `⎇` a branch head and `⚑` a checkpoint.
    """
    kids = tree.children()
    by_id = {n.id: n for n in tree.nodes}
    active: set[str] = set()
    current = by_id.get(tree.chat.active_leaf_id or "")
    while current is not None:
        active.add(current.id)
        current = by_id.get(current.parent_id or "")
    marks: dict[str, list[str]] = {}
    for branch in tree.branches:
        if branch.head_id:
            marks.setdefault(branch.head_id, []).append(f"⎇ {branch.name}")
    for checkpoint in tree.checkpoints:
        marks.setdefault(checkpoint.node_id, []).append(f"⚑ {checkpoint.name}")
    lines = [f"{tree.chat.title}  ({tree.chat.id})"]
    # (node, indent, position on its path, fork label)
    stack: list[tuple[Node, int, int, str]] = []

    def push_children(parent_id: str | None, indent: int, position: int) -> None:
        children = kids.get(parent_id, [])
        if len(children) == 1:
            stack.append((children[0], indent, position, ""))
            return
        for index in range(len(children) - 1, -1, -1):
            label = f"‹{index + 1}/{len(children)}› "
            stack.append((children[index], indent + 1, position, label))

    push_children(None, 0, 0)
    while stack:
        node, indent, position, label = stack.pop()
        marker = "*" if node.id in active else " "
        tags = []
        if node.hidden:
            tags.append("hidden")
        if node.deleted:
            tags.append("deleted")
        tag_text = f" ({', '.join(tags)})" if tags else ""
        mark_text = "  " + "  ".join(marks[node.id]) if node.id in marks else ""
        who = node.speaker or node.role.value
        lines.append(
            f"{'  ' * indent}{marker} {label}[{position}] {who}{tag_text}: "
            f"{_short(node.content)}{mark_text}"
        )
        push_children(node.id, indent, position + 1)
    return lines


@chats_app.command("export")
def export_chat(
    chat_id: str = typer.Argument(..., metavar="ID", help="Chat id (or a unique prefix)."),
    out: Path = typer.Option(..., "--out", help="Folder to write the SillyTavern files into."),
    text: bool = typer.Option(
        False, "--text", help="Also write the active path as plain text (`.txt`)."
    ),
    data: Path | None = DataOption,
) -> None:
    """Write a chat as SillyTavern JSONL: the active path, plus one file per other branch."""
    with _opened(data) as folder:
        chat_id = _chat_id(folder, chat_id)
        service = folder.interchange()
        written = service.export_to(chat_id, out)
        if text:
            written.append(service.export_text_to(chat_id, out))
    for path in written:
        typer.echo(str(path))


# ------------------------------------------------------------------- backups


@backup_app.command("list")
def list_backups(
    chat_id: str | None = typer.Argument(None, metavar="[ID]", help="Only this chat's backups."),
    data: Path | None = DataOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Backups in the data folder, newest first."""
    with _opened(data) as folder:
        chosen = _chat_id(folder, chat_id) if chat_id else None
        backups = folder.backups.backups(chosen)
    rows = [
        {"name": b.name, "created": b.created.isoformat(), "size": b.size, "title": b.title}
        for b in backups
    ]
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        typer.echo("no backups")
    for row in rows:
        typer.echo(f"{row['name']}  {row['size']} bytes")


@backup_app.command("now")
def backup_now(
    chat_id: str = typer.Argument(..., metavar="ID", help="Chat id (or a unique prefix)."),
    data: Path | None = DataOption,
) -> None:
    """Back up a chat now."""
    with _opened(data) as folder:
        chosen = _chat_id(folder, chat_id)
        path = folder.backups.backup(chosen)
    typer.echo(str(path))


@backup_app.command("restore")
def restore_backup(
    name: str = typer.Argument(..., help="Backup file name (or a unique prefix)."),
    title: str | None = typer.Option(None, "--title", help="Title of the restored chat."),
    data: Path | None = DataOption,
) -> None:
    """Bring a backup back as a new chat (the original chat is left alone)."""
    with _opened(data) as folder:
        restored = folder.backups.restore(name, title=title)
    typer.echo(
        f"restored chat {restored.chat.title!r}  id {restored.chat.id}  "
        f"{restored.messages} messages"
    )
