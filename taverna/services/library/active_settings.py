"""Which preset and templates are in use, and the world-info settings: one `settings`
document per user, named `active`, holding SillyTavern-shaped choices."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.store.repository import Document, Store

SETTINGS_KIND = "settings"
ACTIVE = "active"
# Whether the system prompt is used (SillyTavern's `power_user.sysprompt.enabled`).
SYSPROMPT_ENABLED = "sysprompt_enabled"


def active_choices(store: Store, owner: str = "") -> dict[str, str]:
    """Which preset and templates are in use: library kind -> document id."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    return active_choices_document(docs[-1]) if docs else {}


def active_choices_document(doc: Document) -> dict[str, str]:
    """The choices an `active` settings document holds (library kind -> document id)."""
    return {k: str(v) for k, v in doc.data.items() if isinstance(v, str)}


def world_info_settings(doc: Document) -> Mapping[str, Any] | None:
    """SillyTavern's `world_info_settings` object kept in the document, if any."""
    found = doc.data.get("world_info_settings")
    return found if isinstance(found, Mapping) else None


def set_active(store: Store, kind: str, value: Any, owner: str = "") -> None:
    """Make a preset or template the one in use (or store the world-info settings)."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    data = {**(docs[-1].data if docs else {}), kind: value}
    store.put_document(
        SETTINGS_KIND,
        ACTIVE,
        data,
        id=docs[-1].id if docs else None,
        revision=docs[-1].revision if docs else None,
        owner=owner,
    )


def global_variables(store: Store, owner: str = "") -> dict[str, Any]:
    """The person's global (STscript) variables: `extension_settings.variables.global`."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    extensions = docs[-1].data.get("extension_settings") if docs else None
    variables = extensions.get("variables") if isinstance(extensions, Mapping) else None
    found = variables.get("global") if isinstance(variables, Mapping) else None
    return dict(found) if isinstance(found, Mapping) else {}


def write_global_variables(store: Store, values: Mapping[str, Any], owner: str = "") -> None:
    """Store the global variables, keeping the rest of `extension_settings` as it is."""
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    found = docs[-1].data.get("extension_settings") if docs else None
    extensions = dict(found) if isinstance(found, Mapping) else {}
    variables = extensions.get("variables")
    extensions["variables"] = {
        **(variables if isinstance(variables, Mapping) else {}),
        "global": dict(values),
    }
    set_active(store, "extension_settings", extensions, owner=owner)
