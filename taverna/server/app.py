"""The HTTP server: REST + SSE over the services, and the page as static files."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taverna import __version__
from taverna.errors import TavernaError
from taverna.server.accounts import gate, owned
from taverna.server.accounts import router as accounts_routes
from taverna.server.context import AppContext
from taverna.server.cost_probe import start_from_environment
from taverna.server.errors import body_too_large, error_body, install_error_handlers, status_of
from taverna.server.openapi import install_openapi
from taverna.server.page_files import PageFiles

WEB_DIR = Path(str(files("taverna") / "web"))


# The page loads nothing from elsewhere: scripts, styles and images all come from here.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


async def stop_generations(ctx: AppContext) -> None:
    """On shutdown, stop what still streams: its text is kept as a draft, nothing is lost."""
    service = ctx.services.get("generation")
    if service is None:
        return
    for run_id in list(ctx.services.get("runs", ())):
        try:
            run = service.registry.get(run_id)
        except TavernaError:
            continue
        if not run.done:
            await service.stop(run_id)


SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
DEFAULT_PORTS = {"http": 80, "https": 443}
# What a multipart body adds to the files it carries (boundaries, part headers).
UPLOAD_FRAMING = 1024 * 1024
FOLDER_FRAMING = 64 * 1024 * 1024


def _refusal(status: int, message: str) -> JSONResponse:
    return JSONResponse({"detail": {"message": message, "kind": "Refused"}}, status_code=status)


def origin_of(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a web origin, the port filled in; None when unreadable."""
    try:
        parts = urlsplit(f"//{netloc}")
        port = parts.port
    except ValueError:
        return None
    scheme = scheme.lower()
    if not parts.hostname or scheme not in DEFAULT_PORTS:
        return None
    return scheme, parts.hostname, port if port is not None else DEFAULT_PORTS[scheme]


def same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether a request's `Origin` header names this server as the request reached it:
    the same scheme, host and port."""
    parts = urlsplit(origin)
    mine = origin_of(scheme, host)
    return mine is not None and origin_of(parts.scheme, parts.netloc) == mine


def refuse(request: Request, ctx: AppContext) -> JSONResponse | None:
    """Requests the server will not serve, checked before any route runs.

    - A Host the server does not answer to: a web page on another site could otherwise
      reach this local server through DNS rebinding.
    - A write from another site's page (its Origin is not this server's scheme, host and
      port): without accounts there is no session to protect, so the origin is the
      protection.
    """
    host = request.headers.get("host", "")
    if ctx.allowed_hosts is not None and urlsplit(f"//{host}").hostname not in ctx.allowed_hosts:
        return _refusal(400, "this server does not answer to that host name")
    if request.method not in SAFE_METHODS:
        origin = request.headers.get("origin")
        if origin and not same_origin(origin, request.url.scheme, host):
            return _refusal(403, "a request from another site's page is refused")
    return None


_PAGE_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


class SingleUser:
    """Every request, before any route: refuse what the server will not serve, act as the
    local owner, and send the page's security headers.

    Plain ASGI rather than a `BaseHTTPMiddleware`, which costs each request a task and a
    stream of its own (a millisecond a turn, on the path to the model).
    """

    def __init__(self, app: ASGIApp, ctx: AppContext) -> None:
        self.app = app
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = refuse(Request(scope), self.ctx)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        accounts = self.ctx.services.get("accounts")
        if accounts is None:
            # Single-user mode: every request acts as the local owner ("").
            scope.setdefault("state", {})["user"] = ""
        else:
            # With accounts: the session's account, or an error (401, or 403 for a write
            # without the session's CSRF token).
            refused = await asyncio.to_thread(gate, scope, accounts)
            if refused is not None:
                response = JSONResponse(error_body(refused), status_code=status_of(refused))
                await response(scope, receive, send)
                return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in _PAGE_HEADERS if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class TavernaApp(FastAPI):
    """The FastAPI app, refusing at once a request that declares a body longer than its
    route reads (FastAPI counts every body as it arrives and answers 413 itself, but in
    plain text when the length was declared)."""

    # The routes that read more than the app's limit, with theirs.
    route_limits: tuple[tuple[BaseRoute, int], ...] = ()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.max_body_size is not None:
            declared = Headers(scope=scope).get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_body_size:
                limit = self.body_limit_of(scope)
                if int(declared) > limit:
                    scope[MAX_BODY_SIZE_SCOPE_KEY] = limit
                    error = body_too_large(Request(scope))
                    response = JSONResponse(
                        error_body(error), status_code=413, headers={"Connection": "close"}
                    )
                    await response(scope, receive, send)
                    return
        await super().__call__(scope, receive, send)

    def body_limit_of(self, scope: Scope) -> int:
        """The body limit of the route a request goes to."""
        assert self.max_body_size is not None
        for route, limit in self.route_limits:
            if route.matches(scope)[0] is Match.FULL:
                return limit
        return self.max_body_size


def create_app(ctx: AppContext) -> FastAPI:
    """The FastAPI application over `ctx`; `ctx` is closed when the app shuts down."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        probe = start_from_environment()  # off (None) unless a benchmark asks for it
        await ctx.open_http()
        try:
            yield
        finally:
            if probe is not None:
                probe.stop()
            await stop_generations(ctx)
            await ctx.close_http()
            ctx.close()

    app = TavernaApp(
        title="taverna",
        version=__version__,
        summary="A role-play frontend for language-model APIs.",
        lifespan=lifespan,
        # Every request body is counted as it arrives, whatever its framing (a length,
        # chunks, any content type or none): past the limit the server answers 413.
        max_body_size=ctx.body_limit,
    )
    app.state.context = ctx
    install_error_handlers(app)

    app.add_middleware(SingleUser, ctx=ctx)

    from taverna.server.routes import FOLDER_UPLOADS, ROUTERS, UPLOADS

    # Every API route first checks that what its path names is the account's own.
    guarded = [Depends(owned)]
    app.include_router(accounts_routes)
    for router in ROUTERS:
        app.include_router(router, dependencies=guarded)
    route_limits: list[tuple[BaseRoute, int]] = []
    for routers, limit in (
        (UPLOADS, ctx.upload_limit + UPLOAD_FRAMING),
        (FOLDER_UPLOADS, ctx.folder_upload_limit + FOLDER_FRAMING),
    ):
        for router in routers:
            app.include_router(router, max_body_size=limit, dependencies=guarded)
            route_limits += [(route, limit) for route in router.routes]
    app.route_limits = tuple(route_limits)

    @app.get("/api/health", tags=["server"])
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    app.mount("/", PageFiles(directory=WEB_DIR, html=True), name="page")
    install_openapi(app)
    return app
