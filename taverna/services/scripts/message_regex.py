"""Regex scripts over a chat's messages: the stored text as a message is saved or edited,
and the text the page shows (algo-chat-ops.md §6.1, formats-extensions.md §1.2).

Storage scripts (neither "only" flag) rewrite a message when it is stored: a user
message as it is sent (user input), a reply as it is saved (AI output, its reasoning
by the reasoning placement), a greeting as the chat starts, a message a script command
writes (slash commands; `/sys` narration too), and an edit when the script is marked
`runOnEdit`. Display scripts (`markdownOnly`) change only what the page shows, by the
message's depth among the visible ones, and a reply's reasoning by the reasoning
placement; the store keeps the original.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from taverna.engine.assembly.regex_scripts import RegexUse, regexed
from taverna.engine.lorebook.regex_budget import TURN_REGEX_BUDGET, RegexBudget
from taverna.engine.macros import MacroContext, evaluate
from taverna.errors import TavernaError
from taverna.model.chat import Chat, Node, NodeRole, PathWindow
from taverna.model.regex_script import RegexPlacement, RegexScript
from taverna.services.chats.service import ChatService
from taverna.services.chats.write_rules import Rewrite
from taverna.services.connections.service import KIND as CONNECTION_KIND
from taverna.services.connections.service import default_api
from taverna.services.library.active_settings import ACTIVE, SETTINGS_KIND
from taverna.services.library.regex_library import (
    CHARACTER_KIND,
    PRESET_KIND,
    REGEX_KIND,
    TEXT_PRESET_KIND,
    RegexLayer,
    RegexLibrary,
)
from taverna.store.repository import DocumentVersion, Store


@dataclass(frozen=True, slots=True)
class ChatScripts:
    """The scripts in force for one chat: global, the preset's and each character's
    (by name), the last two only where allowed."""

    common: tuple[RegexScript, ...] = ()  # global then preset
    by_character: Mapping[str, tuple[RegexScript, ...]] | None = None

    def for_speaker(self, name: str, fallback: str) -> tuple[RegexScript, ...]:
        own = self.by_character or {}
        return (*self.common, *own.get(name, own.get(fallback, ())))


def chat_scripts(store: Store, chat: Chat) -> ChatScripts:
    """The scripts that apply in `chat` now, in the order they run."""
    common = _common_scripts(store, chat.owner)
    if common.disabled:
        return ChatScripts()
    regexes = RegexLibrary(store, chat.owner)
    # A card is read only when its scripts are allowed (the same key the prompt uses).
    wanted = {
        ref.document_id: ref.name
        for ref in chat.characters
        if ref.document_id and f"{ref.name}.png" in common.allowed
    }
    own = {wanted[i]: scripts for i, scripts in _card_scripts(regexes, list(wanted)).items()}
    return ChatScripts(common.scripts, own)


@dataclass(frozen=True, slots=True)
class _Common:
    """What one person's settings, global scripts, connections and preset make of every
    chat's scripts: whether regex is off, the global and preset scripts, the cards allowed."""

    disabled: bool
    scripts: tuple[RegexScript, ...]
    allowed: frozenset[str]
    preset: str  # the preset document read, "" for none


# Each person's common scripts and the versions of the documents they were made from:
# a message is stored or shown several times a turn, and one query for the versions
# costs less than reading and parsing the documents again. Versions are read from the
# store each time, so a change made anywhere (another worker too) is seen.
_Stamped = tuple[tuple[DocumentVersion, ...] | None, _Common]
_COMMON: weakref.WeakKeyDictionary[Store, OrderedDict[str, _Stamped]] = weakref.WeakKeyDictionary()
_COMMON_KEEP = 256


def _common_scripts(store: Store, owner: str) -> _Common:
    with _PARSED_LOCK:
        kept = _COMMON.setdefault(store, OrderedDict())
        cached = kept.get(owner)
    preset = cached[1].preset if cached is not None else ""
    # read before the documents: a change after this is seen at the next call
    stamp = tuple(
        store.versions_of(
            owner=owner,
            kinds=(REGEX_KIND, CONNECTION_KIND),
            ids=(preset,) if preset else (),
            names={SETTINGS_KIND: (ACTIVE,)},
        )
    )
    if cached is not None and cached[0] == stamp:
        return cached[1]
    found = _read_common(store, owner)
    with _PARSED_LOCK:
        # made with another preset than the versions name: kept, but not trusted
        kept[owner] = (stamp if found.preset == preset else None, found)
        kept.move_to_end(owner)
        while len(kept) > _COMMON_KEEP:
            kept.popitem(last=False)
    return found


