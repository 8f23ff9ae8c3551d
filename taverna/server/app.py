"""The HTTP server: REST + SSE over the services, and the page as static files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from taverna import __version__
from taverna.errors import TavernaError
from taverna.server.context import AppContext
from taverna.server.errors import install_error_handlers

WEB_DIR = Path(str(files("taverna") / "web"))


class PageFiles(StaticFiles):
    """The page's files; never cached across versions without a check (no build step, no hashes)."""

    async def get_response(self, path: str, scope: dict) -> Response:  # type: ignore[override,type-arg]
        response = await super().get_response(path, scope)
        response.headers.setdefault("Cache-Control", "no-cache")
        return response


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
JSON_BODY_LIMIT = 16 * 1024 * 1024


def _refusal(status: int, message: str) -> JSONResponse:
    return JSONResponse({"detail": {"message": message, "kind": "Refused"}}, status_code=status)


def refuse(request: Request, ctx: AppContext) -> JSONResponse | None:
    """Requests the server will not serve, checked before any route runs.

    - A Host the server does not answer to: a web page on another site could otherwise
      reach this local server through DNS rebinding.
    - A write from another site's page (its Origin differs from the Host): without
      accounts there is no session to protect, so the origin is the protection.
    - A JSON body larger than the server reads.
    """
    host = request.headers.get("host", "")
    if ctx.allowed_hosts is not None and urlsplit(f"//{host}").hostname not in ctx.allowed_hosts:
        return _refusal(400, "this server does not answer to that host name")
    if request.method not in SAFE_METHODS:
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != host:
            return _refusal(403, "a request from another site's page is refused")
        length = request.headers.get("content-length", "")
        kind = request.headers.get("content-type", "")
        if (
            kind.startswith("application/json")
            and length.isdigit()
            and int(length) > JSON_BODY_LIMIT
        ):
            return _refusal(413, "the request body is too large")
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
        # Single-user mode: every request acts as the local owner (""). Accounts and
        # sessions will set this from a login; nothing below reads anything else.
        scope.setdefault("state", {})["user"] = ""

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in _PAGE_HEADERS if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(ctx: AppContext) -> FastAPI:
    """The FastAPI application over `ctx`; `ctx` is closed when the app shuts down."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await ctx.open_http()
        try:
            yield
        finally:
            await stop_generations(ctx)
            await ctx.close_http()
            ctx.close()

    app = FastAPI(
        title="taverna",
        version=__version__,
        summary="A role-play frontend for language-model APIs.",
        lifespan=lifespan,
    )
    app.state.context = ctx
    install_error_handlers(app)

    app.add_middleware(SingleUser, ctx=ctx)

    from taverna.server.routes import ROUTERS

    for router in ROUTERS:
        app.include_router(router)

    @app.get("/api/health", tags=["server"])
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.get("/api/me", tags=["server"])
    def me(request: Request) -> dict[str, str]:
        return {"user": request.state.user, "mode": "single-user"}

    app.mount("/", PageFiles(directory=WEB_DIR, html=True), name="page")
    return app
