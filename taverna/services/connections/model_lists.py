"""The models a connection's API offers, asked of the API itself.

A local model offers the one file it runs; any other API is asked by its own listing
request, under the account's outbound policy, with each model's context size where the
source's listing says it (OpenRouter's `context_length`).
"""

from __future__ import annotations

from taverna.providers import sources
from taverna.providers.outbound import OutboundPolicy
from taverna.providers.registry import provider
from taverna.providers.request import Api
from taverna.providers.transport import fetch_json
from taverna.services.connections.connection import Connection
from taverna.services.connections.local_models import LocalSpec


async def model_sizes(
    connection: Connection, *, key: str, policy: OutboundPolicy | None
) -> list[tuple[str, int | None]]:
    """(model, context size or None) for each model the connection's API offers, asked
    with its `key` under the account's outbound `policy` (ProviderError if it cannot say)."""
    if connection.api is Api.LOCAL:
        return [(LocalSpec.of(connection.model, connection.options).model.name, None)]
    api = provider(connection.api)
    request = api.models_request(connection.url, key)
    listing = await fetch_json(request, secret=key, policy=policy)
    named = sources.find(str(connection.options.get("source", "")))
    sizes = sources.model_contexts(listing, named) if named else {}
    return [(model, sizes.get(model)) for model in api.model_names(listing)]
