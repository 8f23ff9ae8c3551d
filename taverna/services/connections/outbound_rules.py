"""Whose requests to model and embeddings APIs go out under the outbound policy.

A person's own machine (no accounts) reaches whatever its person names: local models on
127.0.0.1 are the usual case. With accounts, the requests made for an account that is
not an admin's go out under the operator's policy (`providers/outbound.py`): public
addresses, and those `outbound_allow` in `server.toml` names. The server's own local
model process and the operator's embeddings endpoint are the server's, not the
account's, and are not policed.
"""

from __future__ import annotations

from collections.abc import Callable

from taverna.errors import NotFound

# the policy and its entries, for the server that reads them from server.toml
from taverna.providers.outbound import Allowed as Allowed
from taverna.providers.outbound import OutboundPolicy as OutboundPolicy
from taverna.store.repository import Store


class OutboundRules:
    """The operator's outbound policy, and whom it applies to."""

    def __init__(self, store: Store, policy: OutboundPolicy | None = None) -> None:
        self.store = store
        self.policy = policy or OutboundPolicy()
        # Whether the server runs with accounts (the server sets it; off by default).
        self.accounts_on: Callable[[], bool] = lambda: False

    def for_owner(self, owner: str) -> OutboundPolicy | None:
        """The policy an account's requests go out under; None: no policy (no accounts,
        the single user, an admin)."""
        if not owner or not self.accounts_on():
            return None
        try:
            account = self.store.account(id=owner)
        except NotFound:
            return self.policy
        return None if account.admin else self.policy
