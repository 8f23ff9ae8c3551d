"""A test plugin that asks for a grant that does not exist."""

TAVERNA_GRANTS = ["read_minds"]
