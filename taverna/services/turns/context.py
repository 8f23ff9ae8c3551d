"""One turn's assembly context, built from the library and the end of the chat's path.

This is the prompt builder the server, `taverna chat` and the inspector run. Per turn
it asks the store only what it must: the versions (not the data) of the documents the
turn uses, and the end of the path (kept between turns by `PathEnds`). Everything it
parses (cards, presets, templates, personas, regex scripts and, above all, lorebooks)
is kept per stored version, so a lorebook of 10,000 entries is read, parsed and
compiled once per edit, not once per turn; another process's edit bumps the version,
which the next turn here sees.

Only the lorebooks that apply to the turn are loaded: the chat's own, the characters'
linked and extra books, the persona's and the global selection, as SillyTavern picks
them. The path is read newest first only as far as the prompt reaches: the builder
starts from the window the chat needed last time, and widens it while the budget has
room for older messages (`Ledger.history_stopped`) or the lorebook scan needs more.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any, TypeVar

from taverna.engine.assemble import assemble, message_cost, tokenizer_name
from taverna.engine.assembly.budget import MessageCost
from taverna.engine.assembly.context import (
    AssemblyContext,
    CharacterInfo,
    ChatMessage,
    EarlierMessages,
    GenerationType,
    Speaker,
)
from taverna.engine.lorebook.regex_budget import TURN_REGEX_BUDGET as TURN_REGEX_BUDGET
from taverna.engine.lorebook.regex_budget import RegexBudget
from taverna.engine.tokens.cache import CountCache
from taverna.errors import FormatError, NotFound
from taverna.formats.card_json import card_from_json
from taverna.formats.st_settings import (
    TEXT_COMPLETION_API,
    SillyTavernSettings,
    chosen_chat_completion,
    chosen_context_template,
    chosen_instruct_template,
    preset_regex_allowed,
    preset_regex_scripts,
    read_extension_choices,
    read_power_user_settings,
    read_world_info_settings,
)
from taverna.formats.world_info import world_info_from_json
from taverna.model.chat import Chat, ChatState, Node, NodeRole, PathTail
from taverna.model.group import Group
from taverna.model.injection import InjectionRole
from taverna.model.lorebook import Lorebook, WorldInfoSettings
from taverna.model.persona import Persona, PersonaPosition
from taverna.model.prompt import Prompt
from taverna.model.regex_script import RegexScript
from taverna.model.settings import (
    ChatCompletionSettings,
    PersonaInfo,
    PowerUserSettings,
    TextCompletionSettings,
)
from taverna.model.summary import SummarySettings
from taverna.providers.registry import provider
from taverna.providers.request import Api
from taverna.services.chats.groups import read_group
from taverna.services.chats.images import ImageLibrary, message_image, with_pictures
from taverna.services.connections.local_models import for_local_model
from taverna.services.interchange.settings_import import POWER_USER
from taverna.services.library.active_settings import (
    ACTIVE,
    SETTINGS_KIND,
    active_choices_document,
    world_info_settings,
)
from taverna.services.library.regex_library import in_order, regex_order
from taverna.services.library.service import LibraryKind
from taverna.services.memory.recall import RecallService, TurnRecall, recall_config
from taverna.services.memory.summaries import covered_ids, in_force
from taverna.services.plugins.tools import declared_tools
from taverna.services.turns import PreparedTurn, TurnRequest
from taverna.services.turns.inputs import (
    assembly_context,
    character_extra_books,
    character_info,
    for_api,
)
from taverna.services.turns.paths import PathEnds
from taverna.store.repository import Document, DocumentVersion, Store

__all__ = ["ParsedDocuments", "TurnContexts"]

T = TypeVar("T")

# The documents every turn checks, in one query: settings, presets, templates and the rest.
_SMALL_KINDS = (
    SETTINGS_KIND,
    LibraryKind.CHAT_COMPLETION_PRESET.value,
    LibraryKind.TEXT_COMPLETION_PRESET.value,
    LibraryKind.INSTRUCT_TEMPLATE.value,
    LibraryKind.CONTEXT_TEMPLATE.value,
    LibraryKind.REGEX_SCRIPT.value,
    LibraryKind.PERSONA.value,
)
# The first window of a chat not seen before; later turns start from what it needed.
FIRST_WINDOW = 96
# Chats whose token costs (and the prompt parts they keep) stay between turns: the most
# recently used, up to COSTS_HELD kept entries in all. A chat's kept work starts afresh
# once it holds several times what its window needs: its entries are keyed by message
# object, so edits, swipes and messages gone past the window leave old ones behind.
MAX_CHATS_KEPT = 1_024
COSTS_HELD = 40_000
COST_MEMO_FLOOR = 2_000
COST_MEMO_PER_MESSAGE = 8
# Messages kept as the engine reads them, across chats (a few windows' worth).
MESSAGES_KEPT = 20_000
# Newly counted message texts are stored from this many on (one write per cold build).
STORE_COUNTS_FROM = 16
# The lorebook scan buffer's own limit (algo-world-info.md §2): no scan reads further.
MAX_SCAN_DEPTH = 1000


class ParsedDocuments:
    """Library documents parsed once per stored version and kept for every turn.

    Keyed by `(what, id, revision, updated)`: an edit, a delete and re-create, or a
    write by another process gives a new key. Bounded to the `size` most recent.
    """

    def __init__(self, store: Store, *, size: int = 256) -> None:
        self.store = store
        self.size = size
        self._parsed: OrderedDict[tuple[str, str, int, Any], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, str, int, Any], threading.Lock] = {}
        self.parses = 0  # documents parsed (for tests and benchmarks)

    def get(self, what: str, version: DocumentVersion, parse: Callable[[Document], T]) -> T:
        """The document of `version` through `parse`, parsed at most once."""
        key = (what, version.id, version.revision, version.updated)
        with self._lock:
            if key in self._parsed:
                self._parsed.move_to_end(key)
                found: T = self._parsed[key]
                return found
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # two turns wanting the same big book parse it once
            with self._lock:
                if key in self._parsed:
                    again: T = self._parsed[key]
                    return again
            value = parse(self.store.get_document(version.id))
            self.parses += 1
            with self._lock:
                self._parsed[key] = value
                self._loading.pop(key, None)
                while len(self._parsed) > self.size:
                    self._parsed.popitem(last=False)
            return value


@dataclass(frozen=True, slots=True)
class _Library:
    """What the library gives one turn, parsed."""

    settings: SillyTavernSettings
    preset: Mapping[str, Any]  # the chosen Chat Completion preset as stored ({} if none)
    characters: tuple[CharacterInfo, ...]
    persona: PersonaInfo
    lorebooks: Mapping[str, Lorebook]
    deepest_scan: int = 0  # the largest scan depth an entry of these books asks for
    group: Group | None = None  # a group chat's group


@dataclass(frozen=True, slots=True)
class _Book:
    """A parsed lorebook and what the window needs to know of it."""

    book: Lorebook
    deepest_scan: int


class TurnContexts:
    """Builds each turn's prompt from the library and the path end (see module doc)."""

    def __init__(
        self,
        store: Store,
        *,
        owner: str = "",
        clock: Callable[[], datetime] | None = None,
        paths: PathEnds | None = None,
        documents: ParsedDocuments | None = None,
        regex_budget: float = TURN_REGEX_BUDGET,
        recall: RecallService | None = None,
    ) -> None:
        """`regex_budget`: the seconds all user regexes of one turn (lorebook regex keys,
        regex scripts) may spend together; what is left over is skipped and listed in the
        prompt's ledger."""
        self.store = store
        self.regex_budget = regex_budget
        self.owner = owner
        self.clock = clock
        self.paths = paths or PathEnds(store)
        self.documents = documents or ParsedDocuments(store)
        self.recall = recall or RecallService(store)
        # What each recently built chat's next turn starts from, for the MAX_CHATS_KEPT
        # chats built most recently: the messages its last prompt needed, the books its
        # last turn used, and per API the depth its last history began at (each API fits
        # its own context).
        self._windows: OrderedDict[str, int] = OrderedDict()
        self._book_names: dict[str, tuple[str, ...]] = {}
        self._recall_starts: dict[str, dict[str, int]] = {}
        self._costs: OrderedDict[str, tuple[tuple[str, str, int], MessageCost]] = OrderedDict()
        # Each node's message as the engine reads it, made again only when the node's
        # message changed (the message object lasts, so the engine's memo finds it).
        self._messages: OrderedDict[str, ChatMessage] = OrderedDict()
        self.assemblies = 0  # assemblies run, widening included (for tests and benchmarks)
        # Each account's pictures, read as its chats' prompts need them.
        self._images: dict[str, ImageLibrary] = {owner: ImageLibrary(store, owner=owner)}

    def images_of(self, owner: str) -> ImageLibrary:
        """The pictures of account `owner` (a chat's are its owner's)."""
        found = self._images.get(owner)
        if found is None:
            found = self._images[owner] = ImageLibrary(self.store, owner=owner)
        return found

    def __call__(self, turn: TurnRequest) -> PreparedTurn:
        return self.build(turn)

    def foresee(self, chat_id: str, speaker: str, text: str) -> None:
        """A message is being sent or typed: recall's question will hold it, so its vector
        is made now, beside the prompt's build (see `RecallService.foresee`)."""
        self.recall.foresee(chat_id, speaker, text)

    def build(self, turn: TurnRequest) -> PreparedTurn:
        chat = turn.chat
        library = self.library(chat, turn.speaker)
        now = self.clock() if self.clock else datetime.now(UTC)
        want = self._windows.get(chat.id, FIRST_WINDOW)
        kept = self._costs.get(chat.id)
        if kept is not None:
            kept[1].next_turn()  # what the last turn did not use of the chat's kept work goes
        starts = self._recall_starts.setdefault(chat.id, {})
        floor = _scan_floor(library)
        # One turn's time for user regexes, however many assemblies widening takes.
        regexes = RegexBudget(self.regex_budget)
        recall: TurnRecall | bool | None = False  # found once, on the first window read
        while True:
            tail = turn.tail(want)
            visible = sum(1 for node in tail.nodes if not node.hidden)
            if tail.before and (visible < floor or not _has_both_speakers(tail.nodes)):
                want = _widened(want, tail)
                continue
            context = self.context(turn, library, tail, now)
            if recall is False:
                recall = self._recall(turn, library, tail)
            if isinstance(recall, TurnRecall):
                # Where the last turn's history began: what is above it fell outside the
                # context (checked after; a first turn assembles again once it knows).
                start = starts.get(turn.api.value)
                found = recall.entries_only() if start is None else recall.for_window(start)
                context = replace(context, recall=found)
            # A chat new to this process: its messages' counts come from the store.
            cold = chat.id not in self._windows
            fresh = self._stored_counts(context, tail, turn.counts) if cold else []
            cost = self._cost(chat.id, context, turn.counts)
            prompt = assemble(context, cost=cost, regexes=regexes)
            self.assemblies += 1
            self._keep_counts(context, fresh, turn.counts)
            if not tail.before or prompt.ledger.history_stopped or _covered_above(context, tail):
                break
            want = _widened(want, tail, prompt)
        if isinstance(recall, TurnRecall):
            oldest = _oldest_included(prompt, tail) if prompt.ledger.history_stopped else 0
            start = starts.get(turn.api.value)
            if start is None or oldest < start:
                # Messages fell outside the context (or the history now reaches above the
                # start used): those nearest in meaning come back, from above its start.
                found = recall.for_window(oldest)
                if found.messages or start is not None:
                    context = replace(context, recall=found)
                    prompt = assemble(context, cost=cost, regexes=regexes)
                    self.assemblies += 1
            starts[turn.api.value] = oldest
        # The next turn starts where this one ended, with room for the new messages.
        self._windows[chat.id] = max(FIRST_WINDOW, len(tail.nodes) + 8)
        self._windows.move_to_end(chat.id)
        while len(self._windows) > MAX_CHATS_KEPT:
            gone, _ = self._windows.popitem(last=False)
            self._book_names.pop(gone, None)
            self._recall_starts.pop(gone, None)
        for other in (self._book_names, self._recall_starts):
            while len(other) > MAX_CHATS_KEPT:  # chats read but never built, say
                del other[next(iter(other))]
        request = provider(turn.api).preset_options(library.preset)
        return PreparedTurn(
            prompt,
            declared_tools(library.preset),
            request,
            function_calling=bool(library.preset.get("function_calling")),
        )

    def _recall(self, turn: TurnRequest, library: _Library, tail: PathTail) -> TurnRecall | None:
        """What this turn may recall by meaning, if the settings turn recall on."""
        config = recall_config(library.settings.raw)
        if not config.enabled:
            return None
        recent = list(tail.nodes)
        if turn.kind in (GenerationType.SWIPE, GenerationType.REGENERATE) and recent:
            recent = recent[:-1]  # the reply being replaced is not part of the question
        return self.recall.for_turn(config, turn.chat.id, turn.end, recent, library.lorebooks)

    def _cost(
        self, chat_id: str, context: AssemblyContext, counts: CountCache | None
    ) -> MessageCost:
        """The chat's token costs, kept from turn to turn: unchanged messages' prompt parts
        and name-only macro texts are reused (the engine keys them by what they depend on)."""
        key = (tokenizer_name(context), context.chat_completion.model, id(counts))
        window = self._windows.get(chat_id, FIRST_WINDOW)
        limit = max(COST_MEMO_FLOOR, COST_MEMO_PER_MESSAGE * window)
        kept = self._costs.get(chat_id)
        if kept is None or kept[0] != key or len(kept[1].memo) > limit:
            kept = (key, message_cost(context, counts))
        self._costs[chat_id] = kept
        self._costs.move_to_end(chat_id)
        held = sum(len(cost.memo) for _, cost in self._costs.values())
        while len(self._costs) > 1 and (len(self._costs) > MAX_CHATS_KEPT or held > COSTS_HELD):
            _, (_, gone) = self._costs.popitem(last=False)
            held -= len(gone.memo)
        return kept[1]

    def _message(self, node: Node) -> ChatMessage:
        kept = self._messages.get(node.id)
        if kept is not None and _made_from(kept, node):
            return kept
        message = _message(node)
        self._messages[node.id] = message
        if len(self._messages) > MESSAGES_KEPT:
            self._messages.popitem(last=False)
        return message

    # ------------------------------------------------------------------ token counts

    def _stored_counts(
        self, context: AssemblyContext, tail: PathTail, counts: CountCache | None
    ) -> list[str]:
        """Take the stored counts of the messages this process has not counted; returns
        the texts neither knew (their counts are stored once the assembly made them)."""
        if counts is None:
            return []
        name = tokenizer_name(context)
        unknown = [n.content for n in tail.nodes if counts.known(name, n.content) is None]
        if not unknown:
            return []
        found = self.store.token_counts(name, unknown)
        for text, count in found.items():
            counts.remember(name, text, count)
        return [text for text in unknown if text not in found]

    def _keep_counts(
        self, context: AssemblyContext, texts: Sequence[str], counts: CountCache | None
    ) -> None:
        """Store the counts this assembly made of message texts the store did not have
        (on a chat's first turn in this process: one write, then none)."""
        if counts is None or len(texts) < STORE_COUNTS_FROM:
            return
        name = tokenizer_name(context)
        made = {t: c for t in texts if (c := counts.known(name, t)) is not None}
        if made:
            self.store.save_token_counts(name, made)

    # ------------------------------------------------------------------ the library

    def library(self, chat: Chat, speaker: str | None = None) -> _Library:
        """The settings, cards, persona and applying lorebooks of a chat, as parsed (in a
        group chat, with the preset of the member `speaker` when it has one of its own)."""
        # One look at the versions: the small documents, the chat's cards and the books
        # its last turn used; a book named anew is looked up after.
        ids = [ref.document_id for ref in chat.characters if ref.document_id]
        if chat.group_id:
            ids.append(chat.group_id)
        guessed = self._book_names.get(chat.id, ())
        found: dict[str, list[DocumentVersion]] = {
            kind: []
            for kind in (*_SMALL_KINDS, LibraryKind.CHARACTER.value, LibraryKind.GROUP.value)
        }
        books_found: list[DocumentVersion] = []
        for version in self.store.versions_of(
            owner=chat.owner,
            kinds=_SMALL_KINDS,
            ids=ids,
            names={LibraryKind.LOREBOOK.value: guessed},
        ):
            if version.kind == LibraryKind.LOREBOOK.value:
                books_found.append(version)
            elif version.kind in found:
                found[version.kind].append(version)
        characters = self._characters(chat, found[LibraryKind.CHARACTER.value])
        groups = [v for v in found[LibraryKind.GROUP.value] if v.id == chat.group_id]
        group = self.documents.get("group", groups[-1], _group) if groups else None
        own_preset = _member_preset(group, characters, speaker) if group is not None else None
        settings, preset = self._settings(found, own_preset)
        persona = self._persona(chat.user_name, found[LibraryKind.PERSONA.value])
        names = _applying_books(chat, characters, persona, settings)
        if set(names) - set(guessed):
            books_found = self.store.versions_of(
                owner=chat.owner, names={LibraryKind.LOREBOOK.value: names}
            )
        self._book_names[chat.id] = tuple(names)
        books = self._lorebooks([v for v in books_found if v.name in names])
        return _Library(
            settings,
            preset,
            characters,
            persona,
            {name: item.book for name, item in books.items()},
            max((item.deepest_scan for item in books.values()), default=0),
            group,
        )

    def _active(
        self, found: Mapping[str, list[DocumentVersion]]
    ) -> tuple[dict[str, DocumentVersion], _ActiveSettings]:
        """The chosen preset and templates (by setting) and the user's other settings."""
        versions = [v for v in found[SETTINGS_KIND] if v.name == ACTIVE]
        if not versions:
            return {}, _ActiveSettings()
        active = self.documents.get("settings", versions[-1], _active_document)
        chosen = active.choices
        out: dict[str, DocumentVersion] = {}
        for key, kind in (
            ("chat_completion_preset", LibraryKind.CHAT_COMPLETION_PRESET),
            ("text_completion_preset", LibraryKind.TEXT_COMPLETION_PRESET),
            ("instruct_template", LibraryKind.INSTRUCT_TEMPLATE),
            ("context_template", LibraryKind.CONTEXT_TEMPLATE),
        ):
            doc_id = chosen.get(key)
            # a preset deleted since it was chosen is not found: the defaults
            for version in found[kind.value]:
                if version.id == doc_id:
                    out[key] = version
        return out, active

    def _settings(
        self, found: Mapping[str, list[DocumentVersion]], own_preset: str | None = None
    ) -> tuple[SillyTavernSettings, Mapping[str, Any]]:
        """The settings a turn assembles with, and the chosen preset as stored
        (`own_preset`: a group member's own Chat Completion preset, by id)."""
        choices, active = self._active(found)
        for version in found[LibraryKind.CHAT_COMPLETION_PRESET.value]:
            if own_preset and version.id == own_preset:
                choices["chat_completion_preset"] = version
        chat_completion = ChatCompletionSettings()
        preset: Mapping[str, Any] = {}
        if "chat_completion_preset" in choices:
            preset, chat_completion = self.documents.get(
                "chat_completion_preset",
                choices["chat_completion_preset"],
                lambda d: (dict(d.data), chosen_chat_completion(d.data, file=d.name)),
            )
        text_completion = TextCompletionSettings()
        if "instruct_template" in choices:
            instruct = self._read(choices, "instruct_template", chosen_instruct_template)
            text_completion = replace(text_completion, instruct=instruct, instruct_enabled=True)
        if "context_template" in choices:
            context = self._read(choices, "context_template", chosen_context_template)
            text_completion = replace(text_completion, context=context)
        settings = SillyTavernSettings(
            chat_completion=chat_completion,
            text_completion=text_completion,
            regex_scripts=tuple(
                self.documents.get("regex_script", version, _regex_script)
                for version in in_order(found[LibraryKind.REGEX_SCRIPT.value], active.regex_order)
            ),
            regex_allowed=active.regex_allowed,
            preset_regex_scripts=self._preset_scripts(
                choices.get("chat_completion_preset"), active.preset_regex_allowed
            ),
            text_preset_regex_scripts=self._preset_scripts(
                choices.get("text_completion_preset"), active.text_preset_regex_allowed
            ),
            summary=active.summary,
            global_variables=active.global_variables,
        )
        if active.power_user is not None:
            settings = replace(settings, power_user=active.power_user)
        if active.world is not None:
            # SillyTavern's shape: the global selection and the characters' extra books.
            raw, world_info = active.world
            settings = replace(settings, world_info=world_info, raw={"world_info_settings": raw})
        if active.vectors:
            raw_vectors = {"extension_settings": {"vectors": dict(active.vectors)}}
            settings = replace(settings, raw={**settings.raw, **raw_vectors})
        return settings, preset

    def _preset_scripts(
        self, version: DocumentVersion | None, allowed: tuple[str, ...]
    ) -> tuple[RegexScript, ...]:
        """A chosen preset's own regex scripts, if the person allowed that preset's."""
        if version is None or version.name not in allowed:
            return ()
        return self.documents.get(
            "preset_regex", version, lambda d: preset_regex_scripts(dict(d.data), file=d.name)
        )

    def _read(self, choices: Mapping[str, DocumentVersion], key: str, read: Callable[..., T]) -> T:
        """The chosen document `key`, read once per version by a SillyTavern file reader."""
        return self.documents.get(key, choices[key], lambda doc: read(doc.data, file=doc.name))

    def _characters(
        self, chat: Chat, versions: Sequence[DocumentVersion]
    ) -> tuple[CharacterInfo, ...]:
        by_id = {v.id: v for v in versions}
        characters = []
        for ref in chat.characters:
            version = by_id.get(ref.document_id or "")
            if version is None:
                continue
            info = self.documents.get("character", version, _character)
            characters.append(replace(info, avatar=f"{ref.name}.png"))
        if not characters:
            name = chat.characters[0].name if chat.characters else "Assistant"
            characters.append(CharacterInfo(name=name))
        return tuple(characters)

    def personas(self, owner: str) -> list[tuple[str, Persona]]:
        """An account's personas with their ids, oldest first, as parsed and kept for turns:
        a chat view names the chat's persona after every reply, with one look at the
        versions rather than every persona read and parsed again."""
        versions = self.store.versions_of(owner=owner, kinds=(LibraryKind.PERSONA.value,))
        return [(v.id, self.documents.get("persona", v, _persona)) for v in versions]

    def _persona(self, user_name: str, versions: Sequence[DocumentVersion]) -> PersonaInfo:
        personas = [self.documents.get("persona", v, _persona) for v in versions]
        chosen = next((p for p in personas if p.name == user_name), None)
        chosen = chosen or next((p for p in personas if p.is_default), None)
        if chosen is None:
            return PersonaInfo(name=user_name or "User")
        descriptor = chosen.descriptor
        try:
            position = PersonaPosition(int(descriptor.position))
        except ValueError:
            position = PersonaPosition.IN_PROMPT
        lorebook = descriptor.model_extra.get("lorebook") if descriptor.model_extra else None
        return PersonaInfo(
            name=user_name or chosen.name or "User",
            description=descriptor.description,
            position=position,
            depth=int(descriptor.depth),
            role=InjectionRole.parse(descriptor.role),
            avatar=chosen.avatar,
            lorebook=lorebook if isinstance(lorebook, str) else "",
        )

    def _lorebooks(self, versions: Sequence[DocumentVersion]) -> dict[str, _Book]:
        books: dict[str, _Book] = {}
        # Two books of one name: the newest wins, as a name picks one file in SillyTavern.
        for version in versions:
            books[version.name] = self.documents.get("lorebook", version, _lorebook(version))
        return books

    # ------------------------------------------------------------------ the context

    def context(
        self, turn: TurnRequest, library: _Library, tail: PathTail, now: datetime
    ) -> AssemblyContext:
        """The engine's context for `turn` over the path end `tail`."""
        chat = turn.chat
        history = tail.nodes
        if turn.kind in (GenerationType.SWIPE, GenerationType.REGENERATE) and history:
            # The state before the reply being replaced: at the end of the path it answers.
            state = _state_before_last(self.store, chat, tail)
            before_last = state
        else:
            state = tail.state
            before_last = state
            if history and history[-1].state is not None:
                before_last = _state_before_last(self.store, chat, tail)
        metadata: dict[str, Any] = dict(chat.metadata)
        metadata["variables"] = dict(state.variables)
        if state.timers:
            metadata["timedWorldInfo"] = dict(state.timers)
        if state.authors_note is not None:
            note = state.authors_note
            metadata.update(
                note_prompt=note.prompt,
                note_interval=note.interval,
                note_position=note.position,
                note_depth=note.depth,
                note_role=note.role,
            )
        characters = library.characters
        members = [c.name for c in characters] if len(characters) > 1 else []
        group = library.group
        if group is not None or chat.group_id:
            members = [c.name for c in characters]
            speaker = next((c for c in characters if c.name == turn.speaker), None)
            if speaker is not None:
                # the speaker's card first, the other members after (Swap takes the first)
                characters = (speaker, *(c for c in characters if c is not speaker))
        summary = self._summary(chat, before_last, history)
        messages = [self._message(node) for node in history]
        placement = library.settings.summary
        if placement.hide_covered and placement.places_summary and summary[1]:
            hidden = covered_ids(history, summary[1], placement.hide_keep)
            messages = [replace(m, hidden=True) if m.id in hidden else m for m in messages]
        context = assembly_context(
            for_api(library.settings, turn.api),
            characters,
            metadata,
            messages,
            library.lorebooks,
            api="textgen" if turn.api.is_text_completion else "openai",
            generation_type=turn.kind,
            group_members=members,
            # algo-chat-ops.md §3.1: the summary in force before the path's last message.
            summary=summary,
        )
        if group is not None:
            context = replace(
                context,
                group_name=group.name,
                group_generation_mode=int(group.mode),
                group_join_prefix=group.generation_mode_join_prefix,
                group_join_suffix=group.generation_mode_join_suffix,
                group_muted=_muted_names(group, library.characters),
            )
        earlier = EarlierMessages(count=tail.before, visible=tail.visible_before)
        interval = context.metadata.authors_note
        if tail.before and interval.interval > 1 and interval.prompt:
            earlier = replace(earlier, user=self.paths.user_messages_before(chat, tail))
        context = replace(
            context,
            earlier=earlier,
            persona=library.persona,
            now=now,
            seed=zlib.crc32(chat.id.encode()),
            chat_id=chat.id,
            dry_run=turn.dry_run,
        )
        if turn.quiet_prompt:
            context = replace(context, quiet_prompt=turn.quiet_prompt)
            if turn.skip_wi_an:
                # memory/index.js "skip WI/AN": no lorebooks, no author's note.
                note = replace(context.metadata.authors_note, prompt="")
                metadata_ = replace(context.metadata, authors_note=note, lorebook="")
                context = replace(context, lorebooks={}, metadata=metadata_)
        context = with_pictures(
            context,
            turn.api,
            turn.model,
            [message_image(node.extras) for node in history],
            self.images_of(chat.owner).prompt_image,
        )
        if turn.api is Api.LOCAL:
            context = for_local_model(context, turn.model, turn.options)
        if turn.prefill and not context.chat_completion.continue_prefill:
            # continue in place where the API allows a prefill; elsewhere the preset's nudge
            settings_cc = replace(context.chat_completion, continue_prefill=True)
            context = replace(context, chat_completion=settings_cc)
        return context

    def _summary(self, chat: Chat, state: ChatState, history: Sequence[Node]) -> tuple[str, str]:
        """The summary `state` puts in force and its message (a deleted one's yields)."""
        if not state.summary:
            return "", ""
        known = {n.id: n for n in history} if state.summary_at else {}
        return in_force(self.store, chat.id, state, chat.base_state, known)


