"""The prompt manager's view of a chat-completion preset, and writing its edits back.

A preset is stored as SillyTavern's own JSON. The page sees its prompts in the global
prompt order (the list with character id 100001, formats-presets.md §1.3) with their
on/off switch, and its sampling fields; edits go back into the same JSON, every other
key kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taverna.errors import NotFound, TavernaError
from taverna.formats.detect import FileKind
from taverna.formats.validation import validate
from taverna.model.presets import (
    DEFAULT_PROMPT_ORDER,
    GLOBAL_ORDER_ID,
    MARKER_IDS,
    ChatCompletionPreset,
    ContextTemplate,
    InstructTemplate,
    SystemPromptPreset,
)
from taverna.services.library.service import LibraryKind

KINDS: dict[str, LibraryKind] = {
    "chat": LibraryKind.CHAT_COMPLETION_PRESET,
    "instruct": LibraryKind.INSTRUCT_TEMPLATE,
    "context": LibraryKind.CONTEXT_TEMPLATE,
    "sysprompt": LibraryKind.SYSTEM_PROMPT,
}
FILE_KINDS: dict[str, FileKind] = {
    "chat": FileKind.CHAT_COMPLETION_PRESET,
    "instruct": FileKind.INSTRUCT_TEMPLATE,
    "context": FileKind.CONTEXT_TEMPLATE,
    "sysprompt": FileKind.SYSTEM_PROMPT,
}
PAGE_KIND = {kind: name for name, kind in KINDS.items()}
MODELS: dict[LibraryKind, type[Any]] = {
    LibraryKind.CHAT_COMPLETION_PRESET: ChatCompletionPreset,
    LibraryKind.INSTRUCT_TEMPLATE: InstructTemplate,
    LibraryKind.CONTEXT_TEMPLATE: ContextTemplate,
    LibraryKind.SYSTEM_PROMPT: SystemPromptPreset,
}
SLOT_FIELDS = (
    "name",
    "role",
    "content",
    "injection_position",
    "injection_depth",
    "injection_order",
)
# SillyTavern's own slots (its default order: the markers, main, nsfw, jailbreak,
# enhanceDefinitions) stay in every preset; only slots a person added can be deleted.
BUILT_IN_IDS = frozenset(identifier for identifier, _ in DEFAULT_PROMPT_ORDER) | MARKER_IDS


def _order(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The global prompt order, else the first list there is, else the prompts as listed."""
    lists = [o for o in data.get("prompt_order") or [] if isinstance(o, Mapping)]
    chosen = next((o for o in lists if o.get("character_id") == GLOBAL_ORDER_ID), None)
    chosen = chosen or (lists[0] if lists else None)
    if chosen is not None:
        return [dict(e) for e in chosen.get("order") or [] if isinstance(e, Mapping)]
    return [
        {"identifier": p.get("identifier"), "enabled": True}
        for p in data.get("prompts") or []
        if isinstance(p, Mapping)
    ]


