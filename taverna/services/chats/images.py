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
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from taverna.engine.assembly.context import AssemblyContext
from taverna.errors import FormatError, NotFound
from taverna.model.prompt import PromptImage
from taverna.providers.request import Api
from taverna.providers.vision import sends_pictures
from taverna.services.library.pictures import (
    EXTENSIONS,
    IMAGE_KIND,
    MAX_PIXELS,
    MEDIA_TYPES,
    URL_PREFIX,
    PictureStore,
    StoredImage,
    inspect_picture,
)
from taverna.store import Store

__all__ = [
    "EXTENSIONS",
    "IMAGE_KIND",
    "MAX_PIXELS",
    "MEDIA_TYPES",
    "URL_PREFIX",
    "ImageLibrary",
    "StoredImage",
    "message_image",
    "picture_file_reader",
    "shown_image",
    "with_image",
    "with_pictures",
]

_KEPT = 64  # pictures kept read for the next turns


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
                media_type, width, height = inspect_picture(data, str(candidate))
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
        _media, width, height = inspect_picture(data, "message picture")
    except (binascii.Error, FormatError):
        return None
    return PromptImage(url, width, height)


class ImageLibrary(PictureStore):
    """Pictures stored in the library, read for turns (the last ones read kept)."""

    def __init__(self, store: Store, *, owner: str = "") -> None:
        super().__init__(store, owner=owner)
        self._read: OrderedDict[str, PromptImage | None] = OrderedDict()

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
                _media, width, height = inspect_picture(data, url)
            except (NotFound, FormatError):
                return None
            encoded = base64.b64encode(data).decode("ascii")
            return PromptImage(f"data:{media_type};base64,{encoded}", width, height)
        return None  # a path of another program's folder: nothing here to read
