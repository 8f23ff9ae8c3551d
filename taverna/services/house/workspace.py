"""An opened data folder with its services: what the server and `taverna chat` both run on.

One store, one chat service, one generation service with its long-lived token-count
cache, and the backups of every chat written as the chats change.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

from taverna.engine.lorebook.regex_budget import TURN_REGEX_BUDGET
from taverna.engine.script import Generation
from taverna.errors import NotFound, TavernaError
from taverna.model.chat import Node
from taverna.model.prompt import Prompt
from taverna.services.accounts.account_import import UserFolderImport, import_user_folders
from taverna.services.accounts.ownership import Ownership
from taverna.services.accounts.service import AccountService
from taverna.services.chats import sent_prompts
from taverna.services.chats.backups import BackupFlusher, BackupService
from taverna.services.chats.images import ImageLibrary
from taverna.services.chats.search import SearchService
from taverna.services.chats.service import ChatService
from taverna.services.connections import local_models
from taverna.services.connections.outbound_rules import OutboundRules
from taverna.services.connections.service import ConnectionService
from taverna.services.house.data import open_data, resolve_data_dir
from taverna.services.house.scratch import clean_leftovers
from taverna.services.interchange import InterchangeService
from taverna.services.interchange.library_import import ProgressCallback
from taverna.services.library import presets
from taverna.services.library.service import LibraryKind, LibraryService
from taverna.services.library.watch import Kept, LibraryWatch
from taverna.services.memory.recall import (
    EmbeddingBacklog,
    EmbeddingPlan,
    RecallService,
    accounts_plan,
)
from taverna.services.memory.recall_keys import RecallKeys
from taverna.services.plugins import EventBus, Plugins, PluginServices
from taverna.services.scripts.message_regex import StoredRegex
from taverna.services.scripts.quick_reply_events import QuickReplyAutomations
from taverna.services.scripts.user_tools import UserTools
from taverna.services.turns import Completed, Ending, GenerationService, RunningGeneration
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.journal import ReplyJournal
from taverna.services.turns.paths import PathEnds
from taverna.services.turns.quiet import quiet_text
from taverna.services.turns.summary_generation import SummaryGenerator
from taverna.store.repository import Account, Store

if TYPE_CHECKING:  # Redis is imported only where it is used
    from taverna.services.turns.shared_runs import SharedRegistry

log = logging.getLogger(__name__)

SAMPLES = ("Ione Calder.png", "Brasswater.json")
# The product's own presets and templates, in SillyTavern's file formats (taverna/data/presets).
DEFAULT_PRESETS = (
    "Taverna Default.json",
    "ChatML.json",
    "Llama 3 Instruct.json",
    "Mistral.json",
    "Taverna Story.json",
    "Taverna Roleplay.json",
)
_PRESET_KINDS = (
    LibraryKind.CHAT_COMPLETION_PRESET,
    LibraryKind.TEXT_COMPLETION_PRESET,
    LibraryKind.INSTRUCT_TEMPLATE,
    LibraryKind.CONTEXT_TEMPLATE,
    LibraryKind.SYSTEM_PROMPT,
)
# A library holding any of these was in use before: its presets are the person's choice.
_SEEDED_BEFORE = (LibraryKind.CHARACTER, LibraryKind.LOREBOOK)
LOCAL_CONNECTION = "Local model"
# Chats this long or longer are backed up by a process of their own.
LONG_CHAT = 2000
# How often a server hands memory its threads freed back to the system (see
# `release_freed_memory`): the C allocator keeps each thread's freed pages, and a server
# answering on many threads otherwise creeps up for hours.
RELEASE_MEMORY_EVERY = 60.0
# The data folder's folder of replies waiting for the database (see generation.journal).
JOURNAL_FOLDER = "journal"


@dataclass
class Workspace:
    """The services over one data folder's store; close it when done."""

    data_dir: Path
    store: Store
    chats: ChatService
    connections: ConnectionService
    generation: GenerationService
    backups: BackupService
    flusher: BackupFlusher | None = None
    turns: TurnContexts | None = None  # the prompt builder behind `generation`
    summaries: SummaryGenerator | None = None  # makes summaries (also after replies)
    embeddings: EmbeddingBacklog | None = None  # embeds new messages for recall, when on
    # the bus the services announce on, with the plugins loaded from entry points
    events: EventBus = field(default_factory=EventBus)
    automations: QuickReplyAutomations | None = None  # Quick Replies run on events
    # when what the background work keeps of the stored settings is read again
    watch: LibraryWatch = field(default_factory=LibraryWatch)
    # whose model and embeddings requests go out under the outbound policy
    outbound: OutboundRules | None = None

    @property
    def plugins(self) -> Plugins:
        return self.events.plugins

    # The revision of each chat last handed to the backups, so a change is backed up once
    # however many callers report it (a route, then the generation that followed it).
    _reported: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _releasing: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    _journaling: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    def images(self, owner: str = "") -> ImageLibrary:
        """The pictures attached to messages, of one account."""
        return ImageLibrary(self.store, owner=owner)

    def search(self) -> SearchService:
        """Message search over the store (in a chat or across one account's chats)."""
        return SearchService(self.store)

    def library(self, owner: str = "") -> LibraryService:
        """The library of an account ("": the single user's)."""
        return LibraryService(self.store, owner=owner)

    def connections_of(
        self, owner: str, *, key_env_allowed: Collection[str] | None = None
    ) -> ConnectionService:
        """The model API connections of an account ("": the single user's); a new key may
        come only from the environment variables in `key_env_allowed` (None: any)."""
        return ConnectionService(
            self.store,
            self.data_dir,
            owner=owner,
            key_env_allowed=key_env_allowed,
            outbound=self.outbound,
        )

    def accounts(self) -> AccountService:
        """The accounts of a server run with them (users, sessions, quotas)."""
        return AccountService(self.store)

    def welcome_account(self, owner: str) -> list[str]:
        """Start a new account's library as a new install's (see `welcome_account`)."""
        return welcome_account(self.store, self.data_dir, owner)

    def import_accounts(
        self,
        root: Path,
        *,
        accounts: Mapping[str, str] | None = None,
        progress: ProgressCallback | None = None,
        starting: Callable[[int, int, str], None] | None = None,
    ) -> list[UserFolderImport]:
        """Each SillyTavern user folder under `root` into its account (`account_import`)."""
        return import_user_folders(
            self.store, root, accounts=accounts, progress=progress, starting=starting
        )

    def ownership(self, owner: str) -> Ownership:
        """The checks that what a request names by id is `owner`'s."""
        return Ownership(self.store, owner)

    def interchange(self) -> InterchangeService:
        """Chats to and from SillyTavern's files."""
        return InterchangeService(self.store)

    def chat_written(self, chat_id: str, revision: int | None = None) -> None:
        """Call after a chat changed (to `revision`, when the caller knows it): its backup
        is written now or soon (throttled)."""
        try:
            if revision is None:
                revision = self.store.get_chat(chat_id).revision
            if self._reported.get(chat_id) == revision:
                return
            self._reported.pop(chat_id, None)
            self._reported[chat_id] = revision  # the newest last; the oldest go past 4,096
            if len(self._reported) > 4096:
                del self._reported[next(iter(self._reported))]
            if self.embeddings is not None:
                self.embeddings.wake(chat_id)  # a new or edited message is embedded now
            self.backups.after_write(chat_id, revision)
        except NotFound:
            pass  # the write deleted the chat; its earlier backups stay
        except (OSError, TavernaError) as exc:
            # A full disk must not undo the user's write; it is reported, not hidden.
            log.warning("could not back up chat %s: %s", chat_id, exc)

    def follow_up(self, run: RunningGeneration) -> asyncio.Task[Completed]:
        """Right after a generation started: a task that, once its reply is stored, records
        the prompt as it was sent and backs the chat up (whoever follows the stream)."""
        prompt = self.generation.last_prompts.get(run.chat_id)
        return asyncio.create_task(self.settle(run, prompt))

    async def settle(self, run: RunningGeneration, prompt: Prompt | None = None) -> Completed:
        """Wait for a generation to end; when its reply was stored, keep the prompt it was
        generated from (`prompt`) and back the chat up."""
        done = await run.wait()
        if done.outcome is Ending.SAVED:
            # Encoding, writing and backing up take milliseconds to seconds: off the loop,
            # so the next request (the person's next turn) is not kept waiting.
            await asyncio.to_thread(self._keep_record, run, done, prompt)
        else:
            run.requests = []
        return done

    def _keep_record(self, run: RunningGeneration, done: Completed, prompt: Prompt | None) -> None:
        requests, run.requests = run.requests, []  # whole prompts: not kept with the run
        if prompt is not None and done.node_id and requests:
            url = requests[-1][0]
            bodies = [body for _, body in requests]
            record = sent_prompts.encode(prompt, url=url, bodies=bodies)
            try:
                self.store.save_sent_prompt(run.chat_id, done.node_id, record)
            except TavernaError as exc:
                log.warning("could not keep the prompt of reply %s: %s", done.node_id, exc)
        # The reply's revision is known: the chat is not read again for it.
        self.chat_written(run.chat_id, done.revision)

    def warm_up(self, *, chats: int = 3, budget: float = 10.0) -> list[str]:
        """Prepare the next prompt of the most recently used chats (their lorebooks parsed
        and compiled, tokenizers loaded), so the first turn after a start costs what any
        turn costs. Stops after `budget` seconds; returns the chats it prepared."""
        started = time.monotonic()
        listings = sorted(
            self.store.list_chats(),
            key=lambda item: item.chat.updated or datetime.min.replace(tzinfo=UTC),
            reverse=True,
        )
        prepared = []
        for listing in listings[:chats]:
            if time.monotonic() - started > budget:
                break
            try:
                self.generation.warm(listing.chat.id)
            except TavernaError as exc:
                log.warning("could not prepare chat %s: %s", listing.chat.id, exc)
                continue
            prepared.append(listing.chat.id)
        release_freed_memory()
        return prepared

    async def open_http(self) -> None:
        """Give the generation service one HTTP client for this event loop's life, so
        replies reuse kept-alive connections instead of a new handshake each."""
        self.generation.sessions.open()
        await self.generation.registry.open()
        loop = asyncio.get_running_loop()
        task = self._releasing
        if task is None or task.done() or task.get_loop() is not loop:
            _stop_elsewhere(task)
            self._releasing = loop.create_task(self._release_memory(), name="memory release")
        task = self._journaling
        if task is None or task.done() or task.get_loop() is not loop:
            _stop_elsewhere(task)
            # replies the database could not take wait in the journal: moved now, and
            # every few seconds while any wait (and backed up as any reply is)
            self.generation.on_moved = self.chat_written
            self._journaling = loop.create_task(self.generation.keep_journal(), name="journal")

    async def _release_memory(self) -> None:
        while True:
            await asyncio.sleep(RELEASE_MEMORY_EVERY)
            await asyncio.to_thread(release_freed_memory)

    async def close_http(self) -> None:
        journaling, self._journaling = self._journaling, None
        if journaling is not None and journaling.get_loop() is asyncio.get_running_loop():
            journaling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await journaling
        else:
            _stop_elsewhere(journaling)
        task, self._releasing = self._releasing, None
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        else:
            _stop_elsewhere(task)
        await self.generation.registry.close()
        await self.generation.sessions.close()

    def close(self) -> None:
        """Write pending backups and close the store."""
        if self.automations is not None:
            self.automations.close()
            self.automations = None
        if self.embeddings is not None:
            self.embeddings.stop()
            self.embeddings = None
        if self.turns is not None:
            self.turns.recall.close()
        if self.flusher is not None:
            self.flusher.stop()
            self.flusher = None
        else:
            self.backups.flush(force=True)
        if self.generation.journal is not None:
            self.generation.journal.close()
        self.store.close()


