"""Chats: the one writer of the tree, reads and views, search, pictures, backups, groups.

Its public face: what other domains and the shells use from it.
"""

from taverna.services.chats.backups import BackupFlusher, BackupService
from taverna.services.chats.editing import start_chat
from taverna.services.chats.generated_reply import ToolStep
from taverna.services.chats.groups import (
    POOL_WINDOW_PER_MEMBER,
    GroupService,
    read_group,
    speakers_for,
)
from taverna.services.chats.images import (
    ImageLibrary,
    message_image,
    picture_file_reader,
    shown_image,
    with_image,
    with_pictures,
)
from taverna.services.chats.search import MAX_QUERY, MAX_RESULTS, SearchResult, SearchService
from taverna.services.chats.sent_prompts import prompt_json
from taverna.services.chats.service import ChatService, WriteResult
from taverna.services.chats.write_rules import Rewrite

__all__ = [
    "MAX_QUERY",
    "MAX_RESULTS",
    "POOL_WINDOW_PER_MEMBER",
    "BackupFlusher",
    "BackupService",
    "ChatService",
    "GroupService",
    "ImageLibrary",
    "Rewrite",
    "SearchResult",
    "SearchService",
    "ToolStep",
    "WriteResult",
    "message_image",
    "picture_file_reader",
    "prompt_json",
    "read_group",
    "shown_image",
    "speakers_for",
    "start_chat",
    "with_image",
    "with_pictures",
]
