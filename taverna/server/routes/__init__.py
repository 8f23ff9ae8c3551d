"""Every router of the HTTP API, in the order they are mounted: those that read JSON (or
nothing), the file uploads, and the folder import, each group with its body limit."""

from __future__ import annotations

from fastapi import APIRouter

from taverna.server.routes import (
    characters,
    chats,
    connections,
    generation,
    groups,
    images,
    imports,
    looks,
    lorebooks,
    models,
    personas,
    plugins,
    presets,
    profiles,
    prompt,
    quick_replies,
    recall,
    regex,
    script_commands,
    search,
    summaries,
    variables,
    world_info,
)

ROUTERS: tuple[APIRouter, ...] = (
    characters.router,
    chats.router,
    connections.router,
    generation.router,
    groups.router,
    images.router,
    looks.router,
    lorebooks.router,
    models.router,
    personas.router,
    plugins.router,
    presets.router,
    profiles.router,
    prompt.router,
    quick_replies.router,
    recall.router,
    regex.router,
    script_commands.router,
    search.router,
    summaries.router,
    variables.router,
    world_info.router,
)

# Routes that take one uploaded file (multipart/form-data).
UPLOADS: tuple[APIRouter, ...] = (
    characters.uploads,
    chats.uploads,
    images.uploads,
    looks.uploads,
    lorebooks.uploads,
    personas.uploads,
    presets.uploads,
    quick_replies.uploads,
    regex.uploads,
)

# The SillyTavern folder upload.
FOLDER_UPLOADS: tuple[APIRouter, ...] = (imports.router,)
