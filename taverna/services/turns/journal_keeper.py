"""Moving what waits in the journal (replies and drafts the database could not take)
into the database: on a timer while anything waits, and when a page looks at a chat."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from taverna.errors import TavernaError
from taverna.services.chats.service import ChatService
from taverna.services.turns.drafts import Drafts
from taverna.services.turns.journal import ReplyJournal, Unsettled
from taverna.services.turns.records import store_reply

logger = logging.getLogger(__name__)

# Seconds between two looks at the journal of replies the database could not take.
JOURNAL_EVERY = 3.0


class JournalKeeper:
    """Replays a journal into the database (none: nothing ever waits)."""

    def __init__(
        self, journal: ReplyJournal | None, chats: ChatService, drafts: Drafts, writer: Executor
    ) -> None:
        """`writer`: the thread replies are stored on (a replay runs there too)."""
        self.journal = journal
        self.chats = chats
        self.drafts = drafts
        self.writer = writer
        # Told of each chat a journalled reply was moved into (its backup is written).
        self.on_moved: Callable[[str], None] | None = None

    def move_waiting(self) -> tuple[int, int]:
        """Move what waits in the journal into the database (see `journal`): how many
        entries were moved and how many wait still. Run on the reply writer's thread."""
        if self.journal is None:
            return 0, 0
        return self.journal.replay(self._move)

    def waiting_for(self, chat_id: str) -> list[dict[str, Any]]:
        """A chat's replies and drafts that wait in the journal for the database, after
        one more try to move them there (the caller has just read the database)."""
        if self.journal is None or not self.journal.pending(chat_id):
            return []
        try:
            self.move_waiting()
        except Exception:
            logger.exception("the journal could not be replayed")
        return self.journal.pending(chat_id)

    async def keep_moving(self, every: float = JOURNAL_EVERY) -> None:
        """Replay the journal now and every `every` seconds while anything waits there."""
        loop = asyncio.get_running_loop()
        if self.journal is not None:
            try:
                # its space is reserved now, while the disk has room
                await asyncio.to_thread(self.journal.prepare)
            except OSError as exc:
                logger.warning("the journal of replies could not be made: %s", exc)
        while self.journal is not None:
            if self.journal.has_pending():
                try:
                    await loop.run_in_executor(self.writer, self.move_waiting)
                except Exception:
                    logger.exception("the journal could not be replayed")
            await asyncio.sleep(every)

    def _move(self, entry: dict[str, Any]) -> None:
        """Store one journal entry: a reply where it goes (or, when the chat moved on so
        it fits no more, as a draft), a draft as a draft."""
        try:
            if entry.get("op") == "draft":
                self.drafts.put_draft(entry)
            else:
                store_reply(entry, self.chats, self.drafts)
        except TavernaError as exc:
            try:
                self.drafts.put_draft({**entry, "reason": f"saved late: {exc.message}"})
            except TavernaError as refused:
                logger.error("journal entry %s dropped: %s", entry["id"], refused.message)
                return
            except Exception as away:
                raise Unsettled(f"{type(away).__name__}: {away}") from away
        except Exception as exc:
            raise Unsettled(f"{type(exc).__name__}: {exc}") from exc
        if self.on_moved is not None:
            with contextlib.suppress(Exception):
                self.on_moved(entry["chat_id"])
