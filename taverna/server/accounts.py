"""Accounts on the HTTP server: who a request acts for, login and logout, the admin's
routes, and the ownership check every API route runs before its own code.

Without accounts (the default: one person on 127.0.0.1) none of this runs and every
request acts as the local owner "". With accounts (`taverna serve --accounts`) a request
to the API needs a session cookie, and a write also needs the session's CSRF token in
the `X-CSRF-Token` header.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field
from starlette.types import Scope

from taverna.errors import Forbidden, NotFound, NotLoggedIn, TavernaError
from taverna.server.client_address import client_address
from taverna.server.context import AppContext, context, current_user
from taverna.server.schemas import TaskOut
from taverna.services.accounts.account_import import UserFolderImport
from taverna.services.accounts.ownership import DOCUMENT_PARAMS, Ownership
from taverna.services.accounts.service import (
    MAX_NAME,
    AccountService,
    AccountStatus,
    AddressLockout,
    Session,
)
from taverna.services.interchange.report import Progress

COOKIE = "taverna_session"
CSRF_HEADER = "x-csrf-token"
# API paths a request without a session may reach: the page asks who it is, and logs in.
OPEN_PATHS = frozenset({"/api/health", "/api/me", "/api/login", "/api/logout"})
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
    requesting account's (else 404, as if it did not exist); a write may not grow a full
    library. (Each request to a model counts against the hourly quota where it is sent:
    `services/connections/model_gate.py`.)"""
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
    """An account as its admin sees it: its quotas (None: no limit), what it uses of them,
    whether it is disabled, and the seconds its name is still locked out of logging in
    after failed tries (0: not locked)."""

    name: str
    admin: bool
    disabled: bool = False
    storage_bytes: int | None
    generations_per_hour: int | None
    used_bytes: int = 0
    generations_last_hour: int = 0
    locked_seconds: int = 0


class AddressLockoutOut(BaseModel):
    """A client address with failed logins in the last window: how many, and the seconds
    it is still locked out of logging in (0: not locked)."""

    address: str
    failures: int
    locked_seconds: int


class DisabledIn(BaseModel):
    disabled: bool


class RemovedOut(BaseModel):
    """What went with a deleted account."""

    name: str
    chats: int
    documents: int


class MyPasswordIn(BaseModel):
    old_password: str = Field(min_length=1, max_length=1024)
    password: str = Field(min_length=1, max_length=1024)


class MyAccountOut(BaseModel):
    """The logged-in account's own limits and what it uses of them (None: no limit)."""

    name: str
    admin: bool
    storage_bytes: int | None
    used_bytes: int
    generations_per_hour: int | None
    generations_last_hour: int


class ImportAccountsIn(BaseModel):
    path: str = Field(
        min_length=1,
        max_length=4096,
        description="a SillyTavern folder on the server machine (the install, its data/ "
        "folder, or one user's folder), as `taverna import PATH --accounts` takes",
    )
    accounts: dict[str, str] = Field(
        default_factory=dict, description="user folder handle -> account name, where they differ"
    )


class UserFolderOut(BaseModel):
    handle: str
    account: str


class ImportAccountsOut(BaseModel):
    task: TaskOut
    folders: list[UserFolderOut]


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


def _acting(request: Request) -> str:
    session: Session | None = getattr(request.state, "session", None)
    return session.account.id if session else ""


def _out(status: AccountStatus) -> AccountOut:
    account = status.account
    return AccountOut(
        name=account.name,
        admin=account.admin,
        disabled=account.disabled,
        storage_bytes=account.quota_bytes,
        generations_per_hour=account.quota_generations,
        used_bytes=status.stored_bytes,
        generations_last_hour=status.generations_last_hour,
        locked_seconds=status.locked_seconds,
    )


def _set_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=30 * 24 * 3600,
        path="/",
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
    address = client_address(request, ctx.trusted_proxies)
    token, session = _accounts(ctx).login(body.name, body.password, address=address)
    _set_cookie(request, response, token)
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