def _read_common(store: Store, owner: str) -> _Common:
    active = store.find_documents(SETTINGS_KIND, name=ACTIVE, owner=owner)
    data = active[-1].data if active else {}
    extensions = data.get("extension_settings")
    disabled = extensions.get("disabledExtensions") if isinstance(extensions, Mapping) else None
    if isinstance(disabled, list) and "regex" in disabled:
        return _Common(True, (), frozenset(), "")
    regexes = RegexLibrary(store, owner)
    common = list(regexes.layer(RegexLayer.GLOBAL).scripts)
    # The scripts of the preset of the API in use: the default connection's.
    api = default_api(store, owner)
    text = api is not None and api.is_text_completion
    preset = data.get(TEXT_PRESET_KIND if text else PRESET_KIND)
    preset = preset if isinstance(preset, str) else ""
    if preset:
        common.extend(_allowed(regexes, RegexLayer.PRESET, preset))
    allowed = extensions.get("character_allowed_regex") if isinstance(extensions, Mapping) else None
    allowed = allowed if isinstance(allowed, list) else []
    return _Common(
        False, tuple(common), frozenset(a for a in allowed if isinstance(a, str)), preset
    )


# Cards' own scripts, parsed once per card revision: a card is read (with its picture)
# only when it changed, not on every message stored or window shown.
_PARSED: OrderedDict[tuple[str, int, datetime | None], tuple[RegexScript, ...]] = OrderedDict()
_PARSED_KEEP = 256
_PARSED_LOCK = threading.Lock()


def _card_scripts(regexes: RegexLibrary, ids: list[str]) -> dict[str, tuple[RegexScript, ...]]:
    if not ids:
        return {}
    found: dict[str, tuple[RegexScript, ...]] = {}
    for version in regexes.store.document_versions(CHARACTER_KIND, owner=regexes.owner, ids=ids):
        key = (version.id, version.revision, version.updated)
        with _PARSED_LOCK:
            cached = _PARSED.get(key)
        if cached is None:
            cached = _allowed(regexes, RegexLayer.CHARACTER, version.id, check=False)
            with _PARSED_LOCK:
                _PARSED[key] = cached
                while len(_PARSED) > _PARSED_KEEP:
                    _PARSED.popitem(last=False)
        found[version.id] = cached
    return found


def _allowed(
    regexes: RegexLibrary, layer: RegexLayer, target: str, *, check: bool = True
) -> tuple[RegexScript, ...]:
    """A preset's or a card's scripts if they may run (`check=False`: already known)."""
    try:
        found = regexes.layer(layer, target)
    except TavernaError:  # the preset or card is gone, or holds a script that cannot be read
        return ()
    return found.scripts if found.allowed or not check else ()


def _placement(node: Node, *, slash: bool) -> RegexPlacement | None:
    if node.role is NodeRole.SYSTEM:
        return None
    if node.role is NodeRole.NARRATOR:
        return RegexPlacement.SLASH_COMMAND
    if node.role is NodeRole.USER:
        # `/send` posts as the person would (user input); `/sendas` is a slash command.
        return RegexPlacement.USER_INPUT
    return RegexPlacement.SLASH_COMMAND if slash else RegexPlacement.AI_OUTPUT


def _substitute(chat: Chat, speaker: str) -> MacroContext:
    default = chat.characters[0].name if chat.characters else ""
    return MacroContext(user=chat.user_name or "User", char=speaker or default)


def _macros(names: MacroContext) -> Callable[[str], str]:
    return lambda text: evaluate(text, names).text


