"""Reading uploaded files with a size limit, so an oversized upload is refused before it is stored."""

from __future__ import annotations

from fastapi import UploadFile

from taverna.server.errors import PayloadTooLarge

MIB = 1024 * 1024
CHUNK = 256 * 1024


async def read_limited(upload: UploadFile, limit: int) -> bytes:
    """The upload's bytes; PayloadTooLarge as soon as more than `limit` bytes arrive."""
    parts: list[bytes] = []
    size = 0
    while chunk := await upload.read(CHUNK):
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(
                f"the file is larger than {limit / MIB:g} MiB",
                file=upload.filename or None,
                code="file_is_larger_than_mib",
                params={"value": format(limit / MIB, "g")},
            )
        parts.append(chunk)
    return b"".join(parts)
