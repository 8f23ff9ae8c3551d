"""Pictures for messages: upload one (stored once by its content), read one back."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Request, Response, UploadFile
from pydantic import BaseModel

from taverna.server.context import AppContext, context, current_user
from taverna.server.openapi import file_responses
from taverna.server.uploads import read_limited

router = APIRouter(prefix="/api/images", tags=["images"])
uploads = APIRouter(prefix="/api/images", tags=["images"])


class ImageOut(BaseModel):
    url: str
    media_type: str
    width: int
    height: int
    size: int


@uploads.post("", response_model=ImageOut, status_code=201)
async def upload_image(
    request: Request, file: UploadFile = File(...), ctx: AppContext = Depends(context)
) -> ImageOut:
    """Store a picture (PNG, JPEG, GIF or WebP) to attach to messages; the same picture
    uploaded twice is stored once."""
    data = await read_limited(file, ctx.upload_limit)
    images = ctx.images(current_user(request))
    stored = await ctx.off_loop(images.save, data, file=file.filename or "picture")
    return ImageOut(**stored.to_json())


@router.get(
    "/{name}",
    response_class=Response,
    responses=file_responses("image/png", "image/jpeg", "image/gif", "image/webp"),
)
def get_image(name: str, request: Request, ctx: AppContext = Depends(context)) -> Response:
    """A stored picture's bytes (its name is its content's hash, so it never changes)."""
    data, media_type = ctx.images(current_user(request)).load(name)
    return Response(
        data,
        media_type=media_type,
        headers={"Cache-Control": "private, max-age=31536000, immutable"},
    )
