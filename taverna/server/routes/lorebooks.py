"""Lorebooks: list, create, import, export, delete; entries with every SillyTavern field."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, File, Response, UploadFile
from pydantic import BaseModel, Field

from taverna.server import library_views
from taverna.server.context import AppContext, context, library
from taverna.server.openapi import file_responses
from taverna.server.schemas import NAME_MAX, ImportWarningOut, LorebookOut, Strict
from taverna.server.uploads import read_limited
from taverna.services.library import editing as library_editing
from taverna.services.library import files
from taverna.services.library.service import LibraryKind, LibraryService

router = APIRouter(prefix="/api/lorebooks", tags=["lorebooks"])
# File uploads: mounted with the upload body limit (see `create_app`).
uploads = APIRouter(prefix="/api/lorebooks", tags=["lorebooks"])


class LorebookIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)


class LorebookListItem(BaseModel):
    id: str
    name: str
    entry_count: int


class LorebookImported(LorebookListItem):
    warnings: list[ImportWarningOut] = Field(
        default_factory=list, description="values of the file read otherwise than written"
    )


@router.get("", response_model=list[LorebookListItem])
def list_lorebooks(lib: LibraryService = Depends(library)) -> list[LorebookListItem]:
    return [
        LorebookListItem(id=d.id, name=d.name, entry_count=len(d.data.get("entries") or {}))
        for d in lib.documents(LibraryKind.LOREBOOK)
    ]


@router.post("", response_model=LorebookOut, status_code=201)
def create_lorebook(body: LorebookIn, lib: LibraryService = Depends(library)) -> LorebookOut:
    return library_views.lorebook_view(lib, library_editing.create_lorebook(lib, body.name))


@uploads.post("/import", response_model=LorebookImported, status_code=201)
async def import_lorebook(
    file: UploadFile = File(...),
    lib: LibraryService = Depends(library),
    ctx: AppContext = Depends(context),
) -> LorebookImported:
    """Store a SillyTavern world file, a V3 lorebook, or a lorebook SillyTavern converts on
    import (NovelAI, Agnai, RisuAI, a card's `character_book`); anything else is refused.

    Values SillyTavern reads loosely (`"order": "245"`, entries under a key that is not
    their uid, two entries with one uid) are read the same way and listed in `warnings`.
    """
    data = await read_limited(file, ctx.upload_limit)
    return await ctx.off_loop(_import_lorebook, lib, data, file.filename or "lorebook.json")


def _import_lorebook(lib: LibraryService, data: bytes, name: str) -> LorebookImported:
    item = library_editing.import_lorebook(lib, data, name)
    doc = lib.get(LibraryKind.LOREBOOK, item.id)
    return LorebookImported(
        id=doc.id,
        name=doc.name,
        entry_count=len(doc.data.get("entries") or {}),
        warnings=ImportWarningOut.of(item.warnings),
    )


@router.get("/{lorebook_id}", response_model=LorebookOut)
def get_lorebook(lorebook_id: str, lib: LibraryService = Depends(library)) -> LorebookOut:
    return library_views.lorebook_view(lib, lorebook_id)


@router.delete("/{lorebook_id}", status_code=204)
def delete_lorebook(lorebook_id: str, lib: LibraryService = Depends(library)) -> Response:
    lib.delete(LibraryKind.LOREBOOK, lorebook_id)
    return Response(status_code=204)


@router.get(
    "/{lorebook_id}/export",
    response_class=Response,
    responses=file_responses("application/json"),
)
def export_lorebook(lorebook_id: str, lib: LibraryService = Depends(library)) -> Response:
    doc = lib.get(LibraryKind.LOREBOOK, lorebook_id)
    return Response(
        files.document_json_file(doc),
        media_type="application/json",
        headers=library_views.attachment(f"{library_views.download_name(doc.name)}.json"),
    )


@router.post("/{lorebook_id}/entries", response_model=LorebookOut, status_code=201)
def add_entry(lorebook_id: str, lib: LibraryService = Depends(library)) -> LorebookOut:
    """A new entry with SillyTavern's defaults, at the end of the book."""
    library_editing.add_entry(lib, lorebook_id)
    return library_views.lorebook_view(lib, lorebook_id)


@router.put("/{lorebook_id}/entries/{uid}", response_model=LorebookOut)
def update_entry(
    lorebook_id: str,
    uid: int,
    entry: dict[str, Any] = Body(..., description="the entry, by SillyTavern's field names"),
    lib: LibraryService = Depends(library),
) -> LorebookOut:
    library_editing.replace_entry(lib, lorebook_id, uid, entry)
    return library_views.lorebook_view(lib, lorebook_id)


@router.delete("/{lorebook_id}/entries/{uid}", response_model=LorebookOut)
def delete_entry(lorebook_id: str, uid: int, lib: LibraryService = Depends(library)) -> LorebookOut:
    library_editing.replace_entry(lib, lorebook_id, uid, None)
    return library_views.lorebook_view(lib, lorebook_id)
