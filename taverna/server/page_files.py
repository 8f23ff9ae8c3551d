"""The page's own files, compressed and checked for change.

There is no build step: each file is sent as it is in `taverna/web`, gzip-compressed (by the
standard library, once per version of the file, kept in memory) when the browser takes gzip.
The browser keeps what it read and asks again with the file's ETag on the next open, which
answers "not modified" with no body while the file is unchanged.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import MutableMapping
from typing import Any

from fastapi import Response
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.responses import FileResponse

# The kinds of file worth compressing (text); pictures and fonts are compressed already.
COMPRESSIBLE = (
    "text/",
    "application/javascript",
    "application/json",
    "image/svg+xml",
)
# Smaller files gain less than gzip's own framing costs.
SMALLEST = 512


def _takes_gzip(headers: Headers) -> bool:
    """Whether the request's Accept-Encoding admits gzip (not refused with q=0)."""
    for part in headers.get("accept-encoding", "").split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = params.strip().removeprefix("q=").strip()
            try:
                return not q or float(q) > 0
            except ValueError:
                return False
    return False


class PageFiles(StaticFiles):
    """The page's files: gzip-compressed for a browser that takes it, with a weak ETag (the
    same for both encodings) and `no-cache`, so each open checks the file and an unchanged
    one costs a 304 without a body."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # (path, size, mtime) → the file's gzip bytes; an edited file gets a new entry.
        self._compressed: MutableMapping[tuple[str, int, int], bytes] = {}

    async def get_response(self, path: str, scope: dict) -> Response:  # type: ignore[override,type-arg]
        response = await super().get_response(path, scope)
        response.headers.setdefault("Cache-Control", "no-cache")
        etag = response.headers.get("etag")
        if etag and not etag.startswith("W/"):
            # One tag for both encodings: a weak one says the bytes may differ.
            response.headers["etag"] = f"W/{etag}"
        if not isinstance(response, FileResponse) or response.status_code != 200:
            return response
        headers = Headers(scope=scope)
        kind = response.media_type or ""
        if response.headers.get("content-encoding") or not kind.startswith(COMPRESSIBLE):
            return response
        response.headers["vary"] = "Accept-Encoding"
        stat = response.stat_result
        if stat is None or stat.st_size < SMALLEST or "range" in headers:
            return response
        if not _takes_gzip(headers):
            return response
        body = self._gzip(str(response.path), stat)
        kept = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        kept["content-encoding"] = "gzip"
        kept.pop("accept-ranges", None)
        return Response(
            content=body,
            status_code=200,
            headers=kept,
            media_type=response.media_type,
        )

    def _gzip(self, path: str, stat: os.stat_result) -> bytes:
        key = (path, stat.st_size, stat.st_mtime_ns)
        body = self._compressed.get(key)
        if body is None:
            with open(path, "rb") as file:
                body = gzip.compress(file.read(), compresslevel=9, mtime=0)
            for old in [k for k in self._compressed if k[0] == path]:
                del self._compressed[old]
            self._compressed[key] = body
        return body
