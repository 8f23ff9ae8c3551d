"""SillyTavern chats in and out of the conversation tree.

`chat_import` makes a chat JSONL and its checkpoint and branch files into one tree,
`chat_export` writes a tree back as SillyTavern files (`message_lines` makes their lines),
`chat_files` reads and groups the files of a folder, `st_record` keeps what SillyTavern's
files need back, and `service` is the use case the CLI and the server call.
"""

from taverna.services.interchange.chat_export import (
    MAX_FORK_NESTING,
    ExportedFile,
    LineMemo,
    StreamedFile,
    export_stream,
    export_tree,
    main_jsonl,
    safe_file_name,
)
from taverna.services.interchange.chat_files import (
    file_digest,
    fingerprint,
    group_chat_files,
    linked_files_beside,
    read_chat_file,
)
from taverna.services.interchange.chat_import import LinkedFile, TreeImport, build_tree
from taverna.services.interchange.service import ImportedChat, InterchangeService, bulk

__all__ = [
    "MAX_FORK_NESTING",
    "ExportedFile",
    "ImportedChat",
    "InterchangeService",
    "LineMemo",
    "LinkedFile",
    "StreamedFile",
    "TreeImport",
    "build_tree",
    "bulk",
    "export_stream",
    "export_tree",
    "file_digest",
    "fingerprint",
    "group_chat_files",
    "linked_files_beside",
    "main_jsonl",
    "read_chat_file",
    "safe_file_name",
]
