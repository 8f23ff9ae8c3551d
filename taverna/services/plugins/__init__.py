"""Events, generation interceptors and plugins: how extensions hook into taverna.

Plugin authors need only this module: `hookimpl` to mark hook implementations (the
hooks are listed in `hookspecs`), `Grant` for `TAVERNA_GRANTS`, and the types a hook
receives. The services emit events through an `EventBus`.
"""

from taverna.services.plugins.bus import EventBus, Listener
from taverna.services.plugins.events import Event, EventName, EventView, PluginAccess
from taverna.services.plugins.grants import Grant, GrantRefused, parse_grants
from taverna.services.plugins.hookspecs import hookimpl, hookspec
from taverna.services.plugins.host import PluginHost, PluginServices
from taverna.services.plugins.interception import ChatCopy, ChatCopyView, GenerationAborted
from taverna.services.plugins.prompt_ready import PromptReady, PromptView
from taverna.services.plugins.registry import ENTRY_POINT_GROUP, PluginInfo, Plugins

__all__ = [
    "ENTRY_POINT_GROUP",
    "ChatCopy",
    "ChatCopyView",
    "Event",
    "EventBus",
    "EventName",
    "EventView",
    "GenerationAborted",
    "Grant",
    "GrantRefused",
    "Listener",
    "PluginAccess",
    "PluginHost",
    "PluginInfo",
    "PluginServices",
    "Plugins",
    "PromptReady",
    "PromptView",
    "hookimpl",
    "hookspec",
    "parse_grants",
]
