"""Scripts: the STscript runner and its host, Quick Replies and their automations, regex over messages, the regex library.

Its public face: what other domains and the shells use from it.
"""

from taverna.engine.script import Generation  # what a script's /gen or /genraw asks
from taverna.services.scripts.message_regex import StoredRegex, shown_in_window
from taverna.services.scripts.quick_replies import QuickReplyButton, QuickReplyService, StoredSet
from taverna.services.scripts.quick_reply_events import QuickReplyAutomations
from taverna.services.scripts.runner import ScriptService
from taverna.services.scripts.user_tools import UserTools

__all__ = [
    "Generation",
    "QuickReplyAutomations",
    "QuickReplyButton",
    "QuickReplyService",
    "ScriptService",
    "StoredRegex",
    "StoredSet",
    "UserTools",
    "shown_in_window",
]
