"""Token counts: a memo of each stored text's length per tokenizer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from taverna.store import schema as t
from taverna.store.sql.base import SqlBase
from taverna.store.sql.contents import content_hash


class SqlTokenCounts(SqlBase):
    """Stored token counts."""

    def token_counts(self, tokenizer: str, texts: Sequence[str]) -> dict[str, int]:
        by_hash = {content_hash(text): text for text in texts if text}
        found: dict[str, int] = {}
        keys = sorted(by_hash)
        with self._read() as conn:
            for start in range(0, len(keys), 500):
                rows = conn.execute(
                    sa.select(t.token_counts.c.hash, t.token_counts.c.count).where(
                        t.token_counts.c.tokenizer == tokenizer,
                        t.token_counts.c.hash.in_(keys[start : start + 500]),
                    )
                )
                found.update((by_hash[h], c) for h, c in rows)
        return found

    def save_token_counts(self, tokenizer: str, counts: Mapping[str, int]) -> None:
        by_hash = {content_hash(text): count for text, count in counts.items() if text}
        if not by_hash:
            return
        keys = sorted(by_hash)
        try:
            with self.engine.begin() as conn:
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    # Only texts the store holds get a count; one already counted stays.
                    stored = set(
                        conn.execute(
                            sa.select(t.contents.c.hash).where(t.contents.c.hash.in_(chunk))
                        ).scalars()
                    )
                    stored -= set(
                        conn.execute(
                            sa.select(t.token_counts.c.hash).where(
                                t.token_counts.c.tokenizer == tokenizer,
                                t.token_counts.c.hash.in_(chunk),
                            )
                        ).scalars()
                    )
                    if stored:
                        conn.execute(
                            t.token_counts.insert(),
                            [
                                {"hash": h, "tokenizer": tokenizer, "count": by_hash[h]}
                                for h in sorted(stored)
                            ],
                        )
        except sa.exc.IntegrityError:
            # Another process stored the same count, or the text went meanwhile: counts
            # are a memo, so losing one only means counting it again.
            pass