@router.get("/api/me/account", response_model=MyAccountOut)
def my_account(request: Request, ctx: AppContext = Depends(context)) -> MyAccountOut:
    """The logged-in account's limits and what it uses of them."""
    accounts = _accounts(ctx)
    status = accounts.status_of(current_user(request))
    account = status.account
    return MyAccountOut(
        name=account.name,
        admin=account.admin,
        storage_bytes=account.quota_bytes,
        used_bytes=status.stored_bytes,
        generations_per_hour=account.quota_generations,
        generations_last_hour=status.generations_last_hour,
    )


@router.put("/api/me/password", response_model=MeOut)
def change_my_password(
    body: MyPasswordIn, request: Request, response: Response, ctx: AppContext = Depends(context)
) -> MeOut:
    """A new password for the logged-in account, given its current one: every session of
    the account ends (a stolen one too) and this browser gets a new one."""
    accounts = _accounts(ctx)
    account = accounts.change_password(current_user(request), body.old_password, body.password)
    token, session = accounts.new_session(account)
    _set_cookie(request, response, token)
    return MeOut(
        user=account.id, mode="accounts", name=account.name, admin=account.admin, csrf=session.csrf
    )


@router.get("/api/users", response_model=list[AccountOut], dependencies=[Depends(_admin)])
def list_users(ctx: AppContext = Depends(context)) -> list[AccountOut]:
    """Every account with its quotas, what it uses of them, and whether it is disabled or
    locked out after failed logins."""
    return [_out(s) for s in _accounts(ctx).statuses()]


@router.post(
    "/api/users", response_model=AccountOut, status_code=201, dependencies=[Depends(_admin)]
)
def add_user(body: AccountIn, ctx: AppContext = Depends(context)) -> AccountOut:
    """A new account, its library started with the product's presets and samples (unless
    `empty`), as a new install's is."""
    accounts = _accounts(ctx)
    account = accounts.add(body.name, body.password, admin=body.admin)
    if not body.empty:
        ctx.welcome_account(account.id)
    return _out(accounts.status(account))


@router.post(
    "/api/users/import",
    response_model=ImportAccountsOut,
    status_code=202,
    dependencies=[Depends(_admin)],
)
async def import_accounts(
    body: ImportAccountsIn, request: Request, ctx: AppContext = Depends(context)
) -> ImportAccountsOut:
    """Import a SillyTavern install's user folders (data/<handle>/) from a folder on the
    server machine into the accounts of the same names (or those `accounts` names), as
    `taverna import PATH --accounts` does; follow it at `/api/tasks/{id}/events`. A folder
    with no account is skipped and said so."""
    from taverna.server.imports import import_jobs
    from taverna.services.accounts.account_import import check_mapping, user_folders

    root = Path(body.path).expanduser()
    if not root.is_absolute():
        raise TavernaError(
            "give the folder's whole path on the server machine (from /)",
            file=body.path,
            field="path",
            code="folder_path_not_absolute",
        )
    folders = await asyncio.to_thread(user_folders, root)
    check_mapping(root, folders, body.accounts, field="accounts")

    def work(publish: Callable[[str, dict[str, Any]], None]) -> dict[str, Any]:
        current = {"handle": "", "index": 0, "count": len(folders)}

        def starting(index: int, count: int, handle: str) -> None:
            current.update(handle=handle, index=index, count=count)
            publish("progress", {"folder": handle, "folders": count, "folder_index": index})

        def progress(step: Progress) -> None:
            publish(
                "progress",
                {
                    "done": step.done,
                    "total": step.total,
                    "item": _relative(step.current, root),
                    "folder": current["handle"],
                    "folders": current["count"],
                    "folder_index": current["index"],
                },
            )

        done = ctx.import_accounts(
            root, accounts=body.accounts, progress=progress, starting=starting
        )
        return {"folders": [_folder_json(item) for item in done]}

    job = import_jobs(ctx.services).run(_acting(request), work)
    return ImportAccountsOut(
        task=TaskOut(id=job.id, kind="import", status="running"),
        folders=[
            UserFolderOut(handle=handle, account=body.accounts.get(handle, handle))
            for handle, _ in folders
        ],
    )


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def _folder_json(item: UserFolderImport) -> dict[str, Any]:
    from taverna.server.imports import report_json

    return {
        "handle": item.handle,
        "account": item.account,
        "skipped": (
            {"reason": item.skipped, "code": item.code or None, "params": dict(item.params)}
            if item.report is None
            else None
        ),
        "report": report_json(item.report, item.folder) if item.report is not None else None,
    }