# ---------------------------------------------------------------------- helpers


def _group(doc: Document) -> Group:
    return read_group(doc.data, file=doc.name)


def _member_preset(
    group: Group, characters: Sequence[CharacterInfo], speaker: str | None
) -> str | None:
    """The id of the Chat Completion preset the group gives member `speaker`, if any."""
    if not speaker:
        return None
    names = [c.name for c in characters]
    for index, file in enumerate(group.members):
        if len(names) == len(group.members):
            named = names[index] == speaker
        else:
            stem = PurePath(file).stem
            named = stem == speaker or stem.endswith(speaker)
        if named:
            return group.member_settings(file).preset
    return None


def _muted_names(group: Group, characters: Sequence[CharacterInfo]) -> tuple[str, ...]:
    """The names of the group's muted members (the chat's characters follow the group's
    order; a member file is otherwise matched to a character by its name)."""
    names = [c.name for c in characters]
    muted = []
    for index, file in enumerate(group.members):
        if not group.is_muted(file):
            continue
        if len(names) == len(group.members):
            muted.append(names[index])
        else:
            stem = PurePath(file).stem
            muted.extend(n for n in names if n == stem or stem.endswith(n))
    return tuple(muted)


_SPEAKERS = {
    NodeRole.USER: Speaker.USER,
    NodeRole.NARRATOR: Speaker.NARRATOR,
    NodeRole.SYSTEM: Speaker.NARRATOR,
}


