"""Named connections to model APIs, and their keys kept apart from everything else.

A connection (API, URL, model, key reference, post-processing) is a library document
of kind `connection`. Its key is never in the document: either the name of an
environment variable (`env:NAME`) or an entry in the data folder's `secrets.json`,
a file only its owner can read or write (mode 0600). No method returns a whole key
except `resolve_key`, which the transport uses; listings show a masked form.
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp

from taverna.errors import Forbidden, FormatError, NotFound, TavernaError
from taverna.providers import sources
from taverna.providers.events import Event
from taverna.providers.outbound import OutboundPolicy
from taverna.providers.registry import provider
from taverna.providers.request import Api, HttpRequest, PostProcessing, RequestOptions
from taverna.providers.transport import Timeouts
from taverna.providers.wire import StreamParser
from taverna.services.connections.backend_tokens import BackendTokenizer, backend_tokenizer
from taverna.services.connections.connection import Connection as Connection
from taverna.services.connections.fields import (
    Settled,
    cache_depth,
    check_key,
    connection_name,
    mask,
    origin,
    settle,
    shown_origin,
)
from taverna.services.connections.kept import KeptConnections, Versions
from taverna.services.connections.local_models import LocalSpec, local_models
from taverna.services.connections.model_gate import ModelGate
from taverna.services.connections.model_lists import model_sizes
from taverna.services.connections.outbound_rules import OutboundRules
from taverna.services.connections.probe import ConnectionTest, probe
from taverna.services.connections.profiles import Profiles
from taverna.services.connections.secrets_file import Secrets
from taverna.store.repository import Store

KIND = "connection"


def api_sources() -> list[sources.Source]:
    """Every API source by name, for the connection form's list."""
    return list(sources.SOURCES.values())


def default_api(store: Store, owner: str = "") -> Api | None:
    """The API of the connection used when none is named (the default one, or the only
    one), read without its key; None when there is no such connection."""
    docs = store.find_documents(KIND, owner=owner)
    chosen = [d for d in docs if d.data.get("default")] or (docs if len(docs) == 1 else [])
    if not chosen:
        return None
    try:
        return Api.parse(str(chosen[0].data.get("api", "")))
    except TavernaError:
        return None


