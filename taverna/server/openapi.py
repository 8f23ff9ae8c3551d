"""The published OpenAPI schema: what the routes answer when things go wrong, too.

FastAPI derives each operation's success answer from its route. The error answers come
from the error handlers and the request gate (`app.refuse`), which every route shares,
so they are added here, by rules that follow from what those do:

- 400: a host name the server does not answer to, or a request a route refuses (a
  `TavernaError` of no narrower kind); any operation.
- 401: with accounts, a request without a live session; any operation but the few a
  page needs before it logs in.
- 403: a write from another site's page or without the session's CSRF token; any
  operation that is not a read, and the admin's reads.
- 404: a thing the request names does not exist (a path id, an id in the body or query);
  an admin's read on a server without accounts; a listing in `READ_ERRORS`.
- 409: a write that names a revision no longer current, or a name already taken.
- 413: a body larger than the server reads.
- 429: with accounts, a request to a model past the account's hourly quota; any write.
- 422: a request that does not fit its schema (FastAPI's list of field errors), or a
  file or value that cannot be read (the project's error, naming the file and field),
  a stored one too (the listings in `READ_ERRORS`).

tests/server/test_declared_errors.py walks every route and what it calls, and checks that
each error status it can raise is declared here or at the route.

Every error but the field list has one shape, `ErrorOut`: `{"detail": {"message",
"kind", "code", "params"?, "file"?, "field"?, "current_revision"?}}` (the framework's own refusals, such as
a body that does not parse, are given the same shape). What only some routes do is said
at the route: the media types of the files they send (`file_responses`), their event
streams (`event_stream_responses`), and 502 where they ask the model API
(`upstream_error`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field

__all__ = [
    "ERROR_SCHEMA",
    "ErrorDetail",
    "ErrorOut",
    "event_stream_responses",
    "file_responses",
    "install_openapi",
    "upstream_error",
]

READS = ("get", "head", "options")


class ErrorDetail(BaseModel):
    """What went wrong, for a person: the message, its kind, and the file and field."""

    message: str
    kind: str = Field(description="the kind of error: NotFound, Conflict, FormatError, ...")
    code: str | None = Field(
        default=None,
        description="what happened as a stable word a page translates (nothing_to_undo, "
        "name_taken, not_found, ...); `message` is the same in English",
    )
    params: dict[str, str | int] | None = Field(
        default=None, description="the values the code's sentence names (a name, a limit)"
    )
    file: str | None = None
    field: str | None = None
    current_revision: int | None = Field(
        default=None, description="with a conflict: the revision the write should have named"
    )


class ErrorOut(BaseModel):
    """Every error answer but FastAPI's list of field errors."""

    detail: ErrorDetail


ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorOut"}


def file_responses(*media_types: str) -> dict[int | str, dict[str, Any]]:
    """A route's `responses`: its 200 answer is a file of one of these media types."""
    content = {
        media: {"schema": {"type": "object"} if media == "application/json" else _BINARY}
        for media in media_types
    }
    return {200: {"description": "the file", "content": content}}


_BINARY = {"type": "string", "format": "binary"}


def event_stream_responses(*events: str) -> dict[int | str, dict[str, Any]]:
    """A route's `responses`: its 200 answer is a stream of server-sent events of these names,
    each with its position (`id`) and its data as JSON text."""
    event = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$"},
            "event": {"type": "string", "enum": list(events)},
            "data": {"type": "string", "contentMediaType": "application/json"},
        },
        "required": ["event", "data"],
    }
    return {
        200: {
            "description": "server-sent events",
            "content": {"text/event-stream": {"schema": event}},
        }
    }


_DESCRIPTIONS = {
    "400": "the host name is not this server's, or the request was refused",
    "401": "with accounts: no one is logged in (or the session ended)",
    "403": "a write from another site's page or without the session's CSRF token; an admin's task",
    "404": "a thing the request names does not exist",
    "409": "the revision named is no longer current, or the name is taken",
    "413": "the request body is too large",
    "422": "the request does not fit its schema, or a file or value cannot be read",
    "429": "with accounts: the account used up its model requests for the hour",
    "502": "the model API could not be reached, or answered with an error",
}


def upstream_error() -> dict[int | str, dict[str, Any]]:
    """A route's `responses`: it asks the model API, which may be out of reach or refuse."""
    return {502: _error("502")}


def _error(status: str) -> dict[str, Any]:
    return {
        "description": _DESCRIPTIONS[status],
        "content": {"application/json": {"schema": ERROR_SCHEMA}},
    }


def _names_things(operation: dict[str, Any]) -> bool:
    return bool(operation.get("parameters") or operation.get("requestBody"))


# With accounts, what never answers 401 (the rest does without a session; a login with
# a wrong password does too).
NEVER_401 = ("/api/health", "/api/logout")
# Reads only an admin may do (writes document 403 anyway); on a server without accounts
# they answer 404.
ADMIN_READS = ("/api/users", "/api/address-lockouts", "/api/connections/local-models")
# Listings of stored items that name nothing, and what else they may answer: 422 for an
# item stored in a shape that cannot be read, 404 for one naming another that is gone.
READ_ERRORS: dict[str, tuple[str, ...]] = {
    "/api/characters": ("422",),
    "/api/groups": ("422",),
    "/api/quick-replies": ("404", "422"),
    "/api/world-info-settings": ("422",),
}
# Reads of the logged-in account's own: 404 on a server without accounts.
ACCOUNT_READS = ("/api/me/account",)


def _document_errors(path: str, method: str, operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    write = method not in READS
    statuses = ["400"]
    if path not in NEVER_401:
        statuses.append("401")
    if write or path in ADMIN_READS:
        statuses.append("403")
    if write:
        statuses += ["409", "413", "429"]
    if _names_things(operation) or path in ACCOUNT_READS or path in ADMIN_READS:
        statuses.append("404")
    if not write:
        statuses += [status for status in READ_ERRORS.get(path, ()) if status not in statuses]
    for status in statuses:
        responses.setdefault(status, _error(status))
    if _names_things(operation):
        fields = {"$ref": "#/components/schemas/HTTPValidationError"}
        responses["422"] = {
            "description": _DESCRIPTIONS["422"],
            "content": {"application/json": {"schema": {"anyOf": [fields, ERROR_SCHEMA]}}},
        }


def build_schema(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document with the error answers every operation can give."""
    document = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
    )
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for model in (ErrorDetail, ErrorOut):
        components[model.__name__] = model.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
    for path, path_item in document.get("paths", {}).items():
        for method, operation in path_item.items():
            if isinstance(operation, dict) and "responses" in operation:
                _document_errors(path, method, operation)
    return document


def install_openapi(app: FastAPI) -> None:
    """Serve `build_schema(app)` at /openapi.json (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_schema(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
