"""The SQL tables, as SQLAlchemy Core objects (the migrations create the same shape).

Node text lives once in `contents`, keyed by its SHA-256, so an edit, an import of
branch files sharing a prefix, or a history entry never copies a message. `nodes`
stores each node's depth and `state_from` (the nearest ancestor-or-self that
recorded state), so appending and reading the state need no walk up the path.
Roots have `parent_id = ''` (not NULL) so one index serves every sibling query.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

metadata = sa.MetaData()

# Nullable JSON: Python None is SQL NULL (no value), never the JSON text `null`.
Json = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
Id = sa.String(36)
Stamp = sa.DateTime(timezone=True)

chats = sa.Table(
    "chats",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False, server_default=""),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("characters", Json, nullable=False),
    sa.Column("group_id", sa.String(200)),
    sa.Column("user_name", sa.Text, nullable=False, server_default=""),
    sa.Column("active_leaf_id", Id),
    sa.Column("active_branch_id", Id),
    sa.Column("base_state", Json, nullable=False),
    sa.Column("metadata", Json, nullable=False),
    sa.Column("created", Stamp, nullable=False),
    sa.Column("updated", Stamp, nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
    # A deleted chat is gone from every read at once; its rows go in the background, in
    # short transactions, so a delete of any size blocks no other chat (migration 0007).
    sa.Column("deleted", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Index("ix_chats_owner_updated", "owner", "updated"),
    sa.Index(
        "ix_chats_deleted",
        "id",
        sqlite_where=sa.text("deleted = 1"),
        postgresql_where=sa.text("deleted"),
    ),
)

contents = sa.Table(
    "contents",
    metadata,
    sa.Column("hash", sa.String(64), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
)

nodes = sa.Table(
    "nodes",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
    sa.Column("parent_id", sa.String(36), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("speaker", sa.Text, nullable=False, server_default=""),
    sa.Column("content_hash", sa.String(64), sa.ForeignKey("contents.hash"), nullable=False),
    sa.Column("hidden", sa.Boolean, nullable=False),
    sa.Column("deleted", sa.Boolean, nullable=False),
    sa.Column("created", Stamp, nullable=False),
    sa.Column("depth", sa.Integer, nullable=False),
    sa.Column("generation", Json),
    sa.Column("extras", Json, nullable=False),
    sa.Column("state", Json),
    sa.Column("state_from", sa.String(36)),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Index("ix_nodes_siblings", "chat_id", "parent_id", "id"),
    # What a write added or changed in a chat (migration 0015): the embedding backlog.
    sa.Index("ix_nodes_revision", "chat_id", "revision"),
    # Whether a text is still used (and the foreign key's own check when a text goes).
    sa.Index("ix_nodes_content", "content_hash"),
    # Deleted messages only: see migration 0003 for why not a full index.
    sa.Index(
        "ix_nodes_tombstones",
        "chat_id",
        sqlite_where=sa.text("deleted = 1"),
        postgresql_where=sa.text("deleted"),
    ),
    # Hidden messages only (migration 0005): a turn reading a path's end counts them above it.
    sa.Index(
        "ix_nodes_hidden",
        "chat_id",
        "depth",
        sqlite_where=sa.text("hidden = 1"),
        postgresql_where=sa.text("hidden"),
    ),
)

selections = sa.Table(
    "selections",
    metadata,
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("parent_id", sa.String(36), primary_key=True),
    sa.Column("child_id", Id, nullable=False),
)

branches = sa.Table(
    "branches",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("head_id", Id),
    sa.Column("created", Stamp, nullable=False),
    sa.Index("ix_branches_chat", "chat_id"),
)

checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("node_id", Id, nullable=False),
    sa.Column("created", Stamp, nullable=False),
    sa.Index("ix_checkpoints_chat", "chat_id"),
)

revisions = sa.Table(
    "revisions",
    metadata,
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("number", sa.Integer, primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("label", sa.Text, nullable=False),
    sa.Column("created", Stamp, nullable=False),
    sa.Column("target", sa.Integer),
    sa.Column("undone", sa.Boolean, nullable=False),
    sa.Column("redoable", sa.Boolean, nullable=False),
    sa.Index("ix_revisions_undo", "chat_id", "undone", "redoable"),
)

# One row per value an operation changed: enough to revert it and to re-apply it.
changes = sa.Table(
    "changes",
    metadata,
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("revision", sa.Integer, primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("entity", sa.String(16), nullable=False),
    sa.Column("key", sa.String(36), nullable=False),
    sa.Column("field", sa.String(32), nullable=False),
    sa.Column("before", Json, nullable=False),
    sa.Column("after", Json, nullable=False),
    sa.Index("ix_changes_key", "chat_id", "key"),
)

# The texts a chat's history keeps besides its messages' own: every version an edit
# replaced or wrote, and the text of a message an undo took away (for redo). Whether a
# text is still used is then two index lookups, never a read of the change log.
history_texts = sa.Table(
    "history_texts",
    metadata,
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("hash", sa.String(64), sa.ForeignKey("contents.hash"), primary_key=True),
    sa.Index("ix_history_texts_hash", "hash"),
)

documents = sa.Table(
    "documents",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("owner", sa.String(200), nullable=False, server_default=""),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("data", Json, nullable=False),
    sa.Column("blob", sa.LargeBinary),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("created", Stamp, nullable=False),
    sa.Column("updated", Stamp, nullable=False),
    # The version columns ride in the index: a turn reads them without the rows' content.
    sa.Index(
        "ix_documents_versions", "owner", "kind", "name", "id", "revision", "created", "updated"
    ),
)

# Token counts of message texts per tokenizer, so a cold process need not tokenize
# a chat again; a count goes with its text.
token_counts = sa.Table(
    "token_counts",
    metadata,
    sa.Column(
        "hash", sa.String(64), sa.ForeignKey("contents.hash", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("tokenizer", sa.String(64), primary_key=True),
    sa.Column("count", sa.Integer, nullable=False),
)

# The prompt each stored reply was generated from, as sent (compressed; read on demand).
sent_prompts = sa.Table(
    "sent_prompts",
    metadata,
    sa.Column("node_id", Id, sa.ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
    sa.Column("record", sa.LargeBinary, nullable=False),
    sa.Index("ix_sent_prompts_chat", "chat_id"),
)

# Each message's embedding per model, for recall by meaning (migration 0008): the vector
# of "speaker: text" as float32 bytes, and the text's hash it was made from (an edit
# makes the message due again). `seq` only grows, so a reader that keeps a chat's
# vectors in memory reads just the rows added since.
message_vectors = sa.Table(
    "message_vectors",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("chat_id", Id, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
    sa.Column("node_id", Id, sa.ForeignKey("nodes.id", ondelete="CASCADE"), nullable=False),
    sa.Column("model", sa.String(64), nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("vector", sa.LargeBinary, nullable=False),
    # The vector's sign bits, packed (migration 0013; NULL in rows written before it).
    sa.Column("signs", sa.LargeBinary, nullable=True),
    sa.Index("ix_message_vectors_node", "node_id", "model", unique=True),
    sa.Index("ix_message_vectors_chat", "chat_id", "model", "seq"),
    sqlite_autoincrement=True,
)
# The rows still without their sign bits (migration 0014): the background backlog fills
# them; the index is empty once it has.
sa.Index(
    "ix_message_vectors_unsigned",
    message_vectors.c.seq,
    sqlite_where=message_vectors.c.signs.is_(None),
    postgresql_where=message_vectors.c.signs.is_(None),
)

# Embeddings of other texts (lorebook entries marked vectorized), by model and text hash.
text_vectors = sa.Table(
    "text_vectors",
    metadata,
    sa.Column("model", sa.String(64), primary_key=True),
    sa.Column("hash", sa.String(64), primary_key=True),
    sa.Column("vector", sa.LargeBinary, nullable=False),
)

# How far the database's own vector search has taken in each model's message vectors:
# the highest `message_vectors.seq` indexed, and the vectors' dimensions (migration 0010;
# see `taverna.store.sql.vector_index`).
vector_indexes = sa.Table(
    "vector_indexes",
    metadata,
    sa.Column("model", sa.String(64), primary_key=True),
    sa.Column("dims", sa.Integer, nullable=False),
    sa.Column("synced_seq", sa.Integer, nullable=False),
)

# Accounts (migration 0011): who may log in when the server runs with accounts. `id` is
# what every owned row's `owner` holds; the single user of a server without accounts is "".
users = sa.Table(
    "users",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("password_hash", sa.Text, nullable=False),
    sa.Column("admin", sa.Boolean, nullable=False, server_default=sa.false()),
    # Quotas: stored bytes of the library, generations an hour; NULL is no limit.
    sa.Column("quota_bytes", sa.BigInteger),
    sa.Column("quota_generations", sa.Integer),
    sa.Column("created", Stamp, nullable=False),
    # A disabled account keeps its data but may not log in (migration 0016).
    sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
)

# Logged-in sessions: the SHA-256 of the cookie's random token (a stolen database does not
# log anyone in), the CSRF token the page sends back in a header, and when it ends.
sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("user_id", Id, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    sa.Column("csrf", sa.String(64), nullable=False),
    sa.Column("expires", Stamp, nullable=False),
    sa.Index("ix_sessions_user", "user_id"),
)

# Generations started, per account, for the hourly quota (old rows are pruned as it is read).
generation_log = sa.Table(
    "generation_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("user_id", sa.String(200), nullable=False),
    sa.Column("started", Stamp, nullable=False),
    sa.Index("ix_generation_log_user", "user_id", "started"),
)

# Failed logins, each under its subject ("name:<account name>" or "address:<client>"), for
# the login rate limit (rows older than its window are pruned as it is read).
login_failures = sa.Table(
    "login_failures",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("subject", sa.String(300), nullable=False),
    sa.Column("at", Stamp, nullable=False),
    sa.Index("ix_login_failures_subject", "subject", "at"),
)
