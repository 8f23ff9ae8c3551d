"""How errors reach the page: the project's own errors become clear 4xx/5xx JSON answers."""

from __future__ import annotations

import errno
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY

from taverna.errors import (
    Conflict,
    Forbidden,
    FormatError,
    NotFound,
    NotLoggedIn,
    ProviderError,
    QuotaExceeded,
    StorageFull,
    TavernaError,
    TooManyLogins,
)

MIB = 1024 * 1024
# What an OSError says when the disk (or the file size the process may write) is full.
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class PayloadTooLarge(TavernaError):
    """A request or an upload is larger than the server accepts."""


def size_text(size: int) -> str:
    """A byte count as a person reads it: `16 MiB`, `512 KiB`, `300 bytes`."""
    if size >= MIB:
        return f"{size / MIB:.4g} MiB"
    if size >= 1024:
        return f"{size / 1024:.4g} KiB"
    return f"{size} bytes"


def body_too_large(request: Request) -> PayloadTooLarge:
    """The error for a request body over the limit of its route (FastAPI's body limit)."""
    limit = request.scope.get(MAX_BODY_SIZE_SCOPE_KEY)
    most = f"the {size_text(limit)} " if isinstance(limit, int) else "what "
    return PayloadTooLarge(
        f"the request body is larger than {most}this server reads for "
        f"{request.method} {request.url.path}; nothing was stored",
        code="too_large",
        params={"limit": size_text(limit)} if isinstance(limit, int) else {},
    )


STATUS = (
    (NotFound, 404),
    (Conflict, 409),
    (PayloadTooLarge, 413),
    (NotLoggedIn, 401),
    (Forbidden, 403),
    (QuotaExceeded, 429),
    (TooManyLogins, 429),
    (StorageFull, 413),
    (FormatError, 422),
    (ProviderError, 502),
    (TavernaError, 400),
)


def status_of(error: TavernaError) -> int:
    for kind, status in STATUS:
        if isinstance(error, kind):
            return status
    return 400


# The code of an error that names none: what its kind says, for the page to translate.
DEFAULT_CODES = (
    (NotFound, "not_found"),
    (Conflict, "conflict"),
    (PayloadTooLarge, "too_large"),
    (FormatError, "unreadable"),
    (ProviderError, "model_api"),
    (TavernaError, "refused"),
)


def code_of(error: TavernaError) -> str:
    if error.code:
        return error.code
    return next(code for kind, code in DEFAULT_CODES if isinstance(error, kind))


def headers_of(error: TavernaError) -> dict[str, str]:
    """The headers an error's answer carries (when to try again, for a refused login)."""
    if isinstance(error, TooManyLogins):
        return {"Retry-After": str(error.retry_after)}
    return {}


def error_body(error: TavernaError) -> dict[str, object]:
    detail: dict[str, object] = {
        "message": error.message,
        "kind": type(error).__name__,
        "code": code_of(error),
        "params": error.params,
    }
    if error.file:
        detail["file"] = error.file
    if error.field:
        detail["field"] = error.field
    current = getattr(error, "current_revision", None)
    if current is not None:
        detail["current_revision"] = current
    return {"detail": detail}


def _causes(error: BaseException) -> list[BaseException]:
    """The error and what it was raised from, outermost first."""
    found: list[BaseException] = []
    while error is not None and error not in found and len(found) < 8:
        found.append(error)
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return found


def unexpected_body(error: BaseException) -> tuple[int, dict[str, object]]:
    """The status and JSON body of an error no route turned into a TavernaError: a full
    disk (507), a database or Redis that does not answer (503), else a bug (500); each in
    the shape of every other error answer, never the framework's plain text."""
    status, code = 500, "internal"
    message = "unexpected server error (the server's log has the details)"
    for cause in _causes(error):
        text = str(cause).lower()
        if (isinstance(cause, OSError) and cause.errno in _FULL) or "disk is full" in text:
            status, code = 507, "disk_full"
            message = "the server's disk is full: nothing was stored; try again once there is room"
            break
        module = type(cause).__module__
        if module.startswith(("sqlalchemy", "psycopg", "sqlite3", "redis")) and (
            "Operational" in type(cause).__name__
            or "Connection" in type(cause).__name__
            or "Interface" in type(cause).__name__
            or "Timeout" in type(cause).__name__
        ):
            status, code = 503, "store_unavailable"
            message = "the database is not answering just now; try again in a moment"
    kind = HTTPStatus(status).phrase.replace(" ", "")
    return status, {"detail": {"message": message, "kind": kind, "code": code, "params": {}}}


def install_error_handlers(app: FastAPI) -> None:
    """Map TavernaError and its kinds to HTTP statuses with a JSON body naming file and field;
    the framework's own HTTP errors get the same shape."""

    async def on_taverna_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, TavernaError)
        return JSONResponse(
            error_body(error), status_code=status_of(error), headers=headers_of(error)
        )

    async def on_http_error(request: Request, error: Exception) -> Response:
        # The framework's own refusals (a body that does not parse, no such path, a
        # method the path lacks, a body past the route's limit) in the same shape as
        # every other error answer.
        assert isinstance(error, HTTPException)
        if error.status_code == 413:
            return await on_taverna_error(request, body_too_large(request))
        headers = dict(error.headers or {})
        if error.status_code in (204, 304):
            return Response(status_code=error.status_code, headers=headers)
        try:
            kind = HTTPStatus(error.status_code).phrase.replace(" ", "")
        except ValueError:
            kind = "Error"
        body = {
            "detail": {
                "message": str(error.detail),
                "kind": kind,
                "code": f"http_{error.status_code}",
            }
        }
        return JSONResponse(body, status_code=error.status_code, headers=headers)

    async def on_unexpected(request: Request, error: Exception) -> JSONResponse:
        # Starlette logs the error and its traceback after this answer is sent.
        status, body = unexpected_body(error)
        headers = {"Retry-After": "5"} if status == 503 else {}
        return JSONResponse(body, status_code=status, headers=headers)

    app.add_exception_handler(TavernaError, on_taverna_error)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
