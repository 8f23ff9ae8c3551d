"""Every extension point of taverna, in one place: the hooks a plugin may implement.

A plugin is a Python package that names a module (or object) under the entry-point
group `taverna` and implements some of these hooks with `@hookimpl`:

    # pyproject.toml of the plugin
    [project.entry-points.taverna]
    mood = "taverna_mood.plugin"

    # taverna_mood/plugin.py
    from taverna.services.plugins import hookimpl

    TAVERNA_GRANTS = ["read_chats", "change_prompts"]   # none by default

    @hookimpl
    def taverna_prompt_ready(prompt):
        prompt.append("system", "Keep the mood light.")

Order: hooks run in the order plugins were loaded (entry points sorted by name), a
`@hookimpl(tryfirst=True)` before the others and `trylast=True` after, as pluggy
orders them; each sees what the ones before it changed. Every argument a plugin
receives checks the plugin's grants as it is used (`GrantRefused` when one is missing).
Hooks run on the thread that made the change (for a generation, the server's event
loop): keep them short and hand slow work to a thread of the plugin's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from taverna.services.plugins.events import EventView
    from taverna.services.plugins.host import PluginHost
    from taverna.services.plugins.interception import ChatCopyView
    from taverna.services.plugins.prompt_ready import PromptView

PROJECT = "taverna"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class TavernaHooks:
    """The hooks (pluggy's hook specification)."""

    @hookspec
    def taverna_event(self, event: EventView, host: PluginHost) -> None:
        """An event happened (`event.name` is one of `EventName`), after what it reports
        was stored. A failing handler is logged and the others still run."""

    @hookspec
    def taverna_generate_interceptor(self, chat: ChatCopyView, host: PluginHost) -> None:
        """A generation is about to build its prompt: change this turn's copy of the chat,
        or `chat.abort(reason)`. Runs for real generations, not for previews."""

    @hookspec
    def taverna_prompt_ready(self, prompt: PromptView, host: PluginHost) -> None:
        """The prompt is built (`chat_completion_prompt_ready`): change it before it is
        sent. Runs for previews too (`prompt.dry_run`), so the inspector shows what is sent."""

    @hookspec
    def taverna_tools(self, host: PluginHost) -> list[Any] | None:
        """Function tools the model may call (`taverna.services.plugins.tools.Tool` items), offered
        with the others when the preset turns function calling on. Asked once, at load."""