def _message(node: Node) -> ChatMessage:
    forced, bias = _carried(node)
    return ChatMessage(
        id=node.id,
        speaker=_SPEAKERS.get(node.role, Speaker.CHARACTER),
        name=node.speaker,
        text=node.content,
        hidden=node.hidden,
        forced_avatar=forced,
        bias=bias,
    )


def _carried(node: Node) -> tuple[bool, str]:
    """What a SillyTavern message carries into the prompt besides its text, kept in the
    node's extras by an import: `force_avatar` (sent under another name: `/sendas`, a
    persona), which the default names behaviour prefixes with the name, and `extra.bias`,
    the message's prompt bias."""
    extras = node.extras
    if not extras:
        return False, ""
    extra = extras.get("extra")
    bias = extra.get("bias") if isinstance(extra, Mapping) else None
    return bool(extras.get("force_avatar")), bias if isinstance(bias, str) else ""


def _made_from(message: ChatMessage, node: Node) -> bool:
    """Whether `message` is what `_message(node)` makes (the node read again, unchanged)."""
    return (
        message.text == node.content
        and message.hidden == node.hidden
        and message.name == node.speaker
        and message.speaker is _SPEAKERS.get(node.role, Speaker.CHARACTER)
        and (message.forced_avatar, message.bias) == _carried(node)
    )


