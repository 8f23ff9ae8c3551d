"""The HTTP server: REST and SSE over the services."""
