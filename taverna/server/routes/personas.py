"""Personas: who the user plays, with a description and where it goes in the prompt."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Response, UploadFile
from pydantic import BaseModel, Field

from taverna.model.persona import Persona
from taverna.server import library_views
from taverna.server.context import AppContext, context, library
from taverna.server.openapi import file_responses
from taverna.server.schemas import NAME_MAX, TEXT_MAX, Strict
from taverna.server.uploads import read_limited
from taverna.services.library import editing as library_editing
from taverna.services.library import files
from taverna.services.library.service import LibraryKind, LibraryService

router = APIRouter(prefix="/api/personas", tags=["personas"])
# File uploads: mounted with the upload body limit (see `create_app`).
uploads = APIRouter(prefix="/api/personas", tags=["personas"])


class PersonaIn(Strict):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    description: str = Field(default="", max_length=TEXT_MAX)
    # SillyTavern's persona description positions: 0 in the prompt, 2 before and 3 after
    # the author's note, 4 in the chat at a depth, 9 nowhere.
    position: int = Field(default=0, ge=0, le=9)
    depth: int = Field(default=2, ge=0, le=10_000)
    role: int = Field(default=0, ge=0, le=2)
    is_default: bool = False


class PersonaOut(BaseModel):
    id: str
    name: str
    description: str
    position: int
    depth: int
    role: int
    is_default: bool
    avatar_url: str


def _out(doc_id: str, persona: Persona) -> PersonaOut:
    d = persona.descriptor
    return PersonaOut(
        id=doc_id,
        name=persona.name,
        description=d.description,
        position=int(d.position),
        depth=int(d.depth),
        role=int(d.role),
        is_default=persona.is_default,
        avatar_url=f"/api/personas/{doc_id}/avatar",
    )


@router.get("", response_model=list[PersonaOut])
def list_personas(lib: LibraryService = Depends(library)) -> list[PersonaOut]:
    return [_out(i, p) for i, p in library_editing.all_personas(lib)]


@router.post("", response_model=PersonaOut, status_code=201)
def create_persona(body: PersonaIn, lib: LibraryService = Depends(library)) -> PersonaOut:
    doc_id = library_editing.save_persona(lib, body, None)
    return _out(doc_id, Persona.model_validate(dict(lib.get(LibraryKind.PERSONA, doc_id).data)))


@router.put("/{persona_id}", response_model=PersonaOut)
def update_persona(
    persona_id: str, body: PersonaIn, lib: LibraryService = Depends(library)
) -> PersonaOut:
    lib.get(LibraryKind.PERSONA, persona_id)
    library_editing.save_persona(lib, body, persona_id)
    return _out(
        persona_id, Persona.model_validate(dict(lib.get(LibraryKind.PERSONA, persona_id).data))
    )


@router.delete("/{persona_id}", status_code=204)
def delete_persona(persona_id: str, lib: LibraryService = Depends(library)) -> Response:
    lib.delete(LibraryKind.PERSONA, persona_id)
    return Response(status_code=204)


@router.get(
    "/{persona_id}/avatar",
    response_class=Response,
    responses=file_responses("image/png", "image/svg+xml"),
)
def persona_avatar(persona_id: str, lib: LibraryService = Depends(library)) -> Response:
    """The persona's picture; a lettered placeholder when it has none."""
    doc = lib.get(LibraryKind.PERSONA, persona_id)
    found = lib.find(LibraryKind.PERSONA, doc.name)
    blob = found.blob if found is not None and found.id == doc.id else None
    return library_views.picture_response(blob, doc.name)


@uploads.post("/{persona_id}/avatar", response_model=PersonaOut)
async def set_persona_avatar(
    persona_id: str,
    file: UploadFile = File(...),
    lib: LibraryService = Depends(library),
    ctx: AppContext = Depends(context),
) -> PersonaOut:
    data = await read_limited(file, ctx.upload_limit)
    return await ctx.off_loop(_set_picture, lib, persona_id, data, file.filename or None)


def _set_picture(lib: LibraryService, persona_id: str, data: bytes, name: str | None) -> PersonaOut:
    picture = files.picture_png(data, name)
    doc = lib.get(LibraryKind.PERSONA, persona_id)
    library_editing.replace_picture(lib, LibraryKind.PERSONA, persona_id, picture)
    return _out(doc.id, Persona.model_validate(dict(doc.data)))
