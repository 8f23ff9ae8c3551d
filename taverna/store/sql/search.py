"""Message search: every stored text in an index, folded (see `taverna.model.search_text`).

SQLite keeps the folded texts in an FTS5 table with the `trigram` tokenizer, numbered by
`search_texts`; a word of three or more characters is looked up in the index, a shorter
one (two Chinese characters, say) is matched by LIKE over the indexed texts. PostgreSQL
keeps them in `search_texts` and matches by LIKE, which its `pg_trgm` GIN index serves
where the extension exists (migration 0009). Either way a text is indexed once however
many messages share it, and leaves the index with its last message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from taverna.model.search_text import fold
from taverna.store.repository import MessageHit
from taverna.store.sql.base import SqlBase

# The index's tables (their shape differs by database, so `schema` does not declare them):
# `search_texts`, and on SQLite the FTS5 table `search_index` with its own tables.
SEARCH_TABLES = ("search_texts", "search_index")
# The shortest word the trigram index can look up by itself.
_TRIGRAM = 3


# Built once: a message's write indexes its text.
_NUMBER_TEXT = sa.text("INSERT INTO search_texts (hash) VALUES (:hash)")
_INDEX_NUMBERED = sa.text("INSERT INTO search_index (rowid, text) VALUES (:id, :text)")
# A text deleted and stored again meanwhile may be indexed already.
_INDEX_POSTGRES = sa.text(
    "INSERT INTO search_texts (hash, text) VALUES (:hash, :text) ON CONFLICT (hash) DO NOTHING"
)


# PostgreSQL: a new text stored and indexed in one statement; its key comes back if it
# was new (a text stored already is indexed already).
_ADD_INDEXED_POSTGRES = sa.text(
    """
    WITH added AS (
        INSERT INTO contents (hash, text) VALUES (:hash, :text)
        ON CONFLICT DO NOTHING RETURNING hash
    ), indexed AS (
        INSERT INTO search_texts (hash, text) SELECT hash, :folded FROM added
        ON CONFLICT (hash) DO NOTHING
    )
    SELECT hash FROM added
    """
)


def add_indexed_text(conn: Connection, key: str, text: str) -> bool:
    """PostgreSQL: store a text under `key` with its place in the search index, unless it
    is stored already; whether it was new."""
    row = {"hash": key, "text": text, "folded": fold(text)}
    return conn.execute(_ADD_INDEXED_POSTGRES, row).first() is not None


def index_text(conn: Connection, key: str, text: str) -> None:
    """Add one new text to the search index (SQLite: numbered as it is inserted, with no
    read of its number back)."""
    if conn.dialect.name == "sqlite":
        number = conn.execute(_NUMBER_TEXT, {"hash": key}).lastrowid
        conn.execute(_INDEX_NUMBERED, {"id": number, "text": fold(text)})
        return
    conn.execute(_INDEX_POSTGRES, {"hash": key, "text": fold(text)})


def index_texts(conn: Connection, texts: Mapping[str, str]) -> None:
    """Add new texts (by hash) to the search index."""
    if not texts:
        return
    if conn.dialect.name == "sqlite":
        keys = list(texts)
        conn.execute(_NUMBER_TEXT, [{"hash": key} for key in keys])
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            listed = ", ".join(f":h{i}" for i in range(len(chunk)))
            numbered = conn.execute(
                sa.text(f"SELECT id, hash FROM search_texts WHERE hash IN ({listed})"),
                {f"h{i}": key for i, key in enumerate(chunk)},
            ).all()
            conn.execute(
                _INDEX_NUMBERED,
                [{"id": number, "text": fold(texts[key])} for number, key in numbered],
            )
        return
    conn.execute(
        _INDEX_POSTGRES, [{"hash": key, "text": fold(text)} for key, text in texts.items()]
    )


def unindex_texts(conn: Connection, hashes: Iterable[str]) -> None:
    """Take texts (by hash) out of the search index, before the texts themselves go."""
    keys = sorted(set(hashes))
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        params = {f"h{i}": key for i, key in enumerate(chunk)}
        listed = ", ".join(f":h{i}" for i in range(len(chunk)))
        if conn.dialect.name == "sqlite":
            conn.execute(
                sa.text(
                    "DELETE FROM search_index WHERE rowid IN"
                    f" (SELECT id FROM search_texts WHERE hash IN ({listed}))"
                ),
                params,
            )
        conn.execute(sa.text(f"DELETE FROM search_texts WHERE hash IN ({listed})"), params)


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class SqlSearch(SqlBase):
    """Full-text search over the messages of live chats."""

    def search_messages(
        self,
        terms: Sequence[str],
        *,
        owner: str,
        chat_id: str | None = None,
        limit: int = 50,
    ) -> list[MessageHit]:
        if not terms:
            return []
        sqlite = self.engine.dialect.name == "sqlite"
        params: dict[str, object] = {"owner": owner, "limit": limit}
        where: list[str] = []
        if sqlite:
            source = (
                "search_index si JOIN search_texts st ON st.id = si.rowid"
                " JOIN nodes n ON n.content_hash = st.hash"
            )
            long = [term for term in terms if len(term) >= _TRIGRAM]
            if long:
                params["match"] = " AND ".join('"' + term.replace('"', '""') + '"' for term in long)
                where.append("search_index MATCH :match")
            column = "si.text"
            likes = [term for term in terms if len(term) < _TRIGRAM]
        else:
            source = "search_texts st JOIN nodes n ON n.content_hash = st.hash"
            column = "st.text"
            likes = list(terms)
        for i, term in enumerate(likes):
            params[f"like{i}"] = _like(term)
            where.append(f"{column} LIKE :like{i} ESCAPE '\\'")
        if chat_id is not None:
            params["chat_id"] = chat_id
            where.append("n.chat_id = :chat_id")
        false = "0" if sqlite else "false"
        query = sa.text(
            "SELECT n.chat_id, ch.title, n.id, n.parent_id, n.role, n.speaker, n.depth,"
            " n.hidden, c.text, ch.active_leaf_id"
            f" FROM {source}"
            " JOIN chats ch ON ch.id = n.chat_id"
            " JOIN contents c ON c.hash = n.content_hash"
            f" WHERE n.deleted = {false} AND ch.deleted = {false} AND ch.owner = :owner"
            + "".join(f" AND {condition}" for condition in where)
            + " ORDER BY n.created DESC, n.id DESC LIMIT :limit"
        )
        with self._read() as conn:
            rows = conn.execute(query, params).all()
        return [
            MessageHit(
                chat_id=row[0],
                chat_title=row[1],
                node_id=row[2],
                parent_id=row[3] or None,
                role=row[4],
                speaker=row[5],
                depth=int(row[6]),
                hidden=bool(row[7]),
                text=row[8],
                active_leaf_id=row[9],
            )
            for row in rows
        ]
