"""`taverna connection add | list | test | remove`: model API connections; keys never printed."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from taverna.cli.main import app
from taverna.errors import TavernaError
from taverna.services.connections.service import ConnectionService

connection_app = typer.Typer(
    name="connection",
    help="Model API connections (keys are kept apart and never printed).",
    no_args_is_help=True,
)
app.add_typer(connection_app, name="connection")

DataOption = Annotated[
    Path | None,
    typer.Option(
        "--data", help="Data folder (default: $TAVERNA_DATA or the user's data directory)."
    ),
]
ChosenConnection = Annotated[
    str | None, typer.Argument(help="the connection (default: the default one)")
]


@contextmanager
def connection_service(data: Path | None) -> Iterator[ConnectionService]:
    """The connection service of the data folder."""
    from taverna.services.house.data import resolve_data_dir
    from taverna.services.house.workspace import open_workspace

    workspace = open_workspace(resolve_data_dir(data), background_backups=False)
    try:
        yield workspace.connections
    finally:
        workspace.close()


# n_ctx, threads, max_tokens: a local model's context size, CPU threads (0: half the cores)
# and longest reply; n_gpu_layers: its layers on the GPU (-1: all; unset: all where llama.cpp
# sees one); prompt_layout: `sillytavern` or `cache` (the prompt's layout, see
# taverna.engine.assembly.layouts); cache_system_prompt, caching_at_depth: Claude's prompt
# cache breakpoints
KNOWN_OPTIONS = {
    "use_system_prompt": bool,
    "stream": bool,
    "prefix": bool,
    "cache_system_prompt": bool,
    "caching_at_depth": int,
    "n_ctx": int,
    "threads": int,
    "max_tokens": int,
    "prompt_layout": str,
    "n_gpu_layers": int,
}


def parse_options(pairs: list[str]) -> dict[str, object]:
    """`KEY=VALUE` pairs; values are JSON (`true`, `3`, `"x"`) or else plain text."""
    options: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or key not in KNOWN_OPTIONS:
            known = ", ".join(sorted(KNOWN_OPTIONS))
            raise TavernaError(f"expected KEY=VALUE with KEY one of {known}", field=f"--set {pair}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        if not isinstance(value, KNOWN_OPTIONS[key]):
            raise TavernaError(f"{key} takes {KNOWN_OPTIONS[key].__name__}", field=f"--set {pair}")
        options[key] = value
    return options


@connection_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="a name of your choice, e.g. 'local' or 'claude'")],
    api: Annotated[
        str,
        typer.Option(
            "--api",
            help=(
                "an API (openai | openai-compatible | mistral | anthropic | google | koboldcpp | "
                "llamacpp | openai-text | local) or a source by name, which brings its URL "
                "and rules: openrouter, deepseek, xai, groq, perplexity, cohere, ai21, 01ai, "
                "custom; text completion: ooba, ollama, vllm, aphrodite, tabby, togetherai, "
                "mancer, infermaticai, dreamgen, openrouter-text, featherless, huggingface"
            ),
        ),
    ],
    url: Annotated[str, typer.Option("--url", help="base URL (default: the API's own)")] = "",
    model: Annotated[
        str, typer.Option("--model", help="model name (for --api local: a .gguf file)")
    ] = "",
    key_env: Annotated[
        str | None, typer.Option("--key-env", help="read the key from this environment variable")
    ] = None,
    key_stdin: Annotated[
        bool, typer.Option("--key-stdin", help="read the key from standard input and store it")
    ] = False,
    default: Annotated[bool, typer.Option("--default", help="use it when none is named")] = False,
    post_processing: Annotated[
        str,
        typer.Option(
            "--post-processing",
            help="none | merge | semi | strict | single | claude (custom endpoints)",
        ),
    ] = "none",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help=(
                "a request option KEY=VALUE (JSON value), e.g. use_system_prompt=true, "
                "stream=false, prefix=true (Mistral continues a reply in place), "
                "prompt_layout=cache (volatile parts after the chat, for a model's cache), "
                "cache_system_prompt=true and caching_at_depth=0 (Claude's prompt cache)"
            ),
        ),
    ] = None,
    data: DataOption = None,
) -> None:
    """Add (or replace) a named connection."""
    if key_env and key_stdin:
        raise TavernaError("give --key-env or --key-stdin, not both")
    key = sys.stdin.readline().strip() if key_stdin else None
    if key_stdin and not key:
        raise TavernaError("no key on standard input", field="--key-stdin")
    with connection_service(data) as service:
        connection = service.add(
            name,
            api,
            url=url,
            model=model,
            key=key,
            key_env=key_env,
            default=default,
            post_processing=post_processing,
            options=parse_options(option or []),
        )
        public = connection.public(service.key_hint(connection))
    typer.echo(
        f"connection {public['name']!r}: {public['api']} {public['model'] or ''} key {public['key']}".rstrip()
    )


@connection_app.command("list")
def list_(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    data: DataOption = None,
) -> None:
    """List connections (keys masked)."""
    with connection_service(data) as service:
        rows = [c.public(service.key_hint(c)) for c in service.list()]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        typer.echo("no connections; add one with `taverna connection add`")
        return
    for row in rows:
        mark = "*" if row["default"] else " "
        where = row["url"] or "(default URL)"
        extra = (
            f" post-processing {row['post_processing']}" if row["post_processing"] != "none" else ""
        )
        extra += "".join(f" {k}={json.dumps(v)}" for k, v in row["options"].items())
        typer.echo(
            f"{mark} {row['name']}: {row['api']} {row['model']} at {where}, key {row['key']}{extra}"
        )


@connection_app.command("test")
def test(
    name: ChosenConnection = None,
    data: DataOption = None,
) -> None:
    """Send a tiny request and say whether the model answered."""
    with connection_service(data) as service:
        result = asyncio.run(service.test(name))
    if result.ok:
        typer.echo(f"ok in {result.seconds:.2f} s: {result.message}")
    else:
        typer.echo(f"failed after {result.seconds:.2f} s: {result.message}", err=True)
        raise typer.Exit(1)


@connection_app.command("models")
def models(
    name: ChosenConnection = None,
    data: DataOption = None,
) -> None:
    """List the models the connection's API offers."""
    with connection_service(data) as service:
        names = asyncio.run(service.list_models(name))
    typer.echo("\n".join(names) if names else "the API listed no models")


@connection_app.command("remove")
def remove(name: Annotated[str, typer.Argument()], data: DataOption = None) -> None:
    """Remove a connection and its stored key."""
    with connection_service(data) as service:
        service.remove(name)
    typer.echo(f"removed {name!r}")


@connection_app.command("default")
def set_default(name: Annotated[str, typer.Argument()], data: DataOption = None) -> None:
    """Make a connection the default."""
    with connection_service(data) as service:
        service.set_default(name)
    typer.echo(f"{name!r} is the default connection")
