"""Macros: SillyTavern's `{{...}}` language, pure and deterministic.

    from taverna.engine.macros import MacroContext, evaluate, chat_seed

    context = MacroContext(user="Ann", char="Seraphina", now=turn_time,
                           chat_id_hash=chat_seed(chat_root_id), seed=turn_seed,
                           variables=Variables(local=path_state_variables))
    result = evaluate("Hello {{user}}{{setvar::met::yes}}", context)
    result.text        # "Hello Ann"
    result.variables   # the new variable state to record on the node (the input is untouched)

Everything a macro can depend on is in the context; nothing reads a clock, a global or
a file. `string_hash` and `SeededRandom` are SillyTavern's hash and seeded generator.
"""

from taverna.engine.macros.evaluate import (
    INSTRUCT_MACROS,
    MacroContext,
    MacroResult,
    chat_seed,
    evaluate,
    has_macros,
)
from taverna.engine.macros.seeded import SeededRandom, string_hash
from taverna.engine.macros.variables import Variables

__all__ = [
    "INSTRUCT_MACROS",
    "MacroContext",
    "MacroResult",
    "SeededRandom",
    "Variables",
    "chat_seed",
    "evaluate",
    "has_macros",
    "string_hash",
]
