"""The STscript commands (what /help lists), for the chat input's completion."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from taverna.services.scripts.commands import script_commands

router = APIRouter(prefix="/api/script-commands", tags=["scripts"])


class ScriptCommandOut(BaseModel):
    """One command: `named` are its named arguments (`name=`), `usage` its /help line."""

    name: str
    aliases: list[str]
    named: list[str]
    usage: str
    help: str


@router.get("", response_model=list[ScriptCommandOut])
def list_script_commands() -> list[ScriptCommandOut]:
    """Every command by name, with its aliases, named arguments and one-line help."""
    return [
        ScriptCommandOut(
            name=c.name, aliases=list(c.aliases), named=list(c.named), usage=c.usage, help=c.help
        )
        for c in script_commands()
    ]