class ConnectionService:
    """Add, list, pick and test connections; resolve their keys for the transport."""

    def __init__(
        self,
        store: Store,
        data_dir: Path,
        *,
        owner: str = "",
        environ: Mapping[str, str] | None = None,
        key_env_allowed: Collection[str] | None = None,
        gate: ModelGate | None = None,
        outbound: OutboundRules | None = None,
        versions: Versions | None = None,
        kept: KeptConnections | None = None,
    ) -> None:
        """`key_env_allowed`: the environment variables a new key may be read from (None:
        any, for the operator's own command line; the server passes the ones its config
        names, so a page cannot have a connection send the server's other secrets).
        `gate`: what counts each model request against its account's quota (one over
        `store` when not given; the connections of other accounts share it).
        `outbound`: whose requests go out under the outbound policy (None: nobody's).
        `versions`: the count of the library's writes (the server's `LibraryWatch`); given,
        each account's list is kept until a write is counted (see `kept`), else it is read
        at every use. `kept`: the lists already kept (`of` shares them)."""
        self.store = store
        self.outbound = outbound
        self.gate = gate if gate is not None else ModelGate(store)
        self.secrets = Secrets(data_dir)
        self.owner = owner
        self.environ = os.environ if environ is None else environ
        self.key_env_allowed = None if key_env_allowed is None else frozenset(key_env_allowed)
        if kept is None and versions is not None:
            kept = KeptConnections(versions)
        self.kept = kept

    def of(self, owner: str) -> ConnectionService:
        """The connections of account `owner`, by the same rules and keys file (this
        service itself when it is that account's)."""
        if owner == self.owner:
            return self
        return ConnectionService(
            self.store,
            self.secrets.folder,
            owner=owner,
            environ=self.environ,
            key_env_allowed=self.key_env_allowed,
            gate=self.gate,
            outbound=self.outbound,
            kept=self.kept,
        )

    def policy(self, connection: Connection) -> OutboundPolicy | None:
        """The outbound policy the connection's requests go out under (None: none). A local
        model is the server's own process, never policed."""
        if self.outbound is None or connection.api is Api.LOCAL:
            return None
        return self.outbound.for_owner(self.owner)

    def _from_document(self, doc: Any) -> Connection:
        data = doc.data
        try:
            return Connection(
                name=doc.name,
                api=Api.parse(str(data.get("api", ""))),
                url=str(data.get("url", "")),
                model=str(data.get("model", "")),
                key_ref=str(data.get("key_ref", "")),
                post_processing=PostProcessing.parse(str(data.get("post_processing", ""))),
                default=bool(data.get("default", False)),
                options=dict(data.get("options") or {}),
                id=doc.id,
                revision=doc.revision,
            )
        except TavernaError as exc:
            raise FormatError(
                exc.message, file=f"connection {doc.name!r}", code=exc.code, params=exc.params
            ) from None

    def list(self) -> list[Connection]:
        if self.kept is not None:
            return list(self.kept.get(self.owner, self._read))
        return self._read()

    def _read(self) -> builtins.list[Connection]:
        docs = self.store.find_documents(KIND, owner=self.owner)
        return [self._from_document(d) for d in docs]

    def profiles(self) -> Profiles:
        """This account's connection profiles (connection, model, preset, templates...)."""
        return Profiles(self.store, self.owner)

    def get(self, name: str | None = None) -> Connection:
        """A connection by name; without a name, the default one (or the only one)."""
        connections = self.list()
        if name is not None:
            for connection in connections:
                if connection.name == name:
                    return connection
            raise NotFound(
                f"no connection named {name!r}; see `taverna connection list`",
                code="no_connection_named",
                params={"name": name},
            )
        for connection in connections:
            if connection.default:
                return connection
        if len(connections) == 1:
            return connections[0]
        if not connections:
            raise NotFound(
                "no model connection yet: add one under Connections in the page, "
                "or with `taverna connection add`",
                code="no_connection",
            )
        raise NotFound(
            "several connections and none is the default; name one", code="no_default_connection"
        )

    def add(
        self,
        name: str,
        api: Api | str,
        *,
        url: str = "",
        model: str = "",
        key: str | None = None,
        key_env: str | None = None,
        default: bool = False,
        post_processing: PostProcessing | str = PostProcessing.NONE,
        options: Mapping[str, Any] | None = None,
    ) -> Connection:
        """Create or replace the connection `name`; `key` goes to the secrets file.

        `key` None keeps the connection's key, "" removes it. A key stays with the site it
        was given for: when the URL (or the API, and so its default URL) now leads to
        another origin, the key must be given again (FormatError, field `key`).
        """
        name = connection_name(name)
        if key is not None and key_env is not None:
            raise TavernaError(
                "give the key either from the environment or directly, not both",
                code="give_key_either_from_environment",
            )
        fields = settle(api, url, post_processing, options)
        if fields.api is Api.LOCAL:
            self._check_local(model, fields, keyed=bool(key or key_env))
        if key:
            key = check_key(key.strip())
        if key_env:
            self._check_key_env(key_env)
        existing = next((c for c in self.list() if c.name == name), None)
        key_ref = self._key_ref(existing, fields, key, key_env)
        connection = Connection(
            name=name,
            api=fields.api,
            url=fields.url,
            model=model.strip(),
            key_ref=key_ref,
            post_processing=fields.post_processing,
            default=default or (existing.default if existing else not self.list()),
            options=fields.options,
        )
        doc = self.store.put_document(
            KIND,
            name,
            connection.to_json(),
            id=existing.id if existing else None,
            revision=existing.revision if existing else None,
            owner=self.owner,
        )
        if connection.default:
            self._clear_other_defaults(name)
        return self._from_document(doc)

    def _key_ref(
        self, existing: Connection | None, fields: Settled, key: str | None, key_env: str | None
    ) -> str:
        """Where the key of a connection being added is: the variable named, the key given
        (stored in the secrets file, in the old key's place), or the old one when no key is
        given and the connection still leads to the same site. A secret no longer used is
        deleted."""
        if (
            existing
            and existing.key_ref
            and key is None
            and not key_env
            and origin(existing.api, existing.url) != origin(fields.api, fields.url)
        ):
            shown = shown_origin(fields.api, fields.url)
            raise FormatError(
                f"the connection now leads to another site ({shown}), so its key "
                "is not sent there: give the key again with the new URL, or remove the key",
                field="key",
                code="connection_moved_key_withheld",
                params={"chosen": str(shown)},
            )
        key_ref = ""
        if key_env:
            key_ref = f"env:{key_env}"
        elif key:
            reuse = (
                existing.key_ref if existing and existing.key_ref.startswith("secret:") else None
            )
            key_ref = self.secrets.put(key, reuse)
        elif existing and key is None:
            key_ref = existing.key_ref
        if existing and existing.key_ref.startswith("secret:") and key_ref != existing.key_ref:
            self.secrets.delete(existing.key_ref)
        return key_ref

    def _check_local(self, model: str, fields: Settled, *, keyed: bool) -> None:
        """A local model runs here: no URL, no key, a model this account may add."""
        if fields.url or keyed:
            raise TavernaError(
                "a local model runs here: it takes no URL and no key",
                field="url",
                code="local_model_runs_here_it",
            )
        self._check_local_model(model.strip())
        LocalSpec.of(model, fields.options)  # a missing file or a bad setting, named now

    def _check_local_model(self, model: str) -> None:
        """With accounts, a local model other than the bundled one is an admin's to add
        (from the models folder, by file name): the same refusal whatever `model` names,
        so nobody learns which files the server has."""
        rules = self.outbound
        if rules is None or not rules.accounts_on() or not model:
            return
        if rules.for_owner(self.owner) is not None:
            raise Forbidden(
                "only an admin adds a local model from the server's models folder; "
                "leave the model empty for the bundled one",
                field="model",
                code="local_model_admin_only",
            )

    def _check_key_env(self, variable: str) -> None:
        if self.key_env_allowed is None or variable in self.key_env_allowed:
            return
        allowed = ", ".join(sorted(self.key_env_allowed)) or "none"
        raise FormatError(
            f"this server does not let a connection read its key from ${variable} "
            f"(allowed: {allowed}; the operator lists them under key_env in server.toml)",
            field="key_env",
            code="key_variable_not_allowed",
            params={"variable": str(variable), "allowed": str(allowed)},
        )

    def _clear_other_defaults(self, name: str) -> None:
        for other in self.list():
            if other.name != name and other.default:
                data = {**other.to_json(), "default": False}
                self.store.put_document(
                    KIND, other.name, data, id=other.id, revision=other.revision, owner=self.owner
                )

    def set_default(self, name: str) -> Connection:
        connection = self.get(name)
        data = {**connection.to_json(), "default": True}
        doc = self.store.put_document(
            KIND, name, data, id=connection.id, revision=connection.revision, owner=self.owner
        )
        self._clear_other_defaults(name)
        return self._from_document(doc)

    def remove(self, name: str) -> None:
        connection = self.get(name)
        self.store.delete_document(connection.id, revision=connection.revision)
        if connection.key_ref.startswith("secret:"):
            self.secrets.delete(connection.key_ref)

    def resolve_key(self, connection: Connection) -> str:
        """The key itself, for the transport's headers only; never shown or logged."""
        ref = connection.key_ref
        if not ref:
            return ""
        source, _, rest = ref.partition(":")
        if source == "env":
            value = self.environ.get(rest)
            if not value:
                raise NotFound(
                    f"the key of connection {connection.name!r} comes from ${rest}, which is not set",
                    code="key_variable_unset",
                    params={"name": connection.name, "variable": rest},
                )
        else:
            value = self.secrets.get(ref)
        try:
            return check_key(value)
        except FormatError:
            raise FormatError(
                "the key holds characters an HTTP header cannot carry; give it again",
                file=f"connection {connection.name!r}",
                field="key",
                code="api_key_not_header_safe",
            ) from None

    def key_hint(self, connection: Connection) -> str:
        """The masked key, for listings."""
        try:
            return mask(self.resolve_key(connection))
        except NotFound:
            return "missing"
        except FormatError:
            return "unusable"

    def request_options(self, connection: Connection, **overrides: Any) -> RequestOptions:
        """The request options this connection implies; callers add names and tools."""
        options = connection.options
        base = RequestOptions(
            model=connection.model,
            stream=bool(options.get("stream", True)),
            post_processing=connection.post_processing,
            use_system_prompt=options.get("use_system_prompt"),
            mistral_prefix=provider(connection.api).opted_in_place(options),
            cache_system_prompt=bool(options.get("cache_system_prompt", False)),
            cache_at_depth=cache_depth(options.get("caching_at_depth")),
        )
        named = sources.find(str(options.get("source", "")))
        if named is not None:
            base = replace(base, stop_limit=named.stop_limit, source=named.name)
        return replace(base, **overrides) if overrides else base

    def backend_tokenizer(self, connection: Connection) -> BackendTokenizer | None:
        """The tokenizer of the connection's own server, where its backend has a tokenize
        endpoint (None otherwise, for a connection whose key is missing, and for an
        account whose requests go out under the outbound policy)."""
        api = connection.api
        if not api.is_text_completion or api is Api.LOCAL or self.policy(connection) is not None:
            return None
        try:
            key = self.resolve_key(connection) if connection.key_ref else ""
        except (NotFound, FormatError):
            return None
        source = str(connection.options.get("source", ""))
        return backend_tokenizer(connection.api, source, connection.url, key, connection.model)

    def endpoint_now(self, connection: Connection) -> tuple[str, str]:
        """The base URL and key a request of `connection` goes to: its own, or, for a local
        model, its process's (started here, blocking, if it is not running). The one place
        a request's URL comes from: a local connection's `url` is never where it answers."""
        if connection.api is Api.LOCAL:
            return local_models().endpoint(LocalSpec.of(connection.model, connection.options))
        return connection.url, self.resolve_key(connection)

    async def endpoint(self, connection: Connection) -> tuple[str, str]:
        """`endpoint_now`, off the event loop when a local model process may be started."""
        if connection.api is Api.LOCAL:
            return await asyncio.to_thread(self.endpoint_now, connection)
        return self.endpoint_now(connection)

    async def stream(
        self,
        request: HttpRequest,
        parser: StreamParser,
        *,
        client: aiohttp.ClientSession | None = None,
        secret: str = "",
        timeouts: Timeouts = Timeouts(),
        **transport: Any,
    ) -> AsyncIterator[Event]:
        """Send a request to a model for this account and yield its answer's events: the
        one way a model request goes out, counted against the account's hourly quota
        (QuotaExceeded past it, before anything is sent; see `model_gate`). `transport`:
        what else `stream_events` takes. An account under the outbound policy sends it on
        a session of its own under the policy (`client`'s connections are not policed)."""
        policy = self._request_policy(request)
        if policy is not None:
            client = None
            transport = {**transport, "policy": policy}
        async for event in self.gate.stream(
            self.owner,
            request,
            parser,
            client=client,
            secret=secret,
            timeouts=timeouts,
            **transport,
        ):
            yield event

    def _request_policy(self, request: HttpRequest) -> OutboundPolicy | None:
        """The policy a request of this account goes out under: none to the server's own
        local model process."""
        if self.outbound is None or local_models().serves(request.url):
            return None
        return self.outbound.for_owner(self.owner)

    async def list_models(self, name: str | None = None) -> builtins.list[str]:
        """The models the connection's API offers (ProviderError if it cannot say)."""
        return [model for model, _ in await self.list_model_sizes(name)]

    async def list_model_sizes(
        self, name: str | None = None
    ) -> builtins.list[tuple[str, int | None]]:
        """The models the connection's API offers, each with its context size where the
        listing of the connection's source says it (OpenRouter's `context_length`)."""
        connection = self.get(name)
        return await model_sizes(
            connection, key=self.resolve_key(connection), policy=self.policy(connection)
        )

    async def test(
        self, name: str | None = None, *, timeouts: Timeouts | None = None
    ) -> ConnectionTest:
        """Send a tiny real request and report whether an answer came back."""
        return await probe(self, self.get(name), timeouts)
