"""Model APIs: pure request builders per provider and streaming transports.

`render_request_body(prompt, api, post_processing=...)` (in `builders`) gives the exact
body `taverna prompt --api ... --post-processing ...` prints; `build_request` adds the URL
and headers; `transport.stream_events` sends a request and yields the normalised events
of `events` (text, reasoning, tool call, usage, finish, error).
"""
