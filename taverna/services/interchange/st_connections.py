"""The connections and connection profiles of a SillyTavern `settings.json`.

SillyTavern keeps the API a person last used (its Chat Completion source with that
source's model and address, its Text Completion type with its server's address and model)
and the connection manager's profiles. Each becomes a connection made from the source of
that name (`providers/sources.py`); the keys are in SillyTavern's `secrets.json`, which is
not read, so each connection asks for its key. A connection of the same name already here
is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from taverna.errors import TavernaError
from taverna.formats import settings_file as part
from taverna.providers import sources
from taverna.services.connections.connection import Connection
from taverna.services.connections.profiles import Profiles, from_sillytavern, sillytavern_profiles
from taverna.services.connections.service import ConnectionService
from taverna.services.interchange.report import ImportReport, Skipped
from taverna.services.library.service import StoredItem

# The `oai_settings` key of each source's model where it is not `{source}_model`
_MODEL_KEYS = {"makersuite": "google_model", "01ai": "zerooneai_model"}
# The `oai_settings` key of each source's own address
_URL_KEYS = {"custom": "custom_url"}
# The sources SillyTavern sends to its reverse proxy (`reverse_proxy`) when one is set
_PROXIED = {"openai", "claude", "mistralai", "makersuite", "deepseek", "xai"}
CONNECTION = "connection"
PROFILE = "connection_profile"


@dataclass
class _Made:
    """The connections made so far, by (source, address): a profile on the same API and
    address as another uses the same connection."""

    connections: ConnectionService
    file: str
    report: ImportReport
    by_place: dict[tuple[str, str], Connection] = field(default_factory=dict)

    def connection(self, source: sources.Source, url: str, model: str) -> Connection | None:
        url = _as_source_url(url.strip(), source) or source.default_url
        found = self.by_place.get((source.name, url))
        if found is not None:
            return found
        name = f"{source.label} (SillyTavern)"
        if any(c.name == name for c in self.by_place.values()):
            name = f"{source.label} (SillyTavern, {urlsplit(url).netloc or url})"
        existing = next((c for c in self.connections.list() if c.name == name), None)
        if existing is None:
            try:
                existing = self.connections.add(name, source.name, url=url, model=model)
            except TavernaError as exc:
                self.report.skipped.append(Skipped.because(f"{self.file}#{source.name}", exc))
                return None
            self.report.stored.append(StoredItem(CONNECTION, existing.id, name, file=self.file))
        self.by_place[(source.name, url)] = existing
        return existing


def import_connections(
    connections: ConnectionService, doc: Mapping[str, Any], *, file: str
) -> ImportReport:
    """The API SillyTavern had in use (Chat Completion and Text Completion) and every
    connection profile, as connections and profiles here."""
    report = ImportReport()
    made = _Made(connections, file, report)
    oai = part.chat_completion_part(doc)
    textgen = doc.get("textgenerationwebui_settings")
    textgen = textgen if isinstance(textgen, Mapping) else {}
    chat_source = _chat_source(oai)
    text_source = _text_source(textgen)
    # the API SillyTavern had in use first, so it is the default of a folder with none
    order = [("chat", chat_source), ("text", text_source)]
    if doc.get("main_api") == "textgenerationwebui":
        order.reverse()
    for family, source in order:
        if source is None:
            continue
        if family == "chat":
            made.connection(source, _chat_url(oai, source), _chat_model(oai, source))
        else:
            made.connection(source, _text_url(textgen, source), _text_model(textgen, source))
    profiles = Profiles(connections.store, connections.owner)
    for index, raw in enumerate(sillytavern_profiles(doc)):
        place = f"{file}#extension_settings.connectionManager.profiles.{index}"
        source = _profile_source(raw)
        if source is None:
            report.skipped.append(
                Skipped(
                    place,
                    f"the profile's API {raw.get('api')!r} is none taverna connects to",
                    "profile_api_unknown",
                    {"api": str(raw.get("api"))},
                )
            )
            continue
        url = str(raw.get("api-url") or "")
        if not url and source is chat_source:
            url = _chat_url(oai, source)
        elif not url and source is text_source:
            url = _text_url(textgen, source)
        connection = made.connection(source, url, str(raw.get("model") or ""))
        if connection is None:
            continue
        try:
            stored = profiles.put(from_sillytavern(raw, connection.name))
        except TavernaError as exc:
            report.skipped.append(Skipped.because(place, exc))
            continue
        report.stored.append(
            StoredItem(PROFILE, stored.st_id or stored.name, stored.name, file=file)
        )
    return report


def _usable(found: sources.Source | None) -> sources.Source | None:
    return found if found is not None and not found.gone else None


def _chat_source(oai: Mapping[str, Any]) -> sources.Source | None:
    name = oai.get("chat_completion_source")
    return _usable(sources.from_sillytavern(chat_source=name)) if isinstance(name, str) else None


def _text_source(textgen: Mapping[str, Any]) -> sources.Source | None:
    name = textgen.get("type")
    if not isinstance(name, str) or not name:
        return None
    return _usable(sources.from_sillytavern(textgen_type=name))


def _profile_source(raw: Mapping[str, Any]) -> sources.Source | None:
    api = raw.get("api")
    if not isinstance(api, str) or not api:
        return None
    if raw.get("mode") == "tc":
        found = sources.from_sillytavern(textgen_type=api)
    else:
        found = sources.from_sillytavern(chat_source=api)
    return _usable(found or sources.find(api))


def _chat_model(oai: Mapping[str, Any], source: sources.Source) -> str:
    value = oai.get(_MODEL_KEYS.get(source.st_name, f"{source.st_name}_model"))
    return value.strip() if isinstance(value, str) else ""


def _chat_url(oai: Mapping[str, Any], source: sources.Source) -> str:
    key = _URL_KEYS.get(source.st_name) or ("reverse_proxy" if source.st_name in _PROXIED else "")
    own = oai.get(key) if key else None
    return own.strip() if isinstance(own, str) else ""


def _as_source_url(url: str, source: sources.Source) -> str:
    """A server address as SillyTavern keeps it (`http://127.0.0.1:5000`) as the source's
    requests take it here (its OpenAI-style API under `/v1`)."""
    text = source.family is sources.Family.TEXT
    if text and url and source.default_url.endswith("/v1") and not url.rstrip("/").endswith("/v1"):
        return f"{url.rstrip('/')}/v1"
    return url


def _text_model(textgen: Mapping[str, Any], source: sources.Source) -> str:
    value = textgen.get(f"{source.st_name}_model")
    return value.strip() if isinstance(value, str) else ""


def _text_url(textgen: Mapping[str, Any], source: sources.Source) -> str:
    urls = textgen.get("server_urls")
    found = urls.get(source.st_name) if isinstance(urls, Mapping) else None
    return found.strip() if isinstance(found, str) else ""
