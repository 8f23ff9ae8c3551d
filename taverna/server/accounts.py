"""Accounts on the HTTP server: who a request acts for, login and logout, the admin's
routes, and the ownership check every API route runs before its own code.

Without accounts (the default: one person on 127.0.0.1) none of this runs and every
request acts as the local owner "". With accounts (`taverna serve --accounts`) a request
to the API needs a session cookie, and a write also needs the session's CSRF token in
the `X-CSRF-Token` header.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field
from starlette.types import Scope

from taverna.errors import Forbidden, NotFound, NotLoggedIn, TavernaError
from taverna.server.context import AppContext, context, current_user
from taverna.services.accounts import MAX_NAME, AccountService, Session
from taverna.services.ownership import DOCUMENT_PARAMS, Ownership

COOKIE = "taverna_session"
CSRF_HEADER = "x-csrf-token"
# API paths a request without a session may reach: the page asks who it is, and logs in.
OPEN_PATHS = frozenset({"/api/health", "/api/me", "/api/login", "/api/logout"})
# Routes that start a generation: each counts against the account's hourly quota.
GENERATING = frozenset({"generate", "edit_and_resend", "start_round", "make_summary"})
# Writes to a chat that add what the person typed: refused when the account's storage is
# full. The others (select, hide, delete, undo, switch) never are, so a full account can
# still tidy up.
GROWING_CHAT_WRITES = frozenset(
    {
        "generate",
        "edit_and_resend",
        "start_round",
        "edit_message",
        "set_authors_note",
        "set_chat_variables",
        "set_chat_lorebook",
        "run_script",
        "branch_from",
        "create_checkpoint",
    }
)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
NOBODY = "\x00nobody"


def session_of(scope: Scope, accounts: AccountService) -> tuple[Session | None, str]:
    """The session a request's cookie names (None if none or ended), and the token."""
    from starlette.requests import HTTPConnection

    token = HTTPConnection(scope).cookies.get(COOKIE, "")
    return accounts.session(token), token


def gate(scope: Scope, accounts: AccountService) -> TavernaError | None:
    """Set who a request acts for; the error to answer instead, if it may not go on."""
    session, _ = session_of(scope, accounts)
    state = scope.setdefault("state", {})
    # Nobody (no session) acts as an id no row has: never as the single user "".
    state["user"] = session.account.id if session else NOBODY
    state["session"] = session
    path: str = scope.get("path", "")
    if not path.startswith("/api/") or path in OPEN_PATHS:
        return None
    if session is None:
        return NotLoggedIn("log in first", code="log_in_first")
    method = scope.get("method", "GET")
    if method not in SAFE_METHODS:
        from starlette.datastructures import Headers

        if Headers(scope=scope).get(CSRF_HEADER, "") != session.csrf:
            return Forbidden(
                "this write lacks the session's CSRF token (reload the page)",
                code="csrf_token_missing",
            )
    return None


async def owned(request: Request) -> None:
    """A dependency of every API route: with accounts, what a path names by id must be the
    requesting account's (else 404, as if it did not exist); a generation counts against
    the hourly quota; a write may not grow a full library."""
    ctx: AppContext = request.app.state.context
    accounts: AccountService | None = ctx.services.get("accounts")
    if accounts is None:
        return
    user = current_user(request)
    params = request.path_params
    mine = ctx.ownership(user)
    if "chat_id" in params:
        mine.chat(str(params["chat_id"]))
    for name in DOCUMENT_PARAMS.intersection(params):
        mine.document(str(params[name]), name)
    if "task_id" in params:
        _require_task(ctx, mine, str(params["task_id"]))
    if "round_id" in params:
        try:
            found = ctx.generation.round_state(str(params["round_id"]))
        except NotFound:
            found = None
        if found is not None:
            mine.chat(found.chat_id)
    if request.method not in SAFE_METHODS:
        name = getattr(request.scope.get("route"), "name", "")
        declared = request.headers.get("content-length", "")
        grows = "chat_id" not in params or name in GROWING_CHAT_WRITES
        if declared.isdigit() and int(declared) > 0 and grows:
            # counting may read every message of the account: off the event loop
            await asyncio.to_thread(accounts.check_storage, user, int(declared))
        if request.method == "DELETE":
            accounts.forget_usage(user)  # counted afresh at the next write
        if name in GENERATING:
            accounts.count_generation(user)


def _require_task(ctx: AppContext, mine: Ownership, task_id: str) -> None:
    try:
        run = ctx.generation.registry.get(task_id)
    except TavernaError:
        jobs = ctx.services.get("imports")
        job = None
        if jobs is not None:
            try:
                job = jobs.get(task_id)
            except TavernaError:
                job = None
        if job is not None and getattr(job, "owner", "") != mine.owner:
            raise NotFound("no such task", field="task_id", code="no_such_task") from None
        return
    try:
        mine.chat(run.chat_id)
    except NotFound:
        raise NotFound("no such task", field="task_id", code="no_such_task") from None


