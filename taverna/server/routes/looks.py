"""How the page looks: backgrounds, custom CSS and themes (global and per chat), and the
characters' expression sprites with the expression a chat's character wears now."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, File, Request, Response, UploadFile
from pydantic import BaseModel, Field

from taverna.server.context import AppContext, backed_up, context, current_user, library
from taverna.server.schemas import NAME_MAX, Strict
from taverna.server.uploads import read_limited
from taverna.services.chats.looks import LABELS, ChatLooks
from taverna.services.library.looks import Looks, LooksLibrary
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.library.sprites import SpriteLibrary, sprite_label

router = APIRouter(tags=["looks"])
uploads = APIRouter(tags=["looks"])

CSS_MAX = 200_000
URL_MAX = 2_000_000  # a data: picture


class LooksOut(BaseModel):
    """Looks as the page applies them."""

    background: str | None = Field(description="the background picture's URL, if any")
    custom_css: str = Field(description="the custom CSS as applied (cleaned)")
    removed: list[str] = Field(description="what cleaning took out of it, as written")
    theme: str = ""
    colours: dict[str, str] = Field(default_factory=dict, description="CSS variable -> colour")


class BackgroundOut(BaseModel):
    id: str
    name: str
    url: str


class GlobalLooksOut(LooksOut):
    backgrounds: list[BackgroundOut]
    themes: list[str]


class ChatLooksOut(LooksOut):
    revision: int


class LooksIn(Strict):
    """A change: what is left out keeps its value; `background` null: none."""

    background: str | None = Field(None, max_length=URL_MAX)
    custom_css: str | None = Field(None, max_length=CSS_MAX)


class ChatLooksIn(LooksIn):
    revision: int


class ThemeIn(Strict):
    name: str = Field(max_length=NAME_MAX, description='the theme to use; "": none')


class ExpressionOut(BaseModel):
    character: str
    character_id: str | None
    label: str = Field(description="the expression: one of the classifier's labels")
    source: str = Field(description="reply (read from the last reply), set (/expression), none")
    sprite: str | None = Field(description="the sprite shown (the label or the nearest one)")
    url: str | None
    labels: list[str] = Field(description="the expressions the character's pack has")


class SpritesOut(BaseModel):
    sprites: dict[str, str] = Field(description="label -> picture URL")
    labels: list[str] = Field(description="the classifier's labels")


def _looks_out(looks: Looks) -> dict[str, Any]:
    return {
        "background": looks.background,
        "custom_css": looks.css.css,
        "removed": list(looks.css.removed),
        "theme": looks.theme,
        "colours": dict(looks.colours),
    }


def _global(lib: LibraryService) -> GlobalLooksOut:
    looks = LooksLibrary.of(lib)
    return GlobalLooksOut(
        **_looks_out(looks.global_looks()),
        backgrounds=[BackgroundOut(**b.to_json()) for b in looks.backgrounds()],
        themes=[t.name for t in looks.themes()],
    )


@router.get("/api/looks", response_model=GlobalLooksOut)
def global_looks(lib: LibraryService = Depends(library)) -> GlobalLooksOut:
    """The looks every chat has unless it has its own, the backgrounds and the themes."""
    return _global(lib)


@router.put("/api/looks", response_model=GlobalLooksOut)
def set_global_looks(body: LooksIn, lib: LibraryService = Depends(library)) -> GlobalLooksOut:
    """Change the global background (a library picture's URL or a data: picture; null:
    none) or custom CSS."""
    given = body.model_fields_set
    LooksLibrary.of(lib).set_global(
        background=body.background if "background" in given else False,
        custom_css=body.custom_css,
    )
    return _global(lib)


@router.put("/api/looks/theme", response_model=GlobalLooksOut)
def apply_theme(body: ThemeIn, lib: LibraryService = Depends(library)) -> GlobalLooksOut:
    """Use an imported theme: its colours, and its custom CSS as the global one ("": no
    theme, the custom CSS kept)."""
    LooksLibrary.of(lib).apply_theme(body.name)
    return _global(lib)


@uploads.post("/api/looks/backgrounds", response_model=BackgroundOut, status_code=201)
async def upload_background(
    request: Request, file: UploadFile = File(...), ctx: AppContext = Depends(context)
) -> BackgroundOut:
    """Add a background picture (PNG, JPEG, GIF or WebP), named by its file."""
    data = await read_limited(file, ctx.upload_limit)
    looks = LooksLibrary.of(ctx.library(current_user(request)))
    found = await ctx.off_loop(looks.add_background, data, file.filename or "background")
    return BackgroundOut(**found.to_json())


@router.delete("/api/looks/backgrounds/{background_id}", status_code=204)
def delete_background(background_id: str, lib: LibraryService = Depends(library)) -> Response:
    LooksLibrary.of(lib).delete_background(background_id)
    return Response(status_code=204)


@uploads.post("/api/looks/themes", response_model=GlobalLooksOut, status_code=201)
async def upload_theme(
    request: Request, file: UploadFile = File(...), ctx: AppContext = Depends(context)
) -> GlobalLooksOut:
    """Add a SillyTavern theme file (`themes/<name>.json`)."""
    data = await read_limited(file, ctx.upload_limit)
    lib = ctx.library(current_user(request))
    name = (file.filename or "theme").rsplit(".", 1)[0]
    LooksLibrary.of(lib).import_theme(data, file=file.filename or "", name=name)
    return _global(lib)


# ------------------------------------------------------------------- a chat's


def _chat_looks(request: Request, ctx: AppContext) -> ChatLooks:
    return ChatLooks(ctx.chats, ctx.library(current_user(request)))


@router.get("/api/chats/{chat_id}/looks", response_model=ChatLooksOut)
def chat_looks(chat_id: str, request: Request, ctx: AppContext = Depends(context)) -> ChatLooksOut:
    """The chat's own background and custom CSS (over the global ones)."""
    chat = ctx.chats.get_chat(chat_id)
    return ChatLooksOut(
        **_looks_out(_chat_looks(request, ctx).chat_looks(chat)), revision=chat.revision
    )


