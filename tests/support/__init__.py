"""Helpers the tests share that are not fixtures.

The fixtures live in the conftest.py files: `tests/conftest.py` (the shared sample files,
`store` on every backend, `stub`: a stub model server per module, its key and models named
by `pytest.mark.stub_model`), `tests/server/conftest.py` (`ctx`, `client`, `chat_id`),
`tests/services/conftest.py` (`chats`, `data`, `default_data`) and `tests/browser/conftest.py`
(`chromium`, `taverna`, `fresh`, `bare`). The helpers here set up what those do not:

- `api`: through the server's HTTP API (`connect`, `start_chat`, `events`, `generate`, `rev`);
- `folders`: data folders and stores (`card_folder`, `connect_stub`, `small_recall`);
- `cli`: `run`, one `taverna` command in-process;
- `served`: a running `taverna serve` (`serving`, `serving_workers`) used as a page uses it
  (`connect_served`, `connect`, `new_chat`, `send`, `task_events`);
- `browser`: `new_page`, and the page's words (`catalog`, `say`).
"""
