"""Lorebook (world info) activation, as SillyTavern 1.12.6 does it.

How the assembly calls it, once per turn::

    from taverna.engine.lorebook import (
        BookInPlay, BookSource, ScanMessage, activate)

    activation = activate(
        [BookInPlay(global_book, BookSource.GLOBAL),
         BookInPlay(card_book, BookSource.CHARACTER),
         BookInPlay(chat_book, BookSource.CHAT)],
        [ScanMessage(text=node.content, name=node.speaker) for node in visible_path],
        max_context=context_size - response_length,
        count_tokens=tokenizer_count,           # Callable[[str], int]
        settings=world_info,                    # taverna.model.lorebook.WorldInfoSettings
        timers=path_state.timed_world_info,     # TimedEffects from the active leaf
        injections=[authors_note_if_scanned],   # prompts flagged "scan"
        character=CharacterIdentity(file_name=avatar_stem, tags=tag_ids),
        macros=macro_context,                   # expands keys and contents
        seed=turn_seed,                         # probability and group draws
    )
    placement = activation.placed(transform=apply_world_info_regex)
    placement.before_text, placement.after_text      # the two WI slots
    placement.an_top, placement.an_bottom            # around the Author's Note
    placement.depth                                  # DepthGroup(depth, role, text) injections
    placement.examples                               # (EM_TOP|EM_BOTTOM, text) blocks
    activation.timers       # record on the new node (unchanged input on dry runs)
    activation.variables    # variables after {{setvar}} etc. in contents
    list(activation.trace())  # an EntryTrace (model) for every entry: why it fired or not

`activate` is pure: the same arguments give the same result, as long as no regex key
runs into a time limit (its own, or the turn's `RegexBudget`, passed as `regexes=`). Key
matching is precompiled per book (Aho-Corasick automata, cached until the book object
changes).
"""

from taverna.engine.lorebook.activation import activate
from taverna.engine.lorebook.inputs import BookInPlay, BookSource, CharacterIdentity, ScanMessage
from taverna.engine.lorebook.placement import (
    DEFAULT_DEPTH,
    ActivatedEntry,
    DepthGroup,
    Placement,
    place,
)
from taverna.engine.lorebook.results import Activation

__all__ = [
    "DEFAULT_DEPTH",
    "ActivatedEntry",
    "Activation",
    "BookInPlay",
    "BookSource",
    "CharacterIdentity",
    "DepthGroup",
    "Placement",
    "ScanMessage",
    "activate",
    "place",
]