@dataclass(frozen=True, slots=True)
class _ActiveSettings:
    """The user's `active` settings document, read: the chosen presets' ids, the
    world-info settings as stored and as read, the power-user settings, and what its
    `extension_settings` hold for prompts (the global variables, the cards allowed their
    own regex scripts); None and empty where the user has none."""

    choices: Mapping[str, str] = field(default_factory=dict)
    world: tuple[Mapping[str, Any], WorldInfoSettings] | None = None
    power_user: PowerUserSettings | None = None
    global_variables: Mapping[str, Any] = field(default_factory=dict)
    regex_allowed: tuple[str, ...] = ()
    preset_regex_allowed: tuple[str, ...] = ()  # Chat Completion presets, by name
    text_preset_regex_allowed: tuple[str, ...] = ()  # Text Completion presets, by name
    regex_order: tuple[str, ...] = ()  # the global scripts' ids, in the order they run
    vectors: Mapping[str, Any] = field(default_factory=dict)  # `extension_settings.vectors`
    summary: SummarySettings = field(default_factory=SummarySettings)  # `...memory`


def _active_document(doc: Document) -> _ActiveSettings:
    """The `active` settings document read (once per version, like every document)."""
    world = world_info_settings(doc)
    read = None if world is None else (world, read_world_info_settings(world, file=doc.name))
    power = doc.data.get(POWER_USER)
    variables, allowed = read_extension_choices(doc.data, file=doc.name)
    extensions = doc.data.get("extension_settings")
    vectors = extensions.get("vectors") if isinstance(extensions, Mapping) else None
    return _ActiveSettings(
        active_choices_document(doc),
        read,
        read_power_user_settings(power, file=doc.name) if isinstance(power, Mapping) else None,
        variables,
        allowed,
        preset_regex_allowed=preset_regex_allowed(doc.data, file=doc.name),
        text_preset_regex_allowed=preset_regex_allowed(
            doc.data, TEXT_COMPLETION_API, file=doc.name
        ),
        regex_order=regex_order(doc),
        vectors=vectors if isinstance(vectors, Mapping) else {},
        summary=_summary_settings(extensions),
    )


