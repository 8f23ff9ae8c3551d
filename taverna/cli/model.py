"""`taverna model list | download | pull`: a stronger model, from Hugging Face or into Ollama."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from taverna.cli.main import app
from taverna.services.connections.model_manager import ModelManager

model_app = typer.Typer(
    name="model",
    help="Models for this machine: the recommended ones, downloads, Ollama pulls.",
    no_args_is_help=True,
)
app.add_typer(model_app, name="model")

DataOption = Annotated[
    Path | None,
    typer.Option(
        "--data", help="Data folder (default: $TAVERNA_DATA or the user's data directory)."
    ),
]


@contextmanager
def model_manager(data: Path | None) -> Iterator[ModelManager]:
    """The model manager of the data folder."""
    from taverna.services.connections.model_jobs import model_jobs
    from taverna.services.house.data import resolve_data_dir
    from taverna.services.house.workspace import open_workspace

    workspace = open_workspace(resolve_data_dir(data), background_backups=False)
    try:
        yield ModelManager(workspace.connections, model_jobs())
    finally:
        workspace.close()


def _size(count: int) -> str:
    return f"{count / (1 << 30):.1f} GB" if count >= 1 << 30 else f"{count / (1 << 20):.0f} MB"


@model_app.command("list")
def list_models(data: DataOption = None) -> None:
    """The recommended models for this machine (with their licences) and those downloaded."""
    with model_manager(data) as models:
        found = models.overview()
    machine = found["machine"]
    place = "a GPU" if machine["gpu"] else "the CPU"
    typer.echo(
        f"This machine: {_size(machine['memory'])} of memory, {machine['cores']} cores; "
        f"llama.cpp runs models on {place}."
    )
    for item in found["recommended"]:
        mark = "*" if item["suggested"] else (" " if item["fits"] else "-")
        typer.echo(
            f"{mark} {item['name']} ({_size(item['size'])}, {item['licence']}): "
            f"{item['repo']} {item['file']}"
        )
    typer.echo(
        "* suggested for this machine; - too big for its memory. "
        "Download one: taverna model download REPO FILE"
    )
    for name in found["downloaded"]:
        typer.echo(f"downloaded: {name}")


@model_app.command("download")
def download(
    repo: Annotated[str, typer.Argument(help="the repository on the hub, owner/name")],
    file: Annotated[str, typer.Argument(help="the .gguf file in it")],
    revision: Annotated[str, typer.Option(help="branch, tag or commit")] = "main",
    connection: Annotated[
        str, typer.Option(help="the new connection's name (default: the file's)")
    ] = "",
    default: Annotated[bool, typer.Option("--default", help="make it the default")] = False,
    data: DataOption = None,
) -> None:
    """Download a GGUF model from Hugging Face ($HF_ENDPOINT, its cache), check its
    checksum and make it a local connection. An interrupted download resumes."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from taverna.services.connections.hub_download import HubFile

    with (
        model_manager(data) as models,
        Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
        ) as bar,
    ):
        task = bar.add_task(file.rsplit("/", 1)[-1], total=None)

        def progress(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        made = models.download(
            HubFile(repo, file, revision), connection=connection, default=default, progress=progress
        )
    typer.echo(
        f"{made['model']}: {_size(made['size'])}, {made['checksum']} checked; "
        f"connection {made['connection']!r} runs it (taverna chat --connection "
        f"{made['connection']!r})"
    )


@model_app.command("pull")
def pull(
    model: Annotated[str, typer.Argument(help="the model, as Ollama names it (qwen2.5:1.5b)")],
    connection: Annotated[str, typer.Option(help="the Ollama connection")] = "Ollama",
    data: DataOption = None,
) -> None:
    """Pull a model into Ollama through an Ollama connection, with its progress."""
    from rich.progress import BarColumn, DownloadColumn, Progress

    with (
        model_manager(data) as models,
        Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn()) as bar,
    ):
        task = bar.add_task(model, total=None)

        def progress(done: int, total: int | None, status: str) -> None:
            bar.update(task, completed=done, total=total, description=status or model)

        made = models.pull(connection, model, progress=progress)
    typer.echo(f"{made['model']}: {made['status']} (connection {made['connection']!r})")