@router.put(
    "/api/chats/{chat_id}/looks", response_model=ChatLooksOut, dependencies=[Depends(backed_up)]
)
def set_chat_looks(
    chat_id: str, body: ChatLooksIn, request: Request, ctx: AppContext = Depends(context)
) -> ChatLooksOut:
    """Change the chat's own background (null: the global one) or custom CSS ("": none)."""
    looks = _chat_looks(request, ctx)
    chat = looks.set_chat_looks(
        chat_id,
        revision=body.revision,
        background=body.background if "background" in body.model_fields_set else False,
        custom_css=body.custom_css,
    )
    return ChatLooksOut(**_looks_out(looks.chat_looks(chat)), revision=chat.revision)


@router.get("/api/chats/{chat_id}/expression", response_model=ExpressionOut)
def chat_expression(
    chat_id: str, request: Request, ctx: AppContext = Depends(context)
) -> ExpressionOut:
    """The expression the chat's character wears after the last reply, with its sprite."""
    return ExpressionOut(**_chat_looks(request, ctx).expression(chat_id).to_json())


# ------------------------------------------------------------------- sprites


def _sprites(lib: LibraryService, character_id: str) -> SpriteLibrary:
    lib.get(LibraryKind.CHARACTER, character_id)  # NotFound unless the account's
    return SpriteLibrary.of(lib)


def _sprites_out(sprites: SpriteLibrary, character_id: str) -> SpritesOut:
    return SpritesOut(sprites=sprites.sprites(character_id), labels=list(LABELS))


@router.get("/api/characters/{character_id}/sprites", response_model=SpritesOut)
def character_sprites(character_id: str, lib: LibraryService = Depends(library)) -> SpritesOut:
    """A character's expression sprites: label -> picture."""
    return _sprites_out(_sprites(lib, character_id), character_id)


@uploads.post("/api/characters/{character_id}/sprites", response_model=SpritesOut)
async def upload_sprite(
    character_id: str,
    request: Request,
    file: UploadFile = File(...),
    label: str | None = None,
    ctx: AppContext = Depends(context),
) -> SpritesOut:
    """Add a sprite: `label`, else its file's name (`joy.png` is joy)."""
    data = await read_limited(file, ctx.upload_limit)
    sprites = _sprites(ctx.library(current_user(request)), character_id)
    wanted = label or sprite_label(file.filename or "") or ""
    await ctx.off_loop(sprites.add, character_id, wanted, data, file=file.filename or wanted)
    return _sprites_out(sprites, character_id)


@router.delete("/api/characters/{character_id}/sprites/{label}", response_model=SpritesOut)
def delete_sprite(
    character_id: str, label: str, lib: LibraryService = Depends(library)
) -> SpritesOut:
    sprites = _sprites(lib, character_id)
    sprites.remove(character_id, label)
    return _sprites_out(sprites, character_id)