def prompt_manager(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The preset's prompts in order, each with `enabled`."""
    by_id = {
        p.get("identifier"): dict(p) for p in data.get("prompts") or [] if isinstance(p, Mapping)
    }
    out = []
    for entry in _order(data):
        prompt = by_id.pop(entry.get("identifier"), {"identifier": entry.get("identifier")})
        out.append({**prompt, "enabled": bool(entry.get("enabled", True))})
    # Prompts not in the order list are shown last, switched off (SillyTavern does not send them).
    out += [{**p, "enabled": False} for p in by_id.values()]
    return [{**p, "deletable": deletable(p)} for p in out]


def deletable(prompt: Mapping[str, Any]) -> bool:
    """Whether a slot is one a person added (not a marker, not one of SillyTavern's own)."""
    return not (
        prompt.get("identifier") in BUILT_IN_IDS
        or prompt.get("marker")
        or prompt.get("system_prompt")
    )


def _with_order(data: Mapping[str, Any], order: list[dict[str, Any]]) -> dict[str, Any]:
    """The preset JSON with `order` as its global prompt order, the other lists kept."""
    out = dict(data)
    lists = [dict(o) for o in out.get("prompt_order") or [] if isinstance(o, Mapping)]
    lists = [o for o in lists if o.get("character_id") != GLOBAL_ORDER_ID]
    out["prompt_order"] = [*lists, {"character_id": GLOBAL_ORDER_ID, "order": order}]
    return out


def add_slot(
    data: Mapping[str, Any], identifier: str, slot: Mapping[str, Any], *, enabled: bool
) -> dict[str, Any]:
    """The preset JSON with a new custom prompt, placed last in the global order."""
    prompt = {
        "identifier": identifier,
        **{k: slot[k] for k in SLOT_FIELDS if k in slot},
        "system_prompt": False,
        "marker": False,
        "forbid_overrides": False,
    }
    out = dict(data)
    out["prompts"] = [*(out.get("prompts") or []), prompt]
    return _with_order(out, [*_order(data), {"identifier": identifier, "enabled": enabled}])


def delete_slot(data: Mapping[str, Any], identifier: str) -> dict[str, Any]:
    """The preset JSON without custom prompt `identifier`, in its prompts and every order."""
    prompts = [p for p in data.get("prompts") or [] if isinstance(p, Mapping)]
    found = next((p for p in prompts if p.get("identifier") == identifier), None)
    if found is None:
        raise NotFound(
            f"no prompt {identifier!r} in this preset",
            field="identifier",
            code="no_prompt_in_this_preset",
            params={"identifier": str(identifier)},
        )
    if not deletable(found):
        raise TavernaError(
            f"{found.get('name') or identifier!r} is SillyTavern's own slot and stays",
            field="identifier",
            code="builtin_slot_stays",
            params={"value": str(found.get("name") or identifier)},
        )
    out = dict(data)
    out["prompts"] = [p for p in prompts if p.get("identifier") != identifier]
    out["prompt_order"] = [
        {
            **o,
            "order": [
                e
                for e in o.get("order") or []
                if not (isinstance(e, Mapping) and e.get("identifier") == identifier)
            ],
        }
        for o in data.get("prompt_order") or []
        if isinstance(o, Mapping)
    ]
    return out


def sampling(data: Mapping[str, Any]) -> dict[str, Any]:
    """The preset's numeric and on/off settings (temperature, context size, ...)."""
    return {
        k: v
        for k, v in data.items()
        if isinstance(v, bool | int | float) and k not in ("prompts", "prompt_order")
    }


def apply_chat_edit(
    data: Mapping[str, Any], prompts: list[dict[str, Any]], values: Mapping[str, Any]
) -> dict[str, Any]:
    """The preset JSON with the page's prompt order, switches, slot texts and sampling."""
    out = dict(data)
    known = {
        p.get("identifier"): dict(p) for p in out.get("prompts") or [] if isinstance(p, Mapping)
    }
    for edited in prompts:
        ident = edited.get("identifier")
        if ident in known:
            for key in SLOT_FIELDS:
                if key in edited:
                    known[ident][key] = edited[key]
    out["prompts"] = [known.get(p.get("identifier"), p) for p in out.get("prompts") or []]
    order = [
        {"identifier": p.get("identifier"), "enabled": bool(p.get("enabled"))} for p in prompts
    ]
    lists = [dict(o) for o in out.get("prompt_order") or [] if isinstance(o, Mapping)]
    lists = [o for o in lists if o.get("character_id") != GLOBAL_ORDER_ID]
    out["prompt_order"] = [*lists, {"character_id": GLOBAL_ORDER_ID, "order": order}]
    current = sampling(out)
    for key, value in values.items():
        if key in current and isinstance(value, bool | int | float):
            out[key] = value
    return out


def checked(kind: LibraryKind, data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The JSON after reading it as its model: wrong types are refused with the field named
    (an edit is read strictly, not as SillyTavern reads a file)."""
    return dict(validate(MODELS[kind], dict(data), file=name, loose=False).to_json())
