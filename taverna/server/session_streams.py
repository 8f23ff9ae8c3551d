"""Event streams last only as long as the session that opened them.

A task's event stream (a generation, an import) can stay open for minutes. With
accounts, the session is looked at again every `RECHECK` seconds while the stream is
open: once it has ended (the person logged out elsewhere, an admin disabled the account,
reset its password or deleted it) the stream closes. The run itself goes on; following
it again needs a live session. The check reads the store, so it holds on every worker,
whichever one the admin's request reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from starlette.requests import HTTPConnection

from taverna.services.accounts.service import AccountService

# Seconds between two looks at a stream's session.
RECHECK = 2.0


def _token(connection: HTTPConnection) -> str:
    from taverna.server.accounts import COOKIE

    return connection.cookies.get(COOKIE, "")


async def while_signed_in(
    connection: HTTPConnection, frames: AsyncIterator[str]
) -> AsyncIterator[str]:
    """`frames` as they come, ended once the session of `connection` is over (as it was
    without accounts: never)."""
    accounts: AccountService | None = connection.app.state.context.services.get("accounts")
    if accounts is None:
        async for frame in frames:
            yield frame
        return
    token = _token(connection)

    async def alive() -> bool:
        return await asyncio.to_thread(accounts.session, token) is not None

    source = frames.__aiter__()
    pending: asyncio.Future[str] | None = None
    checked = time.monotonic()
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(source.__anext__())
            left = max(0.0, checked + RECHECK - time.monotonic())
            done, _ = await asyncio.wait({pending}, timeout=left)
            if time.monotonic() - checked >= RECHECK:
                if not await alive():
                    return
                checked = time.monotonic()
            if not done:
                continue
            try:
                frame = pending.result()
            except StopAsyncIteration:
                pending = None
                return
            pending = None
            yield frame
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