def _summary_settings(extensions: Any) -> SummarySettings:
    memory = extensions.get("memory") if isinstance(extensions, Mapping) else None
    return SummarySettings.from_st(memory) if isinstance(memory, Mapping) else SummarySettings()


def _character(doc: Document) -> CharacterInfo:
    return character_info(card_from_json(dict(doc.data), file=doc.name))


def _persona(doc: Document) -> Persona:
    return Persona.model_validate(dict(doc.data))


def _regex_script(doc: Document) -> RegexScript:
    try:
        return RegexScript.from_json(dict(doc.data)).migrated()
    except ValueError as error:
        raise FormatError(
            f"not a regex script: {error}",
            file=doc.name,
            code="not_regex_script_error",
            params={"error": str(error)},
        ) from None


def _lorebook(version: DocumentVersion) -> Callable[[Document], _Book]:
    def parse(doc: Document) -> _Book:
        book = world_info_from_json(doc.data, name=doc.name, file=doc.name)
        # The compiled index is kept per name and revision: this names the content.
        book = replace(book, revision=f"{version.id}:{version.revision}:{version.updated}")
        deepest = max((e.scan_depth or 0 for e in book.entries), default=0)
        return _Book(book, deepest)

    return parse


def _applying_books(
    chat: Chat,
    characters: Sequence[CharacterInfo],
    persona: PersonaInfo,
    settings: SillyTavernSettings,
) -> list[str]:
    """The names of the books SillyTavern would scan this turn (algo-world-info.md §1)."""
    names: list[str] = list(settings.world_info.global_select)
    book = chat.metadata.get("world_info")
    if isinstance(book, str) and book:
        names.append(book)
    # The books added to a character in the UI, by card file stem (`world_info.charLore`).
    extra = character_extra_books(settings.raw)
    for character in characters:
        if character.linked_lorebook:
            names.append(character.linked_lorebook)
        names.extend(character.extra_lorebooks)
        names.extend(extra.get(character.avatar.rsplit(".", 1)[0], ()))
    if persona.lorebook:
        names.append(persona.lorebook)
    return list(dict.fromkeys(names))


