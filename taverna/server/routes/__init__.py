"""Every router of the HTTP API, in the order they are mounted."""

from __future__ import annotations

from fastapi import APIRouter

from taverna.server.routes import chats, connections

ROUTERS: tuple[APIRouter, ...] = (chats.router, connections.router)
