"""The command line: thin callers of the services."""
