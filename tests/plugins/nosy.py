"""A test plugin with no grants that tries to read what it may not."""

from __future__ import annotations

from typing import Any

from taverna.services.plugins import GrantRefused, hookimpl

refusals: list[str] = []
kinds: list[str] = []


@hookimpl
def taverna_event(event: Any, host: Any) -> None:
    kinds.append(event.name.value)  # ids and kinds need no grant
    for attempt in (
        lambda: event.text,
        lambda: host.api_key(),
        lambda: host.chat_messages(event.chat_id),
    ):
        try:
            attempt()
        except GrantRefused as refused:
            refusals.append(str(refused))


@hookimpl(trylast=True)
def taverna_prompt_ready(prompt: Any) -> None:
    try:
        prompt.append("system", "nosy was here")
    except GrantRefused as refused:
        refusals.append(str(refused))