def _embedding_backlog(
    store: Store, recall: RecallService, watch: LibraryWatch
) -> EmbeddingBacklog:
    """Messages embedded once, in the background, for each account whose recall is on,
    with the model its own settings name (started)."""
    plans: Kept[str, EmbeddingPlan] = Kept(watch)

    def plan() -> EmbeddingPlan:
        return plans.get("", lambda: accounts_plan(store, recall))

    # A sent message's vector, made for its turn, is stored rather than made again.
    embeddings = EmbeddingBacklog(store, plan=plan, shared=recall.texts)
    embeddings.start()
    return embeddings


def open_workspace(
    data_dir: Path,
    *,
    background_backups: bool = True,
    regex_budget: float = TURN_REGEX_BUDGET,
    plugins: bool = True,
    redis_url: str | None = None,
) -> Workspace:
    """Open the data folder's store (SQLite, migrated, unless $TAVERNA_DATABASE_URL names
    another database) and build the services over it.

    `background_backups` starts a thread that writes the backups: a chat's writes after
    its first are backed up by it, together, at most `interval` seconds after the first of
    them; without it they are written on the next write after the interval, or on close.
    `regex_budget`: the seconds all user regexes of one turn may spend together.
    `plugins`: load the plugins installed under the `taverna` entry points (the
    environment variable TAVERNA_NO_PLUGINS=1 turns them off too).
    `redis_url`: share generations (their events, Stop) and chat changes with the other
    server processes on this Redis; without it they live in this process.
    """
    # An unreachable Redis is said before anything is opened.
    registry = shared_registry(redis_url) if redis_url else None
    folder = open_data(data_dir)
    # Temporary folders of a process that was killed mid-upload go now.
    clean_leftovers(folder.path)
    store = folder.store
    # Chats deleted before a crash or a shutdown that left rows behind: finish them.
    store.purge_in_background()
    # What the work after each turn keeps of the settings is read again after any write of
    # the library, here or (through Redis) in another process.
    watch = LibraryWatch().watch(store)
    if registry is not None:
        registry.use_leases(store)  # a busy chat stays busy while Redis is away
        watch.announce = registry.documents_changed
        registry.on_documents = watch.heard
    found = Plugins()
    if plugins and os.environ.get("TAVERNA_NO_PLUGINS", "") in ("", "0"):
        found.load_entry_points()
    events = EventBus(found)
    chats = ChatService(store, rewriter=StoredRegex(store), events=events)
    outbound = OutboundRules(store)
    # A local model is named by its file name in the data folder's models folder, or by a
    # path (a server with accounts allows none: see AppContext).
    local_models.local_models().models_dir = folder.path / local_models.MODELS_FOLDER
    local_models.local_models().paths_allowed = lambda: True
    connections = ConnectionService(store, folder.path, outbound=outbound, versions=watch)
    paths = PathEnds(store)
    recall = RecallService(store, watch=watch, keys=RecallKeys(folder.path), outbound=outbound)
    turns = TurnContexts(store, paths=paths, regex_budget=regex_budget, recall=recall)
    generation = GenerationService(
        store,
        connections,
        turns,
        chats=chats,
        paths=paths,
        events=events,
        user_tools=UserTools(chats, events),
        registry=registry,
        journal=ReplyJournal(folder.path / JOURNAL_FOLDER),
    )
    events.services = plugin_services(chats, connections, generation)
    summaries = SummaryGenerator(generation, watch=watch)
    generation.after_reply.append(summaries.after_reply)
    # A long chat's backup reads its whole tree: a server hands it to a process of its own.
    separate = LONG_CHAT if background_backups else None
    # With the flusher, every backup is written by it, off the turn's path (a turn only
    # records that its chat changed).
    backups = BackupService(
        store, folder.backups_dir, separate_above=separate, background=background_backups
    )
    flusher = BackupFlusher(backups) if background_backups else None
    if flusher is not None:
        flusher.start()
    embeddings = _embedding_backlog(store, recall, watch) if background_backups else None
    return Workspace(
        folder.path,
        store,
        chats,
        connections,
        generation,
        backups,
        flusher,
        turns,
        summaries,
        embeddings,
        events,
        QuickReplyAutomations(chats, watch=watch),
        watch,
        outbound,
    )


