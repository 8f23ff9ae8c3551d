"""The person's regex scripts in their three layers, and the consent the last two need.

Global scripts are library documents, run in the order kept in the active settings
(`regex_order`). A preset carries its own scripts in `extensions.regex_scripts` (a Chat
Completion preset, or a Text Completion one: the preset of the API in use runs), and a
card in `data.extensions.regex_scripts`; SillyTavern runs those only once the person
allowed them (`extension_settings.preset_allowed_regex` by API id and preset name,
`character_allowed_regex` by card file), since a downloaded preset or card could
otherwise rewrite every message. The page and the CLI edit all three here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from taverna.engine.assembly.regex_scripts import RegexUse as RegexUse
from taverna.engine.assembly.regex_scripts import regexed

# the time all user regexes of one turn share, also for the server's regex try-out
from taverna.engine.lorebook.regex_budget import TURN_REGEX_BUDGET as TURN_REGEX_BUDGET
from taverna.engine.lorebook.regex_budget import RegexBudget as RegexBudget
from taverna.engine.macros import MacroContext, evaluate
from taverna.errors import FormatError, NotFound
from taverna.formats import json_text
from taverna.formats.regex_scripts import export_file_name
from taverna.formats.st_settings import CHAT_COMPLETION_API, TEXT_COMPLETION_API
from taverna.formats.validation import validate
from taverna.model.chat import new_id
from taverna.model.regex_script import RegexPlacement, RegexScript
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND, set_active
from taverna.services.library.service import LibraryService
from taverna.store.repository import Document, DocumentVersion, Store

REGEX_KIND = "regex_script"
PRESET_KIND = "chat_completion_preset"
TEXT_PRESET_KIND = "text_completion_preset"
CHARACTER_KIND = "character"
# Each kind of preset by SillyTavern's id of its API (the key of `preset_allowed_regex`).
PRESET_APIS = {PRESET_KIND: CHAT_COMPLETION_API, TEXT_PRESET_KIND: TEXT_COMPLETION_API}
ORDER_KEY = "regex_order"


class RegexLayer(StrEnum):
    """Where a script lives; scripts run global first, then preset, then character."""

    GLOBAL = "global"
    PRESET = "preset"
    CHARACTER = "character"


@dataclass(frozen=True, slots=True)
class LayerScripts:
    """One layer's scripts in order, and whether they run (global ones always do)."""

    layer: RegexLayer
    scripts: tuple[RegexScript, ...]
    allowed: bool
    target: str = ""  # the preset's or the character's document id
    target_name: str = ""


def regex_order(doc: Document) -> tuple[str, ...]:
    """The global scripts' document ids in the order they run, from the active settings."""
    found = doc.data.get(ORDER_KEY)
    return tuple(i for i in found if isinstance(i, str)) if isinstance(found, list) else ()


def in_order(versions: Sequence[DocumentVersion], order: Sequence[str]) -> list[DocumentVersion]:
    """`versions` in the kept order; those it does not name follow, oldest first."""
    rank = {doc_id: index for index, doc_id in enumerate(order)}
    return sorted(versions, key=lambda v: rank.get(v.id, len(rank)))


def _extension_settings(store: Store, owner: str) -> dict[str, Any]:
    docs = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    found = docs[-1].data.get("extension_settings") if docs else None
    return dict(found) if isinstance(found, Mapping) else {}


def read_script(data: Any, *, where: str) -> RegexScript:
    """A script as the page or a file gives it; needs a `scriptName`, gets an id if none."""
    if not isinstance(data, Mapping):
        raise FormatError(
            "a regex script must be a JSON object", field=where, code="regex_script_must_be_json"
        )
    script = validate(RegexScript, dict(data), prefix=where)
    if not script.script_name.strip():
        raise FormatError(
            "a regex script needs a `scriptName`",
            field=f"{where}.scriptName",
            code="regex_script_needs_scriptname",
        )
    if not script.id:
        script = RegexScript.from_json({**script.to_json(), "id": new_id()})
    return script.migrated()


