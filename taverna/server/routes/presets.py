"""Presets and templates: list, import, open, edit (prompt manager, sampling, fields), use, export."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, Depends, File, Response, UploadFile
from pydantic import BaseModel, Field

from taverna.errors import FormatError, TavernaError
from taverna.formats import json_text
from taverna.formats.detect import detect
from taverna.server import library_views
from taverna.server.context import AppContext, context, library
from taverna.server.schemas import NAME_MAX, TEXT_MAX, Strict
from taverna.server.uploads import read_limited
from taverna.services import prompt_manager
from taverna.services.active_settings import active_choices, set_active
from taverna.services.library import LibraryKind, LibraryService

router = APIRouter(prefix="/api/presets", tags=["presets"])

ACTIVE_KEY = {
    "chat": "chat_completion_preset",
    "instruct": "instruct_template",
    "context": "context_template",
}


class PresetListItem(BaseModel):
    id: str
    name: str
    kind: str
    active: bool


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


def _kind(kind: str) -> LibraryKind:
    if kind not in prompt_manager.KINDS:
        raise TavernaError(f"kind must be one of {', '.join(prompt_manager.KINDS)}", field="kind")
    return prompt_manager.KINDS[kind]


def _find(lib: LibraryService, preset_id: str) -> Any:
    doc = lib.store.get_document(preset_id)
    if doc.kind not in prompt_manager.PAGE_KIND or doc.owner != lib.owner:
        from taverna.errors import NotFound

        raise NotFound("no such preset", field="id")
    return doc


def _view(lib: LibraryService, preset_id: str) -> PresetOut:
    doc = _find(lib, preset_id)
    kind = prompt_manager.PAGE_KIND[doc.kind]
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
    library_kind = _kind(kind)
    active = set(active_choices(lib.store, lib.owner).values())
    return [
        PresetListItem(id=d.id, name=d.name, kind=kind, active=d.id in active)
        for d in lib.documents(library_kind)
    ]


@router.post("/import", response_model=PresetListItem, status_code=201)
async def import_preset(
    kind: str = "chat",
    file: UploadFile = File(...),
    lib: LibraryService = Depends(library),
    ctx: AppContext = Depends(context),
) -> PresetListItem:
    """Store a preset or template file of the kind asked for; any other file is refused."""
    _kind(kind)
    data = await read_limited(file, ctx.upload_limit)
    name = file.filename or "preset.json"
    if detect(data, name) is not prompt_manager.FILE_KINDS[kind]:
        raise FormatError(f"this file is not a {kind} preset", file=name)
    item = lib.import_bytes(data, name)
    return PresetListItem(id=item.id, name=item.name, kind=kind, active=False)


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


def _save_chat_preset(
    lib: LibraryService, doc: Any, data: dict[str, Any], revision: int | None
) -> None:
    data = prompt_manager.checked(LibraryKind.CHAT_COMPLETION_PRESET, data, doc.name)
    lib.store.put_document(
        doc.kind,
        doc.name,
        data,
        id=doc.id,
        revision=doc.revision if revision is None else revision,
        owner=doc.owner,
    )


def _chat_preset(lib: LibraryService, preset_id: str) -> Any:
    doc = _find(lib, preset_id)
    if doc.kind != LibraryKind.CHAT_COMPLETION_PRESET.value:
        raise TavernaError("only a chat completion preset has prompt slots", field="preset_id")
    return doc


@router.post("/{preset_id}/prompts", response_model=PresetOut, status_code=201)
def add_slot(preset_id: str, body: SlotIn, lib: LibraryService = Depends(library)) -> PresetOut:
    """Add a custom prompt slot, last in the prompt order."""
    doc = _chat_preset(lib, preset_id)
    slot = body.model_dump(exclude={"enabled", "revision"})
    data = prompt_manager.add_slot(doc.data, str(uuid.uuid4()), slot, enabled=body.enabled)
    _save_chat_preset(lib, doc, data, body.revision)
    return _view(lib, preset_id)


@router.delete("/{preset_id}/prompts/{identifier}", response_model=PresetOut)
def delete_slot(
    preset_id: str, identifier: str, lib: LibraryService = Depends(library)
) -> PresetOut:
    """Delete a custom prompt slot; markers and SillyTavern's own slots are refused."""
    doc = _chat_preset(lib, preset_id)
    _save_chat_preset(lib, doc, prompt_manager.delete_slot(doc.data, identifier), None)
    return _view(lib, preset_id)


@router.get("/{preset_id}", response_model=PresetOut)
def get_preset(preset_id: str, lib: LibraryService = Depends(library)) -> PresetOut:
    return _view(lib, preset_id)


@router.put("/{preset_id}", response_model=PresetOut)
def update_preset(
    preset_id: str, body: PresetIn, lib: LibraryService = Depends(library)
) -> PresetOut:
    doc = _find(lib, preset_id)
    if doc.kind == LibraryKind.CHAT_COMPLETION_PRESET.value:
        data = prompt_manager.apply_chat_edit(doc.data, body.prompts or [], body.sampling or {})
    else:
        data = {**doc.data, **(body.data or {})}
    kind = LibraryKind(doc.kind)
    data = prompt_manager.checked(kind, data, doc.name)
    lib.store.put_document(
        doc.kind,
        body.name,
        data,
        id=doc.id,
        revision=doc.revision if body.revision is None else body.revision,
        owner=doc.owner,
    )
    return _view(lib, preset_id)


@router.delete("/{preset_id}", status_code=204)
def delete_preset(preset_id: str, lib: LibraryService = Depends(library)) -> Response:
    doc = _find(lib, preset_id)
    lib.store.delete_document(doc.id, revision=doc.revision)
    return Response(status_code=204)


@router.post("/{preset_id}/activate", response_model=PresetListItem)
def activate_preset(preset_id: str, lib: LibraryService = Depends(library)) -> PresetListItem:
    """Use this preset (or template) for the next generations."""
    doc = _find(lib, preset_id)
    kind = prompt_manager.PAGE_KIND[doc.kind]
    if kind not in ACTIVE_KEY:
        raise TavernaError("a system prompt preset is not chosen this way", field="id")
    set_active(lib.store, ACTIVE_KEY[kind], doc.id, lib.owner)
    return PresetListItem(id=doc.id, name=doc.name, kind=kind, active=True)


@router.get("/{preset_id}/export")
def export_preset(preset_id: str, lib: LibraryService = Depends(library)) -> Response:
    doc = _find(lib, preset_id)
    return Response(
        json_text.dumps(dict(doc.data), indent=4).encode("utf-8"),
        media_type="application/json",
        headers=library_views.attachment(f"{library_views.download_name(doc.name)}.json"),
    )
