"""Pictures attached to messages: stored once by content, served to the page, sent to models.

A message carries its picture as SillyTavern does, in `extra.image` (with
`extra.inline_image`), as a URL: ours is `/api/images/<sha256>.<ext>`; an imported chat
may carry a `data:` URL or a path of SillyTavern's own folder. Before a turn is assembled
each path message's picture is read into a `PromptImage` (a `data:` URL and its size);
one that cannot be read is left out, as SillyTavern skips a picture it cannot fetch.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from taverna.engine.assembly.context import AssemblyContext
from taverna.errors import FormatError, NotFound, raw_words
from taverna.formats.png_card import MAX_IMAGE_PIXELS
from taverna.model.prompt import PromptImage
from taverna.providers.request import Api
from taverna.providers.vision import sends_pictures
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
_KEPT = 64  # pictures kept read for the next turns


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


def _inspect(data: bytes, file: str) -> tuple[str, int, int]:
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


def message_image(extras: Mapping[str, Any]) -> str | None:
    """The picture URL a message's SillyTavern fields carry (`extra.image`), if any."""
    extra = extras.get("extra")
    if isinstance(extra, Mapping):
        image = extra.get("image")
        if isinstance(image, str) and image:
            return image
    return None


def shown_image(extras: Mapping[str, Any]) -> str | None:
    """The picture URL the page can show for a message: a stored one or a `data:` picture
    (a path of another program's folder cannot be shown)."""
    url = message_image(extras)
    if url is not None and (url.startswith(URL_PREFIX) or url.startswith("data:image/")):
        return url
    return None


def with_image(extras: Mapping[str, Any], url: str | None) -> dict[str, Any]:
    """Message fields with `extra.image` set to `url` (shown and sent inline), or removed."""
    out = dict(extras)
    extra = dict(out.get("extra") or {}) if isinstance(out.get("extra"), Mapping) else {}
    if url is None:
        extra.pop("image", None)
        extra.pop("inline_image", None)
    else:
        extra["image"] = url
        extra["inline_image"] = True
    out["extra"] = extra
    return out


def with_pictures(
    context: AssemblyContext,
    api: Api,
    model: str,
    urls: Sequence[str | None],
    read: Callable[[str], PromptImage | None],
) -> AssemblyContext:
    """`context` with its messages' pictures (`urls`, one per message, None for none) read
    by `read`, where a request to `api` for `model` sends them; unchanged elsewhere."""
    cc = context.chat_completion
    if api.is_text_completion or not cc.image_inlining:
        return context
    source = api.st_source(cc.source)
    force_instruct = bool(cc.extras.get("openrouter_force_instruct"))
    if not sends_pictures(source, model or cc.model, openrouter_force_instruct=force_instruct):
        return context
    messages = list(context.messages)
    for index, url in enumerate(urls[: len(messages)]):
        picture = read(url) if url else None
        if picture is not None:
            messages[index] = replace(messages[index], image=picture)
    return replace(context, messages=tuple(messages), inline_images=True)


def picture_file_reader(folder: Path) -> Callable[[str], PromptImage | None]:
    """Reads a SillyTavern chat's pictures beside its file: a `data:` URL as it is, a path
    of SillyTavern's folder (`/user/images/Alice/1.png`) as that path or its file name
    under `folder`."""

    def read(url: str) -> PromptImage | None:
        if url.startswith("data:"):
            return _data_url_image(url)
        relative = url.split("?", 1)[0].lstrip("/")
        for candidate in (folder / relative, folder / Path(relative).name):
            try:
                resolved = candidate.resolve()
                if folder.resolve() not in resolved.parents or not resolved.is_file():
                    continue
                data = resolved.read_bytes()
                media_type, width, height = _inspect(data, str(candidate))
            except (OSError, FormatError):
                continue
            encoded = base64.b64encode(data).decode("ascii")
            return PromptImage(f"data:{media_type};base64,{encoded}", width, height)
        return None

    return read


def _data_url_image(url: str) -> PromptImage | None:
    payload = url.partition(",")[2]
    try:
        data = base64.b64decode(payload, validate=False)
        _media, width, height = _inspect(data, "message picture")
    except (binascii.Error, FormatError):
        return None
    return PromptImage(url, width, height)


class ImageLibrary:
    """Pictures stored in the library by the hash of their bytes, read for turns."""

    def __init__(self, store: Store, *, owner: str = "") -> None:
        self.store = store
        self.owner = owner
        self._read: OrderedDict[str, PromptImage | None] = OrderedDict()

    def save(self, data: bytes, *, file: str = "picture") -> StoredImage:
        """Store a picture (once: the same bytes give the same URL) and say where it is."""
        media_type, width, height = _inspect(data, file)
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

    def prompt_image(self, url: str) -> PromptImage | None:
        """The picture at `url` as a model is sent it, or None when it cannot be read."""
        if url in self._read:
            self._read.move_to_end(url)
            return self._read[url]
        image = self._prompt_image(url)
        self._read[url] = image
        if len(self._read) > _KEPT:
            self._read.popitem(last=False)
        return image

    def _prompt_image(self, url: str) -> PromptImage | None:
        if url.startswith("data:"):
            return _data_url_image(url)
        if url.startswith(URL_PREFIX):
            try:
                data, media_type = self.load(url[len(URL_PREFIX) :])
                _media, width, height = _inspect(data, url)
            except (NotFound, FormatError):
                return None
            encoded = base64.b64encode(data).decode("ascii")
            return PromptImage(f"data:{media_type};base64,{encoded}", width, height)
        return None  # a path of another program's folder: nothing here to read
