"""Sent prompts: the record of the prompt a reply was generated from, kept by message."""

from __future__ import annotations

import sqlalchemy as sa

from taverna.errors import NotFound
from taverna.store import schema as t
from taverna.store.sql.base import SqlBase


class SqlSentPrompts(SqlBase):
    """A message's prompt as it was sent."""

    def save_sent_prompt(self, chat_id: str, node_id: str, record: bytes) -> None:
        with self.engine.begin() as conn:
            found = conn.execute(
                sa.select(t.nodes.c.id).where(t.nodes.c.id == node_id, t.nodes.c.chat_id == chat_id)
            ).first()
            if found is None:
                raise NotFound(
                    f"no message {node_id} in chat {chat_id}",
                    field="node_id",
                    code="no_message_in_chat",
                    params={"node_id": str(node_id), "chat_id": str(chat_id)},
                )
            conn.execute(t.sent_prompts.delete().where(t.sent_prompts.c.node_id == node_id))
            conn.execute(
                t.sent_prompts.insert().values(node_id=node_id, chat_id=chat_id, record=record)
            )

    def sent_prompt(self, chat_id: str, node_id: str) -> bytes | None:
        with self._read() as conn:
            found = conn.execute(
                sa.select(t.sent_prompts.c.record).where(
                    t.sent_prompts.c.node_id == node_id, t.sent_prompts.c.chat_id == chat_id
                )
            ).scalar()
        return bytes(found) if found is not None else None
