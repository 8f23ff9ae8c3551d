"""Importing a whole SillyTavern user data folder, uploaded from the browser."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from starlette.datastructures import UploadFile

from taverna.errors import TavernaError
from taverna.server.context import AppContext, context, current_user
from taverna.server.errors import PayloadTooLarge
from taverna.server.imports import ImportJobs, import_root, new_upload_folder, safe_relative
from taverna.server.schemas import TaskOut

router = APIRouter(prefix="/api/import", tags=["import"])

MAX_FILES = 100_000
CHUNK = 1024 * 1024


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
    """Upload a SillyTavern user data folder (`files`, each named by its path in the folder)
    and import it as a task; follow it at `/api/tasks/{id}/events`."""
    form = await request.form(max_files=MAX_FILES, max_fields=MAX_FILES)
    uploads = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
    if not uploads:
        raise TavernaError("no files were uploaded", field="files")
    folder = new_upload_folder()
    total = 0
    try:
        for upload in uploads:
            target = folder / safe_relative(upload.filename or "")
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                while chunk := await upload.read(CHUNK):
                    total += len(chunk)
                    if total > ctx.folder_upload_limit:
                        raise PayloadTooLarge(
                            f"the folder is larger than {ctx.folder_upload_limit // (1024 * 1024)} MiB",
                            field="files",
                        )
                    out.write(chunk)
    except BaseException:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        await form.close()
    library = ctx.library(current_user(request))
    job = registry.start(import_root(folder), library, cleanup=folder)
    return ImportStarted(
        task=TaskOut(id=job.id, kind="import", status="running"), files=len(uploads)
    )
