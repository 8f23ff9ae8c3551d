"""The statements a chat's unit of work runs, built once.

Building a statement (and its key in SQLAlchemy's compiled cache) costs more than
running it, and every turn writes: the writer and its change log share these.
"""

from __future__ import annotations

import sqlalchemy as sa

from taverna.store import schema as t
from taverna.store.sql.rows import _node_select

# Values go as parameters; an UPDATE without `.values()` sets the columns its parameters name.
_CHAT_KEY: sa.BindParameter[str] = sa.bindparam("chat_key")
_NODE_KEY: sa.BindParameter[str] = sa.bindparam("node_key")
NODE_ROW = sa.select(t.nodes).where(t.nodes.c.id == _NODE_KEY, t.nodes.c.chat_id == _CHAT_KEY)
NODE = _node_select().where(t.nodes.c.id == _NODE_KEY, t.nodes.c.chat_id == _CHAT_KEY)
_STATE_SOURCE = t.nodes.alias("source")
# A node's place (depth, the node whose state applies) and that state, in one read.
PLACE = (
    sa.select(t.nodes.c.depth, t.nodes.c.state_from, _STATE_SOURCE.c.state)
    .select_from(t.nodes.outerjoin(_STATE_SOURCE, _STATE_SOURCE.c.id == t.nodes.c.state_from))
    .where(t.nodes.c.id == _NODE_KEY, t.nodes.c.chat_id == _CHAT_KEY)
)
INSERT_NODE = t.nodes.insert()
UPDATE_NODE = t.nodes.update().where(t.nodes.c.id == _NODE_KEY)
_SELECTION_WHERE = (
    t.selections.c.chat_id == _CHAT_KEY,
    t.selections.c.parent_id == sa.bindparam("parent_key"),
)
SELECTION = sa.select(t.selections.c.child_id).where(*_SELECTION_WHERE)
INSERT_SELECTION = t.selections.insert()
UPDATE_SELECTION = t.selections.update().where(*_SELECTION_WHERE)
DELETE_SELECTION = t.selections.delete().where(*_SELECTION_WHERE)
BRANCH_HEAD = sa.select(t.branches.c.head_id).where(t.branches.c.id == sa.bindparam("branch_key"))
UPDATE_BRANCH = t.branches.update().where(t.branches.c.id == sa.bindparam("branch_key"))
UPDATE_CHAT = t.chats.update().where(t.chats.c.id == _CHAT_KEY)
END_REDO = (
    t.revisions.update()
    .where(
        t.revisions.c.chat_id == _CHAT_KEY,
        t.revisions.c.undone == sa.true(),
        t.revisions.c.redoable == sa.true(),
    )
    .values(redoable=False)
)
INSERT_REVISION = t.revisions.insert()
INSERT_CHANGES = t.changes.insert()
DESCEND = sa.text(
    """
    WITH RECURSIVE down(id, lvl) AS (
        SELECT id, 0 FROM nodes WHERE id = :start
        UNION ALL
        SELECT s.child_id, down.lvl + 1
        FROM down
        JOIN selections s ON s.chat_id = :chat AND s.parent_id = down.id
        JOIN nodes n ON n.id = s.child_id
        WHERE n.deleted = :no AND down.lvl < 10000000
    )
    SELECT id FROM down ORDER BY lvl DESC LIMIT 1
    """
)
REFRESH_STATE_FROM = sa.text(
    """
    UPDATE nodes SET state_from = :source WHERE id IN (
        WITH RECURSIVE sub(id) AS (
            SELECT id FROM nodes WHERE id = :node
            UNION ALL
            SELECT n.id FROM nodes n JOIN sub ON n.chat_id = :chat AND n.parent_id = sub.id
            WHERE n.state IS NULL
        )
        SELECT id FROM sub
    )
    """
)
# A write's first statement: the chat's row moves to its next revision if it is still at
# the one the writer read (which also takes the chat's write lock) and comes back changed,
# with what a turn's writes would otherwise each read on their own: the active branch's
# head, whether an undone revision waits to be redone, the active leaf's place and the
# choice remembered below it. (The chat's columns are named in full inside the
# subqueries: SQLite's RETURNING would leave them unqualified.)
_CHATS_ID: sa.ColumnClause[str] = sa.literal_column("chats.id")
_CHATS_LEAF: sa.ColumnClause[str] = sa.literal_column("chats.active_leaf_id")
_CLAIMED = {
    "branch_head": sa.select(t.branches.c.head_id)
    .where(t.branches.c.id == sa.literal_column("chats.active_branch_id"))
    .scalar_subquery(),
    "redo_pending": sa.exists().where(
        t.revisions.c.chat_id == _CHATS_ID,
        t.revisions.c.undone == sa.true(),
        t.revisions.c.redoable == sa.true(),
    ),
    "leaf_depth": sa.select(t.nodes.c.depth).where(t.nodes.c.id == _CHATS_LEAF).scalar_subquery(),
    "leaf_state_from": sa.select(t.nodes.c.state_from)
    .where(t.nodes.c.id == _CHATS_LEAF)
    .scalar_subquery(),
    "leaf_choice": sa.select(t.selections.c.child_id)
    .where(
        t.selections.c.chat_id == _CHATS_ID,
        t.selections.c.parent_id == sa.func.coalesce(_CHATS_LEAF, ""),
    )
    .scalar_subquery(),
}
CLAIM = (
    t.chats.update()
    .where(
        t.chats.c.id == sa.bindparam("claim_id"),
        t.chats.c.revision == sa.bindparam("claim_revision"),
        t.chats.c.deleted == sa.false(),
    )
    .returning(*t.chats.c, *(value.label(name) for name, value in _CLAIMED.items()))
)
