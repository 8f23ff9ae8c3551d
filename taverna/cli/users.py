"""`taverna user add | list | password | quota`: the accounts of a server run with
`taverna serve --accounts` (the first admin is made here)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from taverna.cli.main import app
from taverna.services.house.data import opened_accounts as account_service

user_app = typer.Typer(
    name="user", help="Accounts for `taverna serve --accounts`.", no_args_is_help=True
)
app.add_typer(user_app, name="user")

DataOption = Annotated[
    Path | None,
    typer.Option(
        "--data", help="Data folder (default: $TAVERNA_DATA or the user's data directory)."
    ),
]


def _password() -> str:
    """The password: the first line of standard input when it is not a terminal, else
    asked for twice without echo."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    password: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return password


@user_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="the account's name (what it logs in with)")],
    admin: Annotated[bool, typer.Option("--admin", help="may manage the other accounts")] = False,
    empty: Annotated[
        bool, typer.Option("--empty", help="start its library empty (no presets, no samples)")
    ] = False,
    data: DataOption = None,
) -> None:
    """Create an account; the password is asked for (or read from standard input). Its
    library starts with the product's presets and samples, as a new install does."""
    from taverna.services.house.workspace import create_account

    account, added = create_account(data, name, _password(), admin=admin, empty=empty)
    typer.echo(f"added {'admin ' if account.admin else ''}account {account.name}")
    if added:
        typer.echo(f"its library starts with {', '.join(added)}")


@user_app.command("list")
def list_users(data: DataOption = None) -> None:
    """The accounts, with their quotas."""
    with account_service(data) as accounts:
        for a in accounts.users():
            storage = "no limit" if a.quota_bytes is None else f"{a.quota_bytes} bytes"
            hourly = "no limit" if a.quota_generations is None else f"{a.quota_generations}/hour"
            role = "admin" if a.admin else "user"
            typer.echo(f"{a.name}\t{role}\tstorage: {storage}\tgenerations: {hourly}")


@user_app.command("password")
def password(
    name: Annotated[str, typer.Argument(help="the account")], data: DataOption = None
) -> None:
    """Set a new password (asked for, or read from standard input); its sessions end."""
    with account_service(data) as accounts:
        accounts.set_password(name, _password())
    typer.echo(f"new password set for {name}")


@user_app.command("quota")
def quota(
    name: Annotated[str, typer.Argument(help="the account")],
    storage_bytes: Annotated[
        int | None, typer.Option("--storage-bytes", help="library size limit (omit: none)")
    ] = None,
    generations_per_hour: Annotated[
        int | None,
        typer.Option(
            "--generations-per-hour", help="requests to models an hour, each counted (omit: none)"
        ),
    ] = None,
    data: DataOption = None,
) -> None:
    """Set an account's limits."""
    with account_service(data) as accounts:
        accounts.set_quota(
            name, storage_bytes=storage_bytes, generations_per_hour=generations_per_hour
        )
    typer.echo(f"quotas set for {name}")
