"""Alembic environment: migrations always run on a connection the store hands over."""

from __future__ import annotations

from alembic import context

from taverna.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("taverna migrations run through taverna.store.sql.open_store")

context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
