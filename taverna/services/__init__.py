"""Use cases shared by the CLI and the server: import, chat operations, generation."""
