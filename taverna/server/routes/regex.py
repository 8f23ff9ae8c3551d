"""Regex scripts in their three layers: list, save (create, edit, delete, reorder,
enable), allow a preset's or a character's own, import and export SillyTavern's files,
and try scripts on a text with the engine the chat uses."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from fastapi import APIRouter, Depends, File, Query, Request, Response, UploadFile
from pydantic import BaseModel, Field

from taverna.model.regex_script import RegexPlacement
from taverna.server import library_views
from taverna.server.context import AppContext, context, current_user
from taverna.server.openapi import file_responses
from taverna.server.schemas import NAME_MAX, TEXT_MAX, Strict
from taverna.server.uploads import read_limited
from taverna.services.library.regex_library import (
    TURN_REGEX_BUDGET,
    LayerScripts,
    RegexBudget,
    RegexLayer,
    RegexLibrary,
    RegexUse,
    read_script,
    regex_library,
    try_scripts,
)

router = APIRouter(tags=["regex"])
# File uploads: mounted with the upload body limit (see `create_app`).
uploads = APIRouter(tags=["regex"])

SCRIPTS_MAX = 1000
# Scripts one try may run: the page tries the one being edited.
TRY_SCRIPTS_MAX = 100


class LayerOut(BaseModel):
    layer: RegexLayer
    target: str = Field(description="the preset's or the character's id; '' for global")
    target_name: str
    allowed: bool = Field(description="the layer's scripts run (global ones always do)")
    scripts: list[dict[str, Any]] = Field(description="SillyTavern's script objects, in order")


class LayerIn(Strict):
    scripts: list[dict[str, Any]] = Field(max_length=SCRIPTS_MAX)


class AllowIn(Strict):
    allowed: bool


class TryIn(Strict):
    """Scripts to try on a text, as the editor holds them (saved or not)."""

    scripts: list[dict[str, Any]] = Field(max_length=TRY_SCRIPTS_MAX)
    text: str = Field(max_length=TEXT_MAX)
    placement: Literal[1, 2, 3, 5, 6] = Field(
        default=2,
        description="1 user input, 2 AI output, 3 slash commands, 5 world info, 6 reasoning",
    )
    use: Literal["store", "display", "prompt"] = "store"
    depth: int | None = Field(default=None, ge=0, le=1_000_000)
    char: str = Field(default="", max_length=NAME_MAX)
    user: str = Field(default="User", max_length=NAME_MAX)


class SkippedOut(BaseModel):
    """A script a time limit stopped, or kept from running once the try's time was spent:
    it left the text as it was."""

    script: str
    reason: str
    code: str
    params: dict[str, str]


class TryOut(BaseModel):
    result: str
    skipped: list[SkippedOut] = Field(default_factory=list)


def _out(found: LayerScripts) -> LayerOut:
    return LayerOut(
        layer=found.layer,
        target=found.target,
        target_name=found.target_name,
        allowed=found.allowed,
        scripts=[s.to_json() for s in found.scripts],
    )


def _library(request: Request, ctx: AppContext) -> RegexLibrary:
    return regex_library(ctx.library(current_user(request)))


@router.get("/api/regex/{layer}", response_model=LayerOut)
def get_layer(
    layer: RegexLayer,
    request: Request,
    target: str = Query("", max_length=NAME_MAX),
    ctx: AppContext = Depends(context),
) -> LayerOut:
    """A layer's scripts in the order they run: global, or a preset's or character's."""
    return _out(_library(request, ctx).layer(layer, target))


@router.put("/api/regex/{layer}", response_model=LayerOut)
def save_layer(
    layer: RegexLayer,
    body: LayerIn,
    request: Request,
    target: str = Query("", max_length=NAME_MAX),
    ctx: AppContext = Depends(context),
) -> LayerOut:
    """Replace a layer's scripts (their order is the order they run); a bad script is
    refused naming its place, and nothing is written."""
    return _out(_library(request, ctx).save(layer, body.scripts, target))


@router.put("/api/regex/{layer}/allowed", response_model=LayerOut)
def allow_layer(
    layer: RegexLayer,
    body: AllowIn,
    request: Request,
    target: str = Query("", max_length=NAME_MAX),
    ctx: AppContext = Depends(context),
) -> LayerOut:
    """Let a preset's or a character's own scripts run, or stop them."""
    return _out(_library(request, ctx).allow(layer, target, body.allowed))


@router.post("/api/regex/try", response_model=TryOut)
async def try_layer(body: TryIn, ctx: AppContext = Depends(context)) -> TryOut:
    """What the scripts make of a text at one moment (stored, shown or sent), by the
    engine the chat uses, time limits included: the scripts of one try spend at most a
    turn's time for regexes together (`regex_turn_seconds`), and the tries of the whole
    server run one at a time on a thread of their own, so the event loop goes on
    answering everyone else."""
    scripts = [read_script(s, where=f"scripts[{i}]") for i, s in enumerate(body.scripts)]
    seconds = ctx.turns.regex_budget if ctx.turns is not None else TURN_REGEX_BUDGET

    def run() -> TryOut:
        budget = RegexBudget(seconds)
        result = try_scripts(
            scripts,
            body.text,
            placement=RegexPlacement(body.placement),
            use=RegexUse(body.use),
            depth=body.depth,
            user=body.user,
            char=body.char,
            budget=budget,
        )
        skipped = [
            SkippedOut(
                script=note.source,
                reason=note.reason,
                code=note.code,
                params={k: str(v) for k, v in note.params.items()},
            )
            for note in budget.skipped()
        ]
        return TryOut(result=result, skipped=skipped)

    return await asyncio.get_running_loop().run_in_executor(_tries(), run)


_TRIES: list[ThreadPoolExecutor] = []


def _tries() -> ThreadPoolExecutor:
    """The one thread the server's regex tries take turns on (made at the first)."""
    if not _TRIES:
        _TRIES.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="regex-try"))
    return _TRIES[0]


@uploads.post("/api/regex/{layer}/import", response_model=LayerOut, status_code=201)
async def import_scripts(
    layer: RegexLayer,
    request: Request,
    target: str = Query("", max_length=NAME_MAX),
    file: UploadFile = File(...),
    ctx: AppContext = Depends(context),
) -> LayerOut:
    """Add the scripts of a SillyTavern regex file at the end of a layer."""
    data = await read_limited(file, ctx.upload_limit)
    regexes = _library(request, ctx)
    name = file.filename or "regex.json"
    return _out(await ctx.off_loop(regexes.import_file, layer, data, name, target))


@router.get(
    "/api/regex/{layer}/{script_id}/export",
    response_class=Response,
    responses=file_responses("application/json"),
)
def export_script(
    layer: RegexLayer,
    script_id: str,
    request: Request,
    target: str = Query("", max_length=NAME_MAX),
    ctx: AppContext = Depends(context),
) -> Response:
    """One script as SillyTavern's export file."""
    name, data = _library(request, ctx).export_file(layer, script_id, target)
    return Response(data, media_type="application/json", headers=library_views.attachment(name))