def shared_registry(url: str) -> SharedRegistry:
    """The registry of generations shared through the Redis at `url` (a clear error
    naming it when it cannot be reached)."""
    import redis

    from taverna.services.turns.shared_runs import SharedRegistry

    try:
        return SharedRegistry(url)
    except (redis.RedisError, ValueError) as exc:
        raise TavernaError(
            f"cannot reach Redis at {url}: {exc}",
            field="--redis",
            code="redis_unreachable",
            params={"url": str(url), "exc": str(exc)},
        ) from None


def plugin_services(
    chats: ChatService, connections: ConnectionService, generation: GenerationService
) -> PluginServices:
    """What plugins may reach, each behind its grant (see `PluginHost`)."""

    def path(chat_id: str) -> tuple[Node, ...]:
        return chats.active_path(chat_id).nodes

    def key(name: str | None, chat_id: str | None) -> str:
        mine = connections.of(chats.get_chat(chat_id).owner) if chat_id else connections
        return mine.resolve_key(mine.get(name))

    async def generate(chat_id: str, prompt: str, connection: str | None) -> str:
        return await quiet_text(
            generation, chat_id, Generation("genraw", prompt), connection_name=connection
        )

    def owner(chat_id: str) -> str:
        return chats.get_chat(chat_id).owner

    return PluginServices(path, key, generate, owner)