def _scan_floor(library: _Library) -> int:
    """Visible messages the lorebook scan may read: the window must hold them."""
    if not library.lorebooks and not any(c.embedded_lorebook for c in library.characters):
        return 0
    world = library.settings.world_info
    deepest = max(world.depth, library.deepest_scan)
    if world.min_activations > 0:
        # Min activations scan deeper until enough entries fire, up to the whole chat.
        deepest = max(deepest, world.min_activations_depth_max or MAX_SCAN_DEPTH)
    return min(deepest, MAX_SCAN_DEPTH) + 1


def _has_both_speakers(nodes: Sequence[Node]) -> bool:
    """Whether the window holds a visible message of the person and of a character
    (`{{lastUserMessage}}`, `{{lastCharMessage}}` look back for them)."""
    user = char = False
    for node in reversed(nodes):
        if node.hidden:
            continue
        if node.role is NodeRole.USER:
            user = True
        else:
            char = True
        if user and char:
            return True
    return False


def _oldest_included(prompt: Prompt, tail: PathTail) -> int:
    """The depth of the oldest message the prompt's history holds (past the path's end
    if none): only messages above it fell outside the context."""
    included = {i.source for i in prompt.ledger.items if i.kind == "history" and i.included}
    depths = [node.depth for node in tail.nodes if node.id in included]
    if depths:
        return min(depths)
    return tail.nodes[-1].depth + 1 if tail.nodes else 0


