"""`python -m tests.stubs [--port N] [--key K]`: a stub model server in a process of its own."""

from tests.stubs.model_server import main

main()
