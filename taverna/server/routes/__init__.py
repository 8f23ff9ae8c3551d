"""Every router of the HTTP API, in the order they are mounted."""

from __future__ import annotations

from fastapi import APIRouter

from taverna.server.routes import (
    characters,
    chats,
    connections,
    generation,
    imports,
    lorebooks,
    personas,
    presets,
    prompt,
)

ROUTERS: tuple[APIRouter, ...] = (
    characters.router,
    chats.router,
    connections.router,
    generation.router,
    imports.router,
    lorebooks.router,
    personas.router,
    presets.router,
    prompt.router,
)