def _widened(want: int, tail: PathTail, prompt: Prompt | None = None) -> int:
    """A wider window: enough for the unused budget at the window's own tokens per message."""
    grown = max(want * 2, len(tail.nodes) * 2, 16)
    if prompt is not None and tail.nodes:
        used = sum(i.tokens for i in prompt.ledger.items if i.kind == "history" and i.included)
        room = prompt.ledger.budget - prompt.ledger.total_tokens
        if used > 0 and room > 0:
            per_message = max(used / len(tail.nodes), 1.0)
            grown = max(grown, int(len(tail.nodes) + 1.25 * room / per_message) + 8)
    return grown


def _covered_above(context: AssemblyContext, tail: PathTail) -> bool:
    """Whether everything above the path's end read is hidden by the summary in force
    (its message is in the end read): reading further would add nothing to the prompt."""
    settings = context.summary_settings
    at = context.summary_at
    return bool(
        settings.hide_covered
        and settings.places_summary
        and at
        and any(node.id == at for node in tail.nodes)
    )


def _state_before_last(store: Store, chat: Chat, tail: PathTail) -> ChatState:
    """The state in force at the parent of the path's last message."""
    for node in reversed(tail.nodes[:-1]):
        if node.state is not None:
            return node.state
    last = tail.nodes[-1]
    if last.parent_id is None:
        return chat.base_state
    try:
        return store.state_at(chat.id, last.parent_id)
    except NotFound:
        return chat.base_state
