"""The one door every request to a model goes through, and the account's hourly quota
it keeps.

A turn, a swipe, a continue, an impersonation, each round of a tool loop, each speaker of
a group round, a script's `/gen` and `/genraw`, a Quick Reply's automation, a summary, a
plugin's generation and a connection's test all open their request here
(`ConnectionService.stream`), for the account whose connection they use. Each request
counts once against that account's quota (a reply with two tool rounds is three), and
one past the quota is refused with `QuotaExceeded` before anything is sent. A test reads
the source to prove no other module opens a model stream.

The single user (owner "") and owners that are no account have no quota.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from taverna.errors import NotFound, QuotaExceeded
from taverna.providers.events import Event
from taverna.providers.request import HttpRequest
from taverna.providers.transport import Timeouts, stream_events
from taverna.providers.wire import StreamParser
from taverna.store.repository import Account, Store

__all__ = ["QUOTA_WINDOW", "ModelGate"]

QUOTA_WINDOW = timedelta(hours=1)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ModelGate:
    """Counts each model request against its account's hourly quota; refuses past it."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self.store = store
        self.clock = clock

    def _account(self, owner: str) -> Account | None:
        if not owner:
            return None
        try:
            return self.store.account(id=owner)
        except NotFound:
            return None  # a library's owner that is no account (a folder without accounts)

    def check(self, owner: str) -> None:
        """QuotaExceeded if `owner` has no request left this hour (nothing is counted): a
        turn is refused before it starts, so the page gets its 429."""
        account = self._account(owner)
        if account is None or account.quota_generations is None:
            return
        used = self.store.generations_since(owner, self.clock() - QUOTA_WINDOW)
        if used >= account.quota_generations:
            raise _refusal(account, used)

    def admit(self, owner: str) -> None:
        """Count one model request of `owner`; QuotaExceeded (and nothing counted) when
        its hour's quota is used up."""
        account = self._account(owner)
        if account is None:
            return
        limit = account.quota_generations
        # the store counts one request of an account at a time, across processes (its
        # row is locked), so two at once never both take the last place
        used = self.store.count_generation(owner, self.clock() - QUOTA_WINDOW, limit)
        if limit is not None and used >= limit:
            raise _refusal(account, used)

    async def stream(
        self,
        owner: str,
        request: HttpRequest,
        parser: StreamParser,
        *,
        client: aiohttp.ClientSession | None = None,
        secret: str = "",
        timeouts: Timeouts = Timeouts(),
        **transport: Any,
    ) -> AsyncIterator[Event]:
        """Admit the request for `owner`, then send it and yield its answer's events (see
        `stream_events`, which gets `transport`'s other options). QuotaExceeded is raised,
        not yielded: nothing was sent."""
        if owner:
            # a write to the store: off the event loop, which carries every other stream
            await asyncio.to_thread(self.admit, owner)
        async for event in stream_events(
            request, parser, client=client, secret=secret, timeouts=timeouts, **transport
        ):
            yield event


def _refusal(account: Account, used: int) -> QuotaExceeded:
    limit = account.quota_generations
    return QuotaExceeded(
        f"{account.name} has used {used} of {limit} model requests this hour; "
        "try again later or ask an admin for more",
        code="generation_quota_used",
        params={"name": str(account.name), "used": str(used), "limit": str(limit)},
    )
