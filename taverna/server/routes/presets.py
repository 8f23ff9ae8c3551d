"""Presets and templates: list, import, open, edit (prompt manager, sampling, fields), use, export."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, Depends, File, Response, UploadFile
from pydantic import BaseModel, Field

from taverna.server import library_views
from taverna.server.context import AppContext, context, library
from taverna.server.openapi import file_responses
from taverna.server.schemas import NAME_MAX, TEXT_MAX, ImportWarningOut, Strict
from taverna.server.uploads import read_limited
from taverna.services.library import files, presets, prompt_manager
from taverna.services.library.service import LibraryKind, LibraryService

router = APIRouter(prefix="/api/presets", tags=["presets"])
# File uploads: mounted with the upload body limit (see `create_app`).
uploads = APIRouter(prefix="/api/presets", tags=["presets"])


class PresetListItem(BaseModel):
    id: str
    name: str
    kind: str
    active: bool


class PresetImported(PresetListItem):
    warnings: list[ImportWarningOut] = Field(
        default_factory=list, description="values of the file read otherwise than written"
    )


class PresetOut(BaseModel):
    id: str
    name: str
    kind: str
    revision: int
    prompts: list[dict[str, Any]] | None = None
    sampling: dict[str, Any] | None = None
    data: dict[str, Any] | None = None


class PresetIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    prompts: list[dict[str, Any]] | None = Field(default=None, max_length=1000)
    sampling: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    revision: int | None = None


def _view(lib: LibraryService, preset_id: str) -> PresetOut:
    doc = presets.get_preset(lib, preset_id)
    kind = prompt_manager.PAGE_KIND[LibraryKind(doc.kind)]
    if kind == "chat":
        return PresetOut(
            id=doc.id,
            name=doc.name,
            kind=kind,
            revision=doc.revision,
            prompts=prompt_manager.prompt_manager(doc.data),
            sampling=prompt_manager.sampling(doc.data),
        )
    return PresetOut(
        id=doc.id, name=doc.name, kind=kind, revision=doc.revision, data=dict(doc.data)
    )


@router.get("", response_model=list[PresetListItem])
def list_presets(
    kind: str = "chat", lib: LibraryService = Depends(library)
) -> list[PresetListItem]:
    library_kind = presets.listed_kind(kind)
    active = presets.active_ids(lib)
    return [
        PresetListItem(id=d.id, name=d.name, kind=kind, active=d.id in active)
        for d in lib.documents(library_kind)
    ]


class NewPresetIn(Strict):
    kind: str = Field(default="chat", description="chat, instruct, context or sysprompt")
    name: str = Field(min_length=1, max_length=NAME_MAX)


class CopyPresetIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)


@router.post("", response_model=PresetListItem, status_code=201)
def create_preset(body: NewPresetIn, lib: LibraryService = Depends(library)) -> PresetListItem:
    """A new preset or template holding the product's own defaults for its kind."""
    doc = presets.create_preset(lib, body.kind, body.name)
    return PresetListItem(id=doc.id, name=doc.name, kind=body.kind, active=False)


@router.post("/{preset_id}/copy", response_model=PresetListItem, status_code=201)
def copy_preset(
    preset_id: str, body: CopyPresetIn, lib: LibraryService = Depends(library)
) -> PresetListItem:
    """Save as: a copy of this preset or template under a new name."""
    doc = presets.copy_preset(lib, preset_id, body.name)
    kind = prompt_manager.PAGE_KIND[LibraryKind(doc.kind)]
    return PresetListItem(id=doc.id, name=doc.name, kind=kind, active=False)


@uploads.post("/import", response_model=PresetImported, status_code=201)
async def import_preset(
    kind: str = "chat",
    file: UploadFile = File(...),
    lib: LibraryService = Depends(library),
    ctx: AppContext = Depends(context),
) -> PresetImported:
    """Store a preset or template file of the kind asked for; any other file is refused.

    Values SillyTavern reads loosely (`"openai_max_context": "512"`) are read the same way
    and listed in `warnings`.
    """
    presets.listed_kind(kind)
    data = await read_limited(file, ctx.upload_limit)
    return await ctx.off_loop(_import_preset, lib, kind, data, file.filename or "preset.json")


def _import_preset(lib: LibraryService, kind: str, data: bytes, name: str) -> PresetImported:
    files.require_preset_file(data, name, kind)
    item = lib.import_bytes(data, name)
    return PresetImported(
        id=item.id,
        name=item.name,
        kind=kind,
        active=False,
        warnings=ImportWarningOut.of(item.warnings),
    )


class SlotIn(Strict):
    """A new custom prompt for the prompt manager (formats-presets.md §1.2)."""

    name: str = Field(min_length=1, max_length=NAME_MAX)
    role: Literal["system", "user", "assistant"] = "system"
    content: str = Field(default="", max_length=TEXT_MAX)
    injection_position: Literal[0, 1] = 0
    injection_depth: int = Field(default=4, ge=0, le=10_000)
    injection_order: int = Field(default=100, ge=-10_000, le=10_000)
    enabled: bool = True
    revision: int | None = None


@router.post("/{preset_id}/prompts", response_model=PresetOut, status_code=201)
def add_slot(preset_id: str, body: SlotIn, lib: LibraryService = Depends(library)) -> PresetOut:
    """Add a custom prompt slot, last in the prompt order."""
    slot = body.model_dump(exclude={"enabled", "revision"})
    presets.add_slot(
        lib, preset_id, str(uuid.uuid4()), slot, enabled=body.enabled, revision=body.revision
    )
    return _view(lib, preset_id)


@router.delete("/{preset_id}/prompts/{identifier}", response_model=PresetOut)
def delete_slot(
    preset_id: str, identifier: str, lib: LibraryService = Depends(library)
) -> PresetOut:
    """Delete a custom prompt slot; markers and SillyTavern's own slots are refused."""
    presets.delete_slot(lib, preset_id, identifier)
    return _view(lib, preset_id)


@router.get("/{preset_id}", response_model=PresetOut)
def get_preset(preset_id: str, lib: LibraryService = Depends(library)) -> PresetOut:
    return _view(lib, preset_id)


@router.put("/{preset_id}", response_model=PresetOut)
def update_preset(
    preset_id: str, body: PresetIn, lib: LibraryService = Depends(library)
) -> PresetOut:
    presets.update_preset(
        lib,
        preset_id,
        name=body.name,
        prompts=body.prompts,
        sampling=body.sampling,
        data=body.data,
        revision=body.revision,
    )
    return _view(lib, preset_id)


@router.delete("/{preset_id}", status_code=204)
def delete_preset(preset_id: str, lib: LibraryService = Depends(library)) -> Response:
    presets.delete_preset(lib, preset_id)
    return Response(status_code=204)


@router.post("/{preset_id}/activate", response_model=PresetListItem)
def activate_preset(preset_id: str, lib: LibraryService = Depends(library)) -> PresetListItem:
    """Use this preset (or template) for the next generations."""
    doc = presets.activate(lib, preset_id)
    return PresetListItem(id=doc.id, name=doc.name, kind=presets.page_kind(doc), active=True)


@router.get(
    "/{preset_id}/export",
    response_class=Response,
    responses=file_responses("application/json"),
)
def export_preset(preset_id: str, lib: LibraryService = Depends(library)) -> Response:
    doc = presets.chosen_preset(lib, preset_id)
    return Response(
        files.document_json_file(doc),
        media_type="application/json",
        headers=library_views.attachment(f"{library_views.download_name(doc.name)}.json"),
    )
