"""Pictures in the library: stored once by the hash of their bytes, read back by name.

A stored picture's URL is `/api/images/<sha256>.<ext>`; messages carry it (`extra.image`),
and so do backgrounds and a character's expression sprites. Only PNG, JPEG, GIF and WebP
are taken, up to a size in pixels.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from PIL import Image, UnidentifiedImageError

from taverna.errors import FormatError, NotFound, raw_words
from taverna.formats.png_card import MAX_IMAGE_PIXELS
from taverna.store import Store

IMAGE_KIND = "image"
URL_PREFIX = "/api/images/"
# What a model API takes (OpenAI, Claude and Gemini all read these four).
MEDIA_TYPES: Mapping[str, str] = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "GIF": "image/gif",
    "WEBP": "image/webp",
}
EXTENSIONS: Mapping[str, str] = {
    v: k.lower().replace("jpeg", "jpg") for k, v in MEDIA_TYPES.items()
}
# a picture larger than this is refused, not decoded (as a card's or a persona's is)
MAX_PIXELS = MAX_IMAGE_PIXELS
_NAME = re.compile(r"^[0-9a-f]{64}\.(png|jpg|gif|webp)$")


@dataclass(frozen=True, slots=True)
class StoredImage:
    """A picture in the library: its URL, type and size in pixels."""

    url: str
    media_type: str
    width: int
    height: int
    size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "media_type": self.media_type,
            "width": self.width,
            "height": self.height,
            "size": self.size,
        }


def inspect_picture(data: bytes, file: str) -> tuple[str, int, int]:
    """(media type, width, height) of a picture a model can take, or a FormatError."""
    try:
        with Image.open(io.BytesIO(data)) as picture:
            kind = picture.format or ""
            width, height = picture.size
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise FormatError(
            f"not a picture a model can read ({raw_words(exc)['exc']})",
            file=file,
            code="picture_unreadable",
            params=raw_words(exc),
        ) from None
    if kind not in MEDIA_TYPES:
        raise FormatError(
            f"a {kind or 'unknown'} picture; models take PNG, JPEG, GIF or WebP",
            file=file,
            code="picture_kind_not_accepted",
            params={"value": str(kind or "unknown")},
        )
    if width * height > MAX_PIXELS:
        raise FormatError(
            f"the picture is {width}x{height}, too large",
            file=file,
            code="picture_is_x_too_large",
            params={"width": str(width), "height": str(height)},
        )
    return MEDIA_TYPES[kind], width, height


class PictureStore:
    """Pictures stored in the library by the hash of their bytes."""

    def __init__(self, store: Store, *, owner: str = "") -> None:
        self.store = store
        self.owner = owner

    def save(self, data: bytes, *, file: str = "picture") -> StoredImage:
        """Store a picture (once: the same bytes give the same URL) and say where it is."""
        media_type, width, height = inspect_picture(data, file)
        name = f"{hashlib.sha256(data).hexdigest()}.{EXTENSIONS[media_type]}"
        info = StoredImage(URL_PREFIX + name, media_type, width, height, len(data))
        if not self.store.find_documents(IMAGE_KIND, name=name, owner=self.owner):
            meta = {"media_type": media_type, "width": width, "height": height, "size": len(data)}
            self.store.put_document(IMAGE_KIND, name, meta, blob=data, owner=self.owner)
        return info

    def require(self, url: str) -> None:
        """Refuse (NotFound, naming the field) a picture URL that is not a stored picture."""
        name = url[len(URL_PREFIX) :] if url.startswith(URL_PREFIX) else ""
        if not _NAME.match(name) or not self.store.find_documents(
            IMAGE_KIND, name=name, owner=self.owner
        ):
            raise NotFound(
                f"no stored picture at {url!r}; upload it first",
                field="image",
                code="no_stored_picture_at_upload",
                params={"url": str(url)},
            )

    def load(self, name: str) -> tuple[bytes, str]:
        """A stored picture's bytes and media type; NotFound when there is none."""
        if not _NAME.match(name):
            raise NotFound(f"no picture {name!r}", code="no_picture", params={"name": str(name)})
        found = self.store.find_documents(IMAGE_KIND, name=name, owner=self.owner, with_blobs=True)
        if not found or found[0].blob is None:
            raise NotFound(f"no picture {name!r}", code="no_picture", params={"name": str(name)})
        doc = found[0]
        return doc.blob or b"", str(doc.data.get("media_type") or "application/octet-stream")