class StoredRegex:
    """The `Rewriter` of `ChatService`: storage scripts over new and edited messages."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __call__(self, chat: Chat, node: Node, *, edit: bool, slash: bool) -> Rewrite | None:
        placement = _placement(node, slash=slash)
        if placement is None:
            return None
        scripts = chat_scripts(self.store, chat)
        fallback = chat.characters[0].name if chat.characters else ""
        speaker = node.speaker if node.role is not NodeRole.USER else fallback
        chosen = scripts.for_speaker(speaker, fallback)
        if not chosen:
            return None
        substitute = _macros(_substitute(chat, speaker))
        # A message's scripts together get one turn's time for user regexes.
        budget = RegexBudget(TURN_REGEX_BUDGET)
        content = regexed(
            node.content, placement, chosen, substitute, RegexUse.STORE, edit=edit, budget=budget
        )
        reasoning = node.generation.extras.get("reasoning") if node.generation else None
        if isinstance(reasoning, str) and reasoning:
            reasoning = regexed(
                reasoning,
                RegexPlacement.REASONING,
                chosen,
                substitute,
                RegexUse.STORE,
                edit=edit,
                budget=budget,
            )
        return Rewrite(content, reasoning if isinstance(reasoning, str) else None)


@dataclass(frozen=True, slots=True)
class Shown:
    """What display scripts make of some messages, by node id: their text and, by the
    reasoning placement, the reasoning shown above it (only where a script changes it)."""

    content: Mapping[str, str]
    reasoning: Mapping[str, str]


def shown_texts(
    store: Store,
    chat: Chat,
    nodes: Sequence[Node],
    newer_visible: int = 0,
    scripts: ChatScripts | None = None,
) -> dict[str, str]:
    """The text the page shows for each of `nodes` (oldest first) where display scripts
    change it: node id -> shown text. `newer_visible`: how many visible messages come after
    the last of `nodes` on the path (depth counts visible messages from the newest, 0)."""
    return dict(displayed(store, chat, nodes, newer_visible, scripts).content)


def displayed(
    store: Store,
    chat: Chat,
    nodes: Sequence[Node],
    newer_visible: int = 0,
    scripts: ChatScripts | None = None,
) -> Shown:
    """`shown_texts` with the reasoning too: a reply's reasoning is shown through the
    display scripts of the reasoning placement, at the reply's depth."""
    scripts = chat_scripts(store, chat) if scripts is None else scripts
    if not _display(scripts):
        return Shown({}, {})
    fallback = chat.characters[0].name if chat.characters else ""
    shown: dict[str, str] = {}
    thoughts: dict[str, str] = {}
    depth = newer_visible
    budget = RegexBudget(TURN_REGEX_BUDGET)  # one window's display scripts together
    for node in reversed(nodes):
        if not _visible(node):
            continue
        placement = _placement(node, slash=False)
        speaker = node.speaker if node.role is not NodeRole.USER else fallback
        chosen = scripts.for_speaker(speaker, fallback)
        substitute = _macros(_substitute(chat, speaker))
        show = RegexUse.DISPLAY
        where = placement or RegexPlacement.AI_OUTPUT
        text = regexed(node.content, where, chosen, substitute, show, depth=depth, budget=budget)
        if text != node.content:
            shown[node.id] = text
        reasoning = node.generation.extras.get("reasoning") if node.generation else None
        if isinstance(reasoning, str) and reasoning:
            thought = regexed(
                reasoning,
                RegexPlacement.REASONING,
                chosen,
                substitute,
                show,
                depth=depth,
                budget=budget,
            )
            if thought != reasoning:
                thoughts[node.id] = thought
        depth += 1
    return Shown(shown, thoughts)


def _display(scripts: ChatScripts) -> list[RegexScript]:
    every = [*scripts.common, *(s for own in (scripts.by_character or {}).values() for s in own)]
    return [s for s in every if s.markdown_only and not s.disabled]


def shown_in_window(chats: ChatService, window: PathWindow) -> Shown:
    """`displayed` for a window of the active path (depth counted over the whole path,
    which is read only when a display script has a depth limit)."""
    nodes = [entry.node for entry in window.entries]
    scripts = chat_scripts(chats.store, window.chat)
    display = _display(scripts)
    if not display or not nodes:
        return Shown({}, {})
    newer = 0
    limited = any(s.min_depth is not None or s.max_depth is not None for s in display)
    if window.has_newer and limited:
        path = chats.active_path(window.chat.id).nodes
        ids = [n.id for n in path]
        after = path[ids.index(nodes[-1].id) + 1 :] if nodes[-1].id in ids else []
        newer = sum(1 for n in after if _visible(n))
    return displayed(chats.store, window.chat, nodes, newer, scripts)


def _visible(node: Node) -> bool:
    return not (node.hidden or node.deleted or node.role is NodeRole.SYSTEM)
