"""Connections: connections, keys, local models.

Its public face: what other domains and the shells use from it.
"""

from taverna.services.connections.fields import check_key, mask
from taverna.services.connections.local_models import (
    DEFAULT_MODEL_NAME,
    LocalSpec,
    for_local_model,
    models_in,
    trained_context,
)
from taverna.services.connections.model_gate import ModelGate
from taverna.services.connections.outbound_rules import OutboundRules
from taverna.services.connections.secrets_file import Secrets
from taverna.services.connections.service import KIND, Connection, ConnectionService, default_api

__all__ = [
    "DEFAULT_MODEL_NAME",
    "KIND",
    "Connection",
    "ConnectionService",
    "LocalSpec",
    "ModelGate",
    "OutboundRules",
    "Secrets",
    "check_key",
    "default_api",
    "for_local_model",
    "mask",
    "models_in",
    "trained_context",
]
