"""How errors reach the page: the project's own errors become clear 4xx/5xx JSON answers."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from taverna.errors import Conflict, FormatError, NotFound, ProviderError, TavernaError


class PayloadTooLarge(TavernaError):
    """An upload is larger than the server accepts."""


STATUS = (
    (NotFound, 404),
    (Conflict, 409),
    (PayloadTooLarge, 413),
    (FormatError, 422),
    (ProviderError, 502),
    (TavernaError, 400),
)


def status_of(error: TavernaError) -> int:
    for kind, status in STATUS:
        if isinstance(error, kind):
            return status
    return 400


def error_body(error: TavernaError) -> dict[str, object]:
    detail: dict[str, object] = {"message": error.message, "kind": type(error).__name__}
    if error.file:
        detail["file"] = error.file
    if error.field:
        detail["field"] = error.field
    current = getattr(error, "current_revision", None)
    if current is not None:
        detail["current_revision"] = current
    return {"detail": detail}


def install_error_handlers(app: FastAPI) -> None:
    """Map TavernaError and its kinds to HTTP statuses with a JSON body naming file and field."""

    async def on_taverna_error(request: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, TavernaError)
        return JSONResponse(error_body(error), status_code=status_of(error))

    app.add_exception_handler(TavernaError, on_taverna_error)
