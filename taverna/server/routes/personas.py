"""Personas: who the user plays, with a description and where it goes in the prompt."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from taverna.errors import Conflict
from taverna.model.persona import Persona, PersonaDescriptor
from taverna.server.context import AppContext, context, current_user
from taverna.server.schemas import NAME_MAX, TEXT_MAX, Strict
from taverna.services.library import LibraryKind, LibraryService

router = APIRouter(prefix="/api/personas", tags=["personas"])


def library(request: Request, ctx: AppContext = Depends(context)) -> LibraryService:
    return LibraryService(ctx.store, owner=current_user(request))


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
    )


def _all(lib: LibraryService) -> list[tuple[str, Persona]]:
    return [
        (d.id, Persona.model_validate(dict(d.data))) for d in lib.documents(LibraryKind.PERSONA)
    ]


def _save(lib: LibraryService, body: PersonaIn, doc_id: str | None) -> str:
    existing = dict(_all(lib))
    for other_id, other in existing.items():
        if other.name == body.name and other_id != doc_id:
            raise Conflict(f"a persona named {body.name!r} exists already", field="name")
    old = existing.get(doc_id) if doc_id else None
    persona = Persona(
        avatar=old.avatar if old else f"{body.name}.png",
        name=body.name,
        descriptor=PersonaDescriptor(
            description=body.description, position=body.position, depth=body.depth, role=body.role
        ),
        is_default=body.is_default,
    )
    if doc_id:
        doc = lib.get(LibraryKind.PERSONA, doc_id)
        saved = lib.store.put_document(
            doc.kind,
            body.name,
            persona.to_json(),
            id=doc.id,
            revision=doc.revision,
            owner=doc.owner,
        ).id
    else:
        saved = lib.put_persona(persona).id
    if body.is_default:
        # One default persona: the others lose the mark.
        for other_id, other in _all(lib):
            if other_id != saved and other.is_default:
                doc = lib.get(LibraryKind.PERSONA, other_id)
                lib.store.put_document(
                    doc.kind,
                    doc.name,
                    other.model_copy(update={"is_default": False}).to_json(),
                    id=doc.id,
                    revision=doc.revision,
                    owner=doc.owner,
                )
    return saved


@router.get("", response_model=list[PersonaOut])
def list_personas(lib: LibraryService = Depends(library)) -> list[PersonaOut]:
    return [_out(i, p) for i, p in _all(lib)]


@router.post("", response_model=PersonaOut, status_code=201)
def create_persona(body: PersonaIn, lib: LibraryService = Depends(library)) -> PersonaOut:
    doc_id = _save(lib, body, None)
    return _out(doc_id, Persona.model_validate(dict(lib.get(LibraryKind.PERSONA, doc_id).data)))


@router.put("/{persona_id}", response_model=PersonaOut)
def update_persona(
    persona_id: str, body: PersonaIn, lib: LibraryService = Depends(library)
) -> PersonaOut:
    lib.get(LibraryKind.PERSONA, persona_id)
    _save(lib, body, persona_id)
    return _out(
        persona_id, Persona.model_validate(dict(lib.get(LibraryKind.PERSONA, persona_id).data))
    )


@router.delete("/{persona_id}", status_code=204)
def delete_persona(persona_id: str, lib: LibraryService = Depends(library)) -> Response:
    doc = lib.get(LibraryKind.PERSONA, persona_id)
    lib.store.delete_document(doc.id, revision=doc.revision)
    return Response(status_code=204)
