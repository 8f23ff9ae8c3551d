"""Characters: list, import a card, create, edit every field, picture, export as PNG or JSON."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Response, UploadFile
from pydantic import Field

from taverna.server import library_views
from taverna.server.cards import (
    CharacterFields,
    CharacterIn,
    CharacterListItem,
    CharacterOut,
)
from taverna.server.context import AppContext, context, library
from taverna.server.openapi import file_responses
from taverna.server.schemas import ImportWarningOut, Strict
from taverna.server.uploads import read_limited
from taverna.services.library import editing as library_editing
from taverna.services.library import files
from taverna.services.library.service import LibraryKind, LibraryService

router = APIRouter(prefix="/api/characters", tags=["characters"])
# File uploads: mounted with the upload body limit (see `create_app`).
uploads = APIRouter(prefix="/api/characters", tags=["characters"])


class LorebookLinkIn(Strict):
    lorebook_id: str | None


class CharacterImported(CharacterOut):
    warnings: list[ImportWarningOut] = Field(
        default_factory=list, description="values of the card read otherwise than written"
    )
    replaced: bool = Field(
        default=False,
        description="a character of that name was in the library: the card replaced it "
        "(same id, its chats kept), nothing new was added",
    )


@router.get("", response_model=list[CharacterListItem])
def list_characters(lib: LibraryService = Depends(library)) -> list[CharacterListItem]:
    items = []
    for doc in lib.documents(LibraryKind.CHARACTER):
        character = files.character_of(doc)
        items.append(
            CharacterListItem(
                id=doc.id,
                name=character.name or doc.name,
                tags=list(character.tags),
                favorite=character.favorite,
                creator=character.creator,
                avatar_url=f"/api/characters/{doc.id}/avatar",
            )
        )
    return items


@uploads.post("/import", response_model=CharacterImported, status_code=201)
async def import_card(
    file: UploadFile = File(...),
    lib: LibraryService = Depends(library),
    ctx: AppContext = Depends(context),
) -> CharacterImported:
    """Store a PNG, JSON or CHARX card; anything else is refused and nothing is stored.

    Values SillyTavern reads loosely (`"depth": "4"`, `"alternate_greetings": null`) are
    read the same way and listed in `warnings`.
    """
    data = await read_limited(file, ctx.upload_limit)
    return await ctx.off_loop(_import_card, lib, data, file.filename or "card")


def _import_card(lib: LibraryService, data: bytes, name: str) -> CharacterImported:
    item = library_editing.import_card(lib, data, name)
    view = library_views.character_view(lib, item.id)
    return CharacterImported(
        **view.model_dump(), warnings=ImportWarningOut.of(item.warnings), replaced=item.replaced
    )


@router.post("", response_model=CharacterOut, status_code=201)
def create_character(body: CharacterFields, lib: LibraryService = Depends(library)) -> CharacterOut:
    doc_id = library_editing.create_character(lib, body.model_dump())
    return library_views.character_view(lib, doc_id)


@router.get("/{character_id}", response_model=CharacterOut)
def get_character(character_id: str, lib: LibraryService = Depends(library)) -> CharacterOut:
    return library_views.character_view(lib, character_id)


@router.put("/{character_id}", response_model=CharacterOut)
def update_character(
    character_id: str, body: CharacterIn, lib: LibraryService = Depends(library)
) -> CharacterOut:
    library_editing.update_character(lib, character_id, body.model_dump(), revision=body.revision)
    return library_views.character_view(lib, character_id)


class MarksIn(Strict):
    favorite: bool | None = Field(default=None, description="None keeps the mark as it is")
    tags: list[str] | None = Field(
        default=None, max_length=500, description="None keeps the tags as they are"
    )


@router.patch("/{character_id}/marks", response_model=CharacterOut)
def set_marks(
    character_id: str, body: MarksIn, lib: LibraryService = Depends(library)
) -> CharacterOut:
    """Mark a character as a favourite (or not) and set its tags, as SillyTavern stores
    them in the card (`data.extensions.fav`, `data.tags`); every other field kept."""
    library_editing.set_marks(lib, character_id, favorite=body.favorite, tags=body.tags)
    return library_views.character_view(lib, character_id)


@router.delete("/{character_id}", status_code=204)
def delete_character(character_id: str, lib: LibraryService = Depends(library)) -> Response:
    lib.delete(LibraryKind.CHARACTER, character_id)
    return Response(status_code=204)


@router.put("/{character_id}/lorebook", response_model=CharacterOut)
def link_lorebook(
    character_id: str, body: LorebookLinkIn, lib: LibraryService = Depends(library)
) -> CharacterOut:
    library_editing.link_lorebook(lib, character_id, body.lorebook_id)
    return library_views.character_view(lib, character_id)


@router.post("/{character_id}/lorebook/import", response_model=CharacterOut)
def import_card_lorebook(character_id: str, lib: LibraryService = Depends(library)) -> CharacterOut:
    """Store the card's embedded lorebook (`character_book`) as a lorebook of its own and
    link it to the character, as SillyTavern's "Import Card Lore" does."""
    library_editing.import_card_lorebook(lib, character_id)
    return library_views.character_view(lib, character_id)


@router.get(
    "/{character_id}/avatar",
    response_class=Response,
    responses=file_responses("image/png", "image/svg+xml"),
)
def avatar(character_id: str, lib: LibraryService = Depends(library)) -> Response:
    """The character's picture; a lettered placeholder when the card has none."""
    card = lib.character(character_id)
    return library_views.picture_response(card.avatar, card.character.name)


@uploads.post("/{character_id}/avatar", response_model=CharacterOut)
async def set_avatar(
    character_id: str,
    file: UploadFile = File(...),
    lib: LibraryService = Depends(library),
    ctx: AppContext = Depends(context),
) -> CharacterOut:
    data = await read_limited(file, ctx.upload_limit)
    return await ctx.off_loop(_set_avatar, lib, character_id, data, file.filename or None)


def _set_avatar(
    lib: LibraryService, character_id: str, data: bytes, name: str | None
) -> CharacterOut:
    picture = files.picture_png(data, name)
    library_editing.replace_picture(lib, LibraryKind.CHARACTER, character_id, picture)
    return library_views.character_view(lib, character_id)


@router.get(
    "/{character_id}/export",
    response_class=Response,
    responses=file_responses("image/png", "application/json"),
)
def export_character(
    character_id: str, format: str = "png", lib: LibraryService = Depends(library)
) -> Response:
    """The card as a file SillyTavern reads: PNG (picture with both chunks) or JSON."""
    card = lib.character(character_id)
    stem = library_views.download_name(card.character.name)
    if format == "json":
        return Response(
            files.card_json_file(card),
            media_type="application/json",
            headers=library_views.attachment(f"{stem}.json"),
        )
    if format != "png":
        from taverna.errors import TavernaError

        raise TavernaError(
            "format must be png or json", field="format", code="format_must_be_png_or"
        )
    return Response(
        files.card_png_file(card),
        media_type="image/png",
        headers=library_views.attachment(f"{stem}.png"),
    )