def release_freed_memory() -> None:
    """Hand memory freed after a big parse (a lorebook's raw JSON) back to the system.

    The C allocator keeps freed pages for reuse; without this a server that parsed a
    10,000-entry book at start holds that peak for good. Only where glibc is the allocator.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def seed_local_model(connections: ConnectionService) -> str | None:
    """With no connection yet and the `local` extra installed, make the bundled small
    model the default connection, so a new install answers with no set-up; its name."""
    if connections.list() or not local_models.available():
        return None
    connections.add(LOCAL_CONNECTION, "local", default=True)
    return LOCAL_CONNECTION


def seed_presets(library: LibraryService) -> list[str]:
    """On a new library (no character, lorebook, preset or template yet), store the
    product's own Chat Completion preset, instruct, context and system-prompt templates,
    and make the preset the one in use, so every editor has something to open. A library
    that has any of these is left as it is. Returns the names stored."""
    if any(library.documents(kind) for kind in (*_PRESET_KINDS, *_SEEDED_BEFORE)):
        return []
    stored = []
    for name in DEFAULT_PRESETS:
        data = (files("taverna") / "data" / "presets" / name).read_bytes()
        item = library.import_bytes(data, name)
        if item.kind == LibraryKind.CHAT_COMPLETION_PRESET.value:
            presets.activate(library, item.id)
        stored.append(item.name)
    return stored


def create_account(
    data: Path | None, name: str, password: str, *, admin: bool = False, empty: bool = False
) -> tuple[Account, list[str]]:
    """Add an account to the data folder `data` (None: the default one), its library
    started as a new install's unless `empty`; the account and what its library got."""
    folder = open_data(resolve_data_dir(data))
    try:
        account = AccountService(folder.store).add(name, password, admin=admin)
        added = [] if empty else welcome_account(folder.store, folder.path, account.id)
    finally:
        folder.close()
    return account, added


def welcome_account(store: Store, data_dir: Path, owner: str) -> list[str]:
    """A new account's library, as a new single-user install starts: the product's presets
    and templates, the sample character and lorebook, and (with the `local` extra) the
    bundled small model as its connection. Returns what was added, by name."""
    library = LibraryService(store, owner=owner)
    added = [*seed_presets(library), *seed_samples(library)]
    local = seed_local_model(ConnectionService(store, data_dir, owner=owner))
    return [*added, local] if local else added


def seed_samples(library: LibraryService) -> list[str]:
    """On an empty library, store the product's own sample character and lorebook."""
    if library.documents(LibraryKind.CHARACTER) or library.documents(LibraryKind.LOREBOOK):
        return []
    stored = []
    for name in SAMPLES:
        data = (files("taverna") / "data" / name).read_bytes()
        stored.append(library.import_bytes(data, name).name)
    return stored


def _stop_elsewhere(task: asyncio.Task[None] | None) -> None:
    """Cancel a task of another event loop (a server's earlier life) from its own loop."""
    if task is None or task.done():
        return
    loop = task.get_loop()
    if not loop.is_closed():
        loop.call_soon_threadsafe(task.cancel)