class RegexLibrary:
    """Listing, saving and allowing the scripts of each layer for one person."""

    def __init__(self, store: Store, owner: str = "") -> None:
        self.store = store
        self.owner = owner

    # ------------------------------------------------------------------ reading

    def layer(self, layer: RegexLayer, target: str = "") -> LayerScripts:
        """One layer's scripts: the global ones, or a preset's or a character's (`target`)."""
        if layer is RegexLayer.GLOBAL:
            docs = self._global_docs()
            return LayerScripts(layer, tuple(stored_regex_script(d) for d in docs), True)
        doc = self._target(layer, target)
        scripts = _embedded(doc.data, layer)
        return LayerScripts(layer, scripts, self._allowed(layer, doc), doc.id, doc.name)

    def _global_docs(self) -> list[Document]:
        docs = self.store.find_documents(REGEX_KIND, owner=self.owner)
        active = self.store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=self.owner)
        order = regex_order(active[-1]) if active else ()
        rank = {doc_id: index for index, doc_id in enumerate(order)}
        return sorted(docs, key=lambda d: rank.get(d.id, len(rank)))

    def _target(self, layer: RegexLayer, target: str) -> Document:
        kinds = PRESET_APIS if layer is RegexLayer.PRESET else (CHARACTER_KIND,)
        try:
            doc = self.store.get_document(target)
        except NotFound:
            raise NotFound(
                f"no such {layer.value}",
                field="target",
                code="no_such_kind",
                params={"value": str(layer.value)},
            ) from None
        if doc.kind not in kinds or doc.owner != self.owner:
            raise NotFound(
                f"no such {layer.value}",
                field="target",
                code="no_such_kind",
                params={"value": str(layer.value)},
            )
        return doc

    def _allowed(self, layer: RegexLayer, doc: Document) -> bool:
        extensions = _extension_settings(self.store, self.owner)
        if layer is RegexLayer.CHARACTER:
            allowed = extensions.get("character_allowed_regex")
            return isinstance(allowed, list) and f"{doc.name}.png" in allowed
        by_api = extensions.get("preset_allowed_regex")
        names = by_api.get(PRESET_APIS[doc.kind]) if isinstance(by_api, Mapping) else None
        return isinstance(names, list) and doc.name in names

    # ------------------------------------------------------------------ writing

    def save(self, layer: RegexLayer, scripts: Sequence[Any], target: str = "") -> LayerScripts:
        """Replace a layer's scripts with `scripts` (in the order they are to run).

        Every script is checked first: a bad one names its place and nothing is written.
        """
        read = [read_script(s, where=f"scripts[{i}]") for i, s in enumerate(scripts)]
        if layer is RegexLayer.GLOBAL:
            self._save_global(read)
        else:
            doc = self._target(layer, target)
            data = _with_embedded(doc.data, layer, [s.to_json() for s in read])
            self.store.put_document(
                doc.kind, doc.name, data, id=doc.id, revision=doc.revision, owner=self.owner
            )
        return self.layer(layer, target)

    def _save_global(self, scripts: Sequence[RegexScript]) -> None:
        existing = {stored_regex_script(d).id: d for d in self._global_docs()}
        order: list[str] = []
        for script in scripts:
            old = existing.pop(script.id, None)
            if (
                old is not None
                and dict(old.data) == script.to_json()
                and old.name == script.script_name
            ):
                order.append(old.id)
                continue
            doc = self.store.put_document(
                REGEX_KIND,
                script.script_name,
                script.to_json(),
                id=old.id if old else None,
                revision=old.revision if old else None,
                owner=self.owner,
            )
            order.append(doc.id)
        for gone in existing.values():
            self.store.delete_document(gone.id, revision=gone.revision)
        set_active(self.store, ORDER_KEY, order, owner=self.owner)

    def import_file(
        self, layer: RegexLayer, data: bytes, file_name: str, target: str = ""
    ) -> LayerScripts:
        """Add the scripts of a SillyTavern regex file (one script, or a list of them) at
        the end of a layer; each gets a new id, as SillyTavern's import does."""
        found = json_text.loads(data, file=file_name)
        items = found if isinstance(found, list) else [found]
        added = []
        for index, item in enumerate(items):
            where = f"{file_name}[{index}]" if isinstance(found, list) else file_name
            if not isinstance(item, Mapping) or "scriptName" not in item:
                raise FormatError(
                    "a regex script needs a `scriptName`",
                    file=where,
                    field="scriptName",
                    code="regex_script_needs_scriptname",
                )
            added.append({**dict(item), "id": new_id()})
        current = [s.to_json() for s in self.layer(layer, target).scripts]
        return self.save(layer, [*current, *added], target)

    def export_file(self, layer: RegexLayer, script_id: str, target: str = "") -> tuple[str, bytes]:
        """One script as SillyTavern exports it: its file name and its bytes."""
        for script in self.layer(layer, target).scripts:
            if script.id == script_id:
                text = json.dumps(script.to_json(), indent=4, ensure_ascii=False)
                return export_file_name(script), text.encode("utf-8")
        raise NotFound("no such regex script", field="script_id", code="no_such_regex_script")

    def allow(self, layer: RegexLayer, target: str, allowed: bool) -> LayerScripts:
        """Let a preset's or a character's own scripts run (or stop them)."""
        if layer is RegexLayer.GLOBAL:
            raise FormatError(
                "global scripts always run", field="layer", code="global_scripts_always_run"
            )
        doc = self._target(layer, target)
        extensions = _extension_settings(self.store, self.owner)
        found = extensions.get("preset_allowed_regex")
        by_api: dict[str, Any] = dict(found) if isinstance(found, Mapping) else {}
        if layer is RegexLayer.CHARACTER:
            key, names = f"{doc.name}.png", extensions.get("character_allowed_regex")
        else:
            key, names = doc.name, by_api.get(PRESET_APIS[doc.kind])
        kept = [n for n in (names if isinstance(names, list) else []) if n != key]
        if allowed:
            kept.append(key)
        if layer is RegexLayer.CHARACTER:
            extensions["character_allowed_regex"] = kept
        else:
            extensions["preset_allowed_regex"] = {**by_api, PRESET_APIS[doc.kind]: kept}
        set_active(self.store, "extension_settings", extensions, owner=self.owner)
        return self.layer(layer, target)