@router.put(
    "/api/users/{account}/password", response_model=AccountOut, dependencies=[Depends(_admin)]
)
def reset_password(
    account: str, body: PasswordIn, ctx: AppContext = Depends(context)
) -> AccountOut:
    """A new password for an account; its sessions end."""
    accounts = _accounts(ctx)
    return _out(accounts.status(accounts.set_password(account, body.password)))


@router.put("/api/users/{account}/quota", response_model=AccountOut, dependencies=[Depends(_admin)])
def set_quota(account: str, body: QuotaIn, ctx: AppContext = Depends(context)) -> AccountOut:
    """An account's limits: library size in bytes, generations an hour (null: none)."""
    accounts = _accounts(ctx)
    changed = accounts.set_quota(
        account,
        storage_bytes=body.storage_bytes,
        generations_per_hour=body.generations_per_hour,
    )
    return _out(accounts.status(changed))


@router.put(
    "/api/users/{account}/disabled", response_model=AccountOut, dependencies=[Depends(_admin)]
)
def set_disabled(
    account: str, body: DisabledIn, request: Request, ctx: AppContext = Depends(context)
) -> AccountOut:
    """Disable an account (its data kept; its sessions end and it may not log in) or
    enable it again. An admin may not disable their own account."""
    accounts = _accounts(ctx)
    changed = accounts.set_disabled(account, body.disabled, acting=_acting(request))
    return _out(accounts.status(changed))


@router.delete(
    "/api/users/{account}/lockout", response_model=AccountOut, dependencies=[Depends(_admin)]
)
def unlock(account: str, ctx: AppContext = Depends(context)) -> AccountOut:
    """Forget the failed logins of an account's name: it may log in again at once (a
    client address locked out keeps its own wait)."""
    accounts = _accounts(ctx)
    found = accounts.get(account)
    accounts.unlock(found.name)
    return _out(accounts.status(found))


def _lockout_out(item: AddressLockout) -> AddressLockoutOut:
    return AddressLockoutOut(
        address=item.address, failures=item.failures, locked_seconds=item.locked_seconds
    )


@router.get(
    "/api/address-lockouts",
    response_model=list[AddressLockoutOut],
    dependencies=[Depends(_admin)],
)
def address_lockouts(ctx: AppContext = Depends(context)) -> list[AddressLockoutOut]:
    """The client addresses with failed logins in the last window (as the server tells
    clients apart: their own, or behind a trusted proxy the one it names), locked ones
    first."""
    return [_lockout_out(item) for item in _accounts(ctx).address_lockouts()]


@router.delete(
    "/api/address-lockouts/{address}",
    response_model=list[AddressLockoutOut],
    dependencies=[Depends(_admin)],
)
def unlock_address(address: str, ctx: AppContext = Depends(context)) -> list[AddressLockoutOut]:
    """Forget the failed logins from a client address: it may log in again at once (the
    names tried from it keep their own wait). The addresses left."""
    accounts = _accounts(ctx)
    known = {item.address for item in accounts.address_lockouts()}
    if address not in known:
        raise NotFound(
            "no failed logins from this address",
            field="address",
            code="no_failed_logins_from_address",
            params={"address": address},
        )
    accounts.unlock_address(address)
    return [_lockout_out(item) for item in accounts.address_lockouts()]


@router.delete("/api/users/{account}", response_model=RemovedOut, dependencies=[Depends(_admin)])
def delete_user(account: str, request: Request, ctx: AppContext = Depends(context)) -> RemovedOut:
    """Delete an account and everything it owns (characters, chats, lorebooks, presets,
    personas, pictures, connections) for good; its sessions end. An admin may not delete
    their own account."""
    accounts = _accounts(ctx)
    found = accounts.get(account)
    removed = accounts.remove(found.name, acting=_acting(request))
    return RemovedOut(name=found.name, chats=removed.chats, documents=removed.documents)