# ----------------------------------------------------------------------- routes

router = APIRouter(tags=["accounts"])


class LoginIn(BaseModel):
    name: str = Field(min_length=1, max_length=MAX_NAME)
    password: str = Field(min_length=1, max_length=1024)


class MeOut(BaseModel):
    """Who a request acts for; `name`, `admin` and `csrf` only with accounts."""

    user: str
    mode: str
    name: str | None = None
    admin: bool | None = None
    csrf: str | None = None


class AccountIn(BaseModel):
    name: str = Field(min_length=1, max_length=MAX_NAME)
    password: str = Field(min_length=1, max_length=1024)
    admin: bool = False
    empty: bool = Field(
        default=False, description="start the library empty (no presets, no samples)"
    )


class PasswordIn(BaseModel):
    password: str = Field(min_length=1, max_length=1024)


class QuotaIn(BaseModel):
    storage_bytes: int | None = Field(default=None, ge=0)
    generations_per_hour: int | None = Field(default=None, ge=0)


class AccountOut(BaseModel):
    name: str
    admin: bool
    storage_bytes: int | None
    generations_per_hour: int | None


def _accounts(ctx: AppContext) -> AccountService:
    accounts: AccountService | None = ctx.services.get("accounts")
    if accounts is None:
        raise NotFound(
            "this server runs without accounts", code="this_server_runs_without_accounts"
        )
    return accounts


def _admin(request: Request) -> None:
    if "accounts" not in request.app.state.context.services:
        raise Forbidden(
            "this server runs without accounts: there is no one to manage",
            code="no_accounts_to_manage",
        )
    session: Session | None = getattr(request.state, "session", None)
    if session is None or not session.account.admin:
        raise Forbidden("only an admin may do this", code="only_admin_may_do_this")


def _out(account: Any) -> AccountOut:
    return AccountOut(
        name=account.name,
        admin=account.admin,
        storage_bytes=account.quota_bytes,
        generations_per_hour=account.quota_generations,
    )


@router.get("/api/me", response_model=MeOut, response_model_exclude_none=True)
def me(request: Request, ctx: AppContext = Depends(context)) -> MeOut:
    """Who the page acts for: in single-user mode the local owner; with accounts the
    logged-in account and its CSRF token (401 when nobody is logged in)."""
    if "accounts" not in ctx.services:
        return MeOut(user=current_user(request), mode="single-user")
    session: Session | None = getattr(request.state, "session", None)
    if session is None:
        raise NotLoggedIn("log in first", code="log_in_first")
    account = session.account
    return MeOut(
        user=account.id, mode="accounts", name=account.name, admin=account.admin, csrf=session.csrf
    )


@router.post("/api/login", response_model=MeOut)
def login(
    body: LoginIn, request: Request, response: Response, ctx: AppContext = Depends(context)
) -> MeOut:
    address = request.client.host if request.client else ""
    token, session = _accounts(ctx).login(body.name, body.password, address=address)
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=30 * 24 * 3600,
        path="/",
    )
    account = session.account
    return MeOut(
        user=account.id, mode="accounts", name=account.name, admin=account.admin, csrf=session.csrf
    )


@router.post("/api/logout", status_code=204)
def logout(request: Request, ctx: AppContext = Depends(context)) -> Response:
    """End the session (without accounts there is none: nothing to do)."""
    accounts: AccountService | None = ctx.services.get("accounts")
    token = request.cookies.get(COOKIE, "")
    if token and accounts is not None:
        accounts.logout(token)
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/api/users", response_model=list[AccountOut], dependencies=[Depends(_admin)])
def list_users(ctx: AppContext = Depends(context)) -> list[AccountOut]:
    return [_out(a) for a in _accounts(ctx).users()]


@router.post(
    "/api/users", response_model=AccountOut, status_code=201, dependencies=[Depends(_admin)]
)
def add_user(body: AccountIn, ctx: AppContext = Depends(context)) -> AccountOut:
    """A new account, its library started with the product's presets and samples (unless
    `empty`), as a new install's is."""
    account = _accounts(ctx).add(body.name, body.password, admin=body.admin)
    if not body.empty:
        ctx.welcome_account(account.id)
    return _out(account)


@router.put(
    "/api/users/{account}/password", response_model=AccountOut, dependencies=[Depends(_admin)]
)
def reset_password(
    account: str, body: PasswordIn, ctx: AppContext = Depends(context)
) -> AccountOut:
    return _out(_accounts(ctx).set_password(account, body.password))


@router.put("/api/users/{account}/quota", response_model=AccountOut, dependencies=[Depends(_admin)])
def set_quota(account: str, body: QuotaIn, ctx: AppContext = Depends(context)) -> AccountOut:
    return _out(
        _accounts(ctx).set_quota(
            account,
            storage_bytes=body.storage_bytes,
            generations_per_hour=body.generations_per_hour,
        )
    )
