"""One chat backup written by a process of its own.

Backing up a long chat reads its whole tree and writes every message: seconds of work
and hundreds of megabytes at 100,000 messages. The server hands that to a short-lived
process, so its own memory and its answers to the person stay those of a turn.

    python -m taverna.services.chats.backup_process STORE_URL FOLDER CHAT_ID --keep N [--schema S]
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store_url")
    parser.add_argument("folder", type=Path)
    parser.add_argument("chat_id")
    parser.add_argument("--keep", type=int, required=True, help="backups kept per chat")
    parser.add_argument("--schema", default=None)
    args = parser.parse_args(argv)
    # A backup can wait; the person's turn in the server cannot: yield the processor
    # (before the imports, which are much of the work).
    with contextlib.suppress(OSError):
        os.nice(10)
    from taverna.errors import NotFound
    from taverna.services.chats.backups import BackupService
    from taverna.store.sql import open_store

    store = open_store(args.store_url, schema=args.schema)
    try:
        BackupService(store, args.folder, keep=args.keep).backup(args.chat_id)
    except NotFound:
        return 0  # the chat was deleted meanwhile: nothing to back up
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
