"""Importing a whole SillyTavern user data folder, uploaded from the browser."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from taverna.errors import TavernaError
from taverna.server.context import AppContext, context, current_user
from taverna.server.folder_upload import FolderWriter, multipart_boundary
from taverna.server.imports import ImportJobs
from taverna.server.schemas import TaskOut
from taverna.services.house.scratch import ScratchFolder

# Mounted with the folder upload's body limit (see `create_app`).
router = APIRouter(prefix="/api/import", tags=["import"])

# The body goes to the worker thread in pieces of about this size: few hops, little held.
PIECE = 1024 * 1024


class ImportStarted(BaseModel):
    task: TaskOut
    files: int


def jobs(ctx: AppContext = Depends(context)) -> ImportJobs:
    found = ctx.services.setdefault("imports", ImportJobs())
    assert isinstance(found, ImportJobs)
    return found


@router.post("/sillytavern", response_model=ImportStarted, status_code=202)
async def import_sillytavern(
    request: Request, ctx: AppContext = Depends(context), registry: ImportJobs = Depends(jobs)
) -> ImportStarted:
    """Upload a SillyTavern user data folder (`multipart/form-data`, a `files` part per file,
    each named by its path in the folder) and import it as a task; follow it at
    `/api/tasks/{id}/events`. The files are written as they arrive, off the event loop."""
    boundary = multipart_boundary(request.headers.get("content-type", ""))
    scratch = await ctx.off_loop(ScratchFolder, ctx.data_dir, "import")
    writer = FolderWriter(
        scratch.path,
        boundary,
        field="files",
        max_files=ctx.folder_files,
        max_bytes=ctx.folder_upload_limit,
    )
    try:
        pending = bytearray()
        async for chunk in request.stream():
            pending += chunk
            if len(pending) >= PIECE:
                await ctx.off_loop(writer.write, bytes(pending))
                pending.clear()
        await ctx.off_loop(writer.write, bytes(pending))
        files = await ctx.off_loop(writer.finish)
        if not files:
            raise TavernaError(
                "no files were uploaded", field="files", code="no_files_were_uploaded"
            )
    except BaseException:
        # Queued behind any piece still being written (one worker thread, in order).
        await ctx.off_loop(_discard, writer, scratch)
        raise
    owner = current_user(request)
    job = registry.start(
        scratch.path, ctx.library(owner), cleanup=scratch, connections=ctx.connections_of(owner)
    )
    return ImportStarted(task=TaskOut(id=job.id, kind="import", status="running"), files=files)


def _discard(writer: FolderWriter, scratch: ScratchFolder) -> None:
    writer.abort()
    scratch.remove()