def regex_library(lib: LibraryService) -> RegexLibrary:
    """The regex scripts of the person whose library `lib` is."""
    return RegexLibrary(lib.store, lib.owner)


def stored_regex_script(doc: Document) -> RegexScript:
    """The script a stored regex document holds, known by the document's id when it has none."""
    try:
        script = RegexScript.from_json(dict(doc.data)).migrated()
    except ValueError as error:
        raise FormatError(
            f"not a regex script: {error}",
            file=doc.name,
            code="not_regex_script_error",
            params={"error": str(error)},
        ) from None
    # A script imported without an id is known by its document's.
    return script if script.id else RegexScript.from_json({**script.to_json(), "id": doc.id})


def _embedded(data: Mapping[str, Any], layer: RegexLayer) -> tuple[RegexScript, ...]:
    holder = data.get("data") if layer is RegexLayer.CHARACTER else data
    extensions = holder.get("extensions") if isinstance(holder, Mapping) else None
    found = extensions.get("regex_scripts") if isinstance(extensions, Mapping) else None
    if not isinstance(found, list):
        return ()
    return tuple(
        read_script(item, where=f"extensions.regex_scripts[{i}]") for i, item in enumerate(found)
    )


def _with_embedded(
    data: Mapping[str, Any], layer: RegexLayer, scripts: list[dict[str, Any]]
) -> dict[str, Any]:
    out = dict(data)
    if layer is RegexLayer.CHARACTER:
        inner = dict(out.get("data") or {})
        inner["extensions"] = {**dict(inner.get("extensions") or {}), "regex_scripts": scripts}
        out["data"] = inner
    else:
        out["extensions"] = {**dict(out.get("extensions") or {}), "regex_scripts": scripts}
    return out


def try_scripts(
    scripts: Sequence[RegexScript],
    text: str,
    *,
    placement: RegexPlacement,
    use: RegexUse,
    depth: int | None = None,
    user: str = "User",
    char: str = "",
    budget: RegexBudget | None = None,
) -> str:
    """What `scripts` make of `text` at one moment, as the page's test box shows it;
    `{{user}}` and `{{char}}` print the given names. Within `budget` when one is given,
    as a turn's scripts are: what it stopped or kept from running is in its notes."""
    names = MacroContext(user=user, char=char)
    return regexed(
        text, placement, scripts, lambda t: evaluate(t, names).text, use, depth=depth, budget=budget
    )
