"""The `{{macro}}` language: SillyTavern's catalogue, evaluated in SillyTavern's order.

`evaluate(text, context)` replaces every macro in `text` and returns the new text with
the variable state the variable macros left behind. It is a pure function of its
arguments: the clock (`context.now`), randomness (`context.seed`, `context.chat_id_hash`)
and variables all come from `MacroContext`, so the same context gives the same text.

The passes run in SillyTavern's order (algo-chat-ops.md §8): legacy tags, `{{roll}}`,
instruct/context macros, variables (line by line), `{{newline}}`/`{{trim}}`/`{{noop}}`/
`{{input}}`, character and persona fields, chat state, comments, time, `{{banned}}`,
`{{random}}`, `{{pick}}`. A later pass sees what an earlier one produced, which is why
`{{char}}` inside a description is resolved while `{{getvar}}` inside one is not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from functools import cached_property
from types import MappingProxyType

from taverna.engine.macros.clock import format_moment, humanize, parse_moment
from taverna.engine.macros.js import js_text
from taverna.engine.macros.seeded import SeededRandom, string_hash
from taverna.engine.macros.variables import Variables, add_to_variable, read_variable

__all__ = ["INSTRUCT_MACROS", "MacroContext", "MacroResult", "evaluate", "has_macros"]

_EMPTY: Mapping[str, str] = MappingProxyType({})


def _empty() -> Mapping[str, str]:
    return _EMPTY


# Instruct and context-template macros; each row's names are aliases of one value
# (algo-chat-ops.md §8). `MacroContext.instruct` maps any of a row's names to the value;
# a row with no value becomes "" (what SillyTavern prints when instruct mode is off).
INSTRUCT_MACROS: tuple[tuple[str, ...], ...] = (
    ("instructSystemPromptPrefix",),
    ("instructSystemPromptSuffix",),
    ("instructInput", "instructUserPrefix"),
    ("instructUserSuffix",),
    ("instructOutput", "instructAssistantPrefix"),
    ("instructSeparator", "instructAssistantSuffix"),
    ("instructSystemPrefix",),
    ("instructSystemSuffix",),
    ("instructFirstOutput", "instructFirstAssistantPrefix"),
    ("instructLastOutput", "instructLastAssistantPrefix"),
    ("instructStop",),
    ("instructUserFiller",),
    ("instructSystemInstructionPrefix",),
    ("instructFirstInput", "instructFirstUserPrefix"),
    ("instructLastInput", "instructLastUserPrefix"),
    ("systemPrompt",),
    ("defaultSystemPrompt", "instructSystem", "instructSystemPrompt"),
    ("exampleSeparator",),
    ("chatStart",),
)


@dataclass(frozen=True, slots=True)
class MacroContext:
    """Everything a macro can print, fixed for one evaluation.

    `group` is the comma-joined member list in a group chat and None in a solo chat
    (then `{{group}}` prints the character's name). `original` is only set inside
    character prompt overrides. `idle_since` is when the user's previous message (the
    latest user message that is not the newest message) was sent. `chat_id_hash` seeds
    `{{pick}}` (use `chat_seed`), `seed` seeds `{{random}}` and `{{roll}}`. `extra`
    holds per-call values such as `summary` or `words`, replaced like the fields.
    """

    user: str = "User"
    char: str = ""
    group: str | None = None
    description: str = ""
    personality: str = ""
    scenario: str = ""
    persona: str = ""
    mes_examples: str = ""
    char_prompt: str = ""
    char_jailbreak: str = ""
    char_version: str = ""
    model: str = ""
    original: str | None = None
    input: str = ""
    max_prompt: int | None = None
    last_message: str = ""
    last_message_id: int | None = None
    last_user_message: str = ""
    last_char_message: str = ""
    first_included_message_id: int | None = None
    last_swipe_id: int | None = None
    current_swipe_id: int | None = None
    now: datetime = datetime(2000, 1, 1, tzinfo=UTC)
    idle_since: datetime | None = None
    chat_id_hash: int = 0
    seed: int = 0
    instruct: Mapping[str, str] = field(default_factory=_empty)
    extra: Mapping[str, str] = field(default_factory=_empty)
    outlets: Mapping[str, str] = field(default_factory=_empty)
    variables: Variables = field(default_factory=Variables)


@dataclass(frozen=True, slots=True)
class MacroResult:
    """The evaluated text, the variables after it, and any `{{banned "..."}}` strings."""

    text: str
    variables: Variables
    banned: tuple[str, ...] = ()


def chat_seed(chat_identifier: str) -> int:
    """The `{{pick}}` seed of a chat: SillyTavern's hash of its id (root id or main chat)."""
    return string_hash(chat_identifier)


_LEGACY = re.compile(r"<(USER|BOT|CHAR|CHARIFNOTGROUP|GROUP)>", re.IGNORECASE)
_ROLL = re.compile(r"\{\{roll[ :]([^}]+)\}\}", re.IGNORECASE)
_DICE = re.compile(r"([1-9]\d*)?d([1-9]\d*)([+-]\d+)?", re.IGNORECASE)
_TRIM = re.compile(r"(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*", re.IGNORECASE)
_REVERSE = re.compile(r"\{\{reverse:(.+?)\}\}", re.IGNORECASE)
_COMMENT = re.compile(r"\{\{//([\s\S]*?)\}\}")
_DATETIMEFORMAT = re.compile(r"\{\{datetimeformat +([^}]*)\}\}", re.IGNORECASE)
_TIME_UTC = re.compile(r"\{\{time_UTC([-+]\d+)\}\}", re.IGNORECASE)
_TIMEDIFF = re.compile(r"\{\{timeDiff::(.*?)::(.*?)\}\}", re.IGNORECASE)
_BANNED = re.compile(r'\{\{banned "(.*)"\}\}', re.IGNORECASE)
_RANDOM = re.compile(r"\{\{random\s?::?([^}]+)\}\}", re.IGNORECASE)
_PICK = re.compile(r"\{\{pick\s?::?([^}]+)\}\}", re.IGNORECASE)
_OUTLET = re.compile(r"\{\{outlet::(.+?)\}\}", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_NEWLINE = re.compile(r"\{\{newline\}\}", re.IGNORECASE)
_NOOP = re.compile(r"\{\{noop\}\}", re.IGNORECASE)


def _variable_macros(scope: str) -> tuple[re.Pattern[str], ...]:
    """The get, set, add, inc and dec macros of one scope (`var` or `globalvar`)."""
    name, name_value = r"::([^}]+)\}\}", r"::([^:]+)::([^}]+)\}\}"
    return tuple(
        re.compile(r"\{\{" + verb + scope + arguments, re.IGNORECASE)
        for verb, arguments in (
            ("get", name),
            ("set", name_value),
            ("add", name_value),
            ("inc", name),
            ("dec", name),
        )
    )


# Variable macros in SillyTavern's fixed per-line order (algo-chat-ops.md §7):
# those of chat variables first, then those of global ones.
_VARIABLE_MACROS = ((False, _variable_macros("var")), (True, _variable_macros("globalvar")))

_INSTRUCT_PATTERNS = tuple(
    (
        names,
        re.compile(r"\{\{(" + "|".join(map(re.escape, names)) + r")\}\}", re.IGNORECASE),
    )
    for names in INSTRUCT_MACROS
)
_NAME_PATTERNS: dict[str, re.Pattern[str]] = {}


def _name_pattern(name: str) -> re.Pattern[str]:
    pattern = _NAME_PATTERNS.get(name)
    if pattern is None:
        pattern = re.compile(r"\{\{" + re.escape(name) + r"\}\}", re.IGNORECASE)
        if len(_NAME_PATTERNS) < 4096:
            _NAME_PATTERNS[name] = pattern
    return pattern


def has_macros(text: str) -> bool:
    """Whether `evaluate` could change `text` at all."""
    return "{{" in text or _LEGACY.search(text) is not None


def _split_list(body: str) -> list[str]:
    """`{{random}}`/`{{pick}}` items: `::` keeps items verbatim, commas trim and honour `\\,`."""
    if "::" in body:
        return body.split("::")
    placeholder = "\x00COMMA\x00"
    return [
        item.strip().replace(placeholder, ",")
        for item in body.replace("\\,", placeholder).split(",")
    ]


class _Evaluation:
    """One run of `evaluate`: the text being rewritten plus the state it carries."""

    def __init__(self, raw: str, context: MacroContext) -> None:
        self.raw = raw
        self.context = context
        self.variables = context.variables
        self.banned: list[str] = []
        # In a solo chat `{{group}}` and `{{charIfNotGroup}}` print the character's name.
        self.solo_group = context.char if context.group is None else context.group
        self.original_used = False

    @cached_property
    def raw_hash(self) -> int:
        """The hash of the text as given, which seeds draws: computed only if one is made."""
        return string_hash(self.raw)

    def result(self, text: str) -> MacroResult:
        return MacroResult(text, self.variables, tuple(self.banned))

    # --- the passes, in SillyTavern's order -----------------------------------------
    def legacy(self, match: re.Match[str]) -> str:
        """`<USER>`, `<BOT>`, `<CHAR>`, `<CHARIFNOTGROUP>`, `<GROUP>`."""
        tag = match.group(1).upper()
        if tag == "USER":
            return self.context.user
        if tag in ("BOT", "CHAR"):
            return self.context.char
        return self.solo_group

    def early_passes(self, text: str) -> str:
        """`{{roll}}`, instruct macros, variables, `{{newline}}`, `{{trim}}`, `{{noop}}`, input."""
        ctx = self.context
        text = _ROLL.sub(self.roll, text)
        for names, pattern in _INSTRUCT_PATTERNS:
            value = next((ctx.instruct[name] for name in names if name in ctx.instruct), "")
            text = pattern.sub(_literal(value), text)
        text = self.variables_pass(text)
        text = _NEWLINE.sub("\n", text)
        text = _TRIM.sub("", text)
        text = _NOOP.sub("", text)
        return _name_pattern("input").sub(_literal(ctx.input), text)

    def first_original(self) -> str:
        # algo-chat-ops.md §8: only the first {{original}} is replaced by the text
        if self.original_used or self.context.original is None:
            return ""
        self.original_used = True
        return self.context.original

    def fields_pass(self, text: str) -> str:
        """Character and persona fields, the per-call extras, then outlets."""
        ctx = self.context
        environment: dict[str, str | Callable[[], str]] = {}
        if ctx.original is not None:
            environment["original"] = self.first_original
        environment.update(
            {
                "charPrompt": ctx.char_prompt,
                "charJailbreak": ctx.char_jailbreak,
                "description": ctx.description,
                "personality": ctx.personality,
                "scenario": ctx.scenario,
                "persona": ctx.persona,
                "mesExamples": ctx.mes_examples,
                "charVersion": ctx.char_version,
                "char_version": ctx.char_version,
                "user": ctx.user,
                "char": ctx.char,
                "group": self.solo_group,
                "charIfNotGroup": self.solo_group,
                "model": ctx.model,
            }
        )
        environment.update(ctx.extra)
        for name, entry_value in environment.items():
            if "{{" not in text:
                break
            if isinstance(entry_value, str):
                text = _name_pattern(name).sub(_literal(entry_value), text)
            else:
                text = _name_pattern(name).sub(_call(entry_value), text)
        if "{{" in text and ctx.outlets:
            text = _OUTLET.sub(self.outlet, text)
        return text

    def outlet(self, match: re.Match[str]) -> str:
        return self.context.outlets.get(match.group(1).strip(), "")

    def chat_state_pass(self, text: str) -> str:
        """The chat's state (last messages, ids, swipes), `{{reverse}}`, then comments."""
        ctx = self.context
        chat_state: tuple[tuple[str, str], ...] = (
            ("maxPrompt", _optional_number(ctx.max_prompt)),
            ("lastMessage", ctx.last_message),
            ("lastMessageId", _optional_number(ctx.last_message_id)),
            ("lastUserMessage", ctx.last_user_message),
            ("lastCharMessage", ctx.last_char_message),
            ("firstIncludedMessageId", _optional_number(ctx.first_included_message_id)),
            ("lastSwipeId", _optional_number(ctx.last_swipe_id)),
            ("currentSwipeId", _optional_number(ctx.current_swipe_id)),
        )
        for name, state_value in chat_state:
            text = _name_pattern(name).sub(_literal(state_value), text)
        text = _REVERSE.sub(_reversed, text)
        return _COMMENT.sub("", text)

    def time_pass(self, text: str) -> str:
        """Dates and times from the context's clock, idle time, time zones and differences."""
        now = self.context.now
        for name, moment_format in _MOMENTS:
            # Formatted only where the macro occurs (formatting is the costly part).
            text = _name_pattern(name).sub(_moment(now, moment_format), text)
        text = _DATETIMEFORMAT.sub(self.datetime_format, text)
        if _name_pattern("idle_duration").search(text):
            text = _name_pattern("idle_duration").sub(_literal(self.idle_duration()), text)
        text = _TIME_UTC.sub(self.time_utc, text)
        return _TIMEDIFF.sub(self.time_diff, text)

    # --- variables -----------------------------------------------------------------
    def _variable_line(self, line: str) -> str:
        def get(is_global: bool) -> Callable[[re.Match[str]], str]:
            def replace(match: re.Match[str]) -> str:
                name = match.group(1).strip()
                return js_text(read_variable(self.variables.scope(is_global), name))

            return replace

        def set_(is_global: bool) -> Callable[[re.Match[str]], str]:
            def replace(match: re.Match[str]) -> str:
                name = match.group(1).strip()
                self.variables = self.variables.with_value(
                    name, match.group(2), is_global=is_global
                )
                return ""

            return replace

        def add(is_global: bool) -> Callable[[re.Match[str]], str]:
            def replace(match: re.Match[str]) -> str:
                name = match.group(1).strip()
                self.variables, _ = add_to_variable(
                    self.variables, name, match.group(2), is_global=is_global
                )
                return ""

            return replace

        def step(is_global: bool, amount: str) -> Callable[[re.Match[str]], str]:
            def replace(match: re.Match[str]) -> str:
                name = match.group(1).strip()
                self.variables, value = add_to_variable(
                    self.variables, name, amount, is_global=is_global
                )
                return js_text(value)

            return replace

        for is_global, (get_macro, set_macro, add_macro, inc_macro, dec_macro) in _VARIABLE_MACROS:
            line = get_macro.sub(get(is_global), line)
            line = set_macro.sub(set_(is_global), line)
            line = add_macro.sub(add(is_global), line)
            line = inc_macro.sub(step(is_global, "1"), line)
            line = dec_macro.sub(step(is_global, "-1"), line)
        return line

    def variables_pass(self, text: str) -> str:
        # algo-chat-ops.md §7: processed line by line; a macro cannot span lines
        lines = text.split("\n")
        return "\n".join(self._variable_line(line) if "{{" in line else line for line in lines)

    # --- randomness ----------------------------------------------------------------
    def _generator(self, kind: str, offset: int) -> SeededRandom:
        # The context seed stands in for SillyTavern's fresh entropy: each occurrence
        # (by position in this text) gets its own stream, the same every evaluation.
        return SeededRandom(string_hash(f"{self.context.seed}-{kind}-{self.raw_hash}-{offset}"))

    def roll(self, match: re.Match[str]) -> str:
        formula = match.group(1).strip()
        if _DIGITS.fullmatch(formula):
            formula = f"1d{formula}"
        dice = _DICE.fullmatch(formula)
        if not dice:
            return ""
        count = int(dice.group(1) or 1)
        sides = int(dice.group(2))
        modifier = int(dice.group(3) or 0)
        if count > 10_000:  # untrusted text must not make us loop for minutes
            return ""
        rng = self._generator("roll", match.start())
        total = sum(1 + int(rng.random() * sides) for _ in range(count)) + modifier
        return str(total)

    def random(self, match: re.Match[str]) -> str:
        items = _split_list(match.group(1))
        rng = self._generator("random", match.start())
        return items[int(rng.random() * len(items))]

    def pick(self, match: re.Match[str]) -> str:
        items = _split_list(match.group(1))
        # algo-chat-ops.md §8: seed = H(H_chat-H(raw)-offset), offset in the current text
        seed = string_hash(f"{self.context.chat_id_hash}-{self.raw_hash}-{match.start()}")
        return items[int(SeededRandom(seed).random() * len(items))]

    # --- time ----------------------------------------------------------------------
    def time_utc(self, match: re.Match[str]) -> str:
        hours = int(match.group(1))
        if not -16 < hours < 16:  # moment reads larger offsets as minutes
            zone = timezone(timedelta(minutes=hours))
        else:
            zone = timezone(timedelta(hours=hours))
        return format_moment(self.context.now.astimezone(zone), "LT")

    def datetime_format(self, match: re.Match[str]) -> str:
        return format_moment(self.context.now, match.group(1))

    def time_diff(self, match: re.Match[str]) -> str:
        first = parse_moment(match.group(1), self.context.now)
        second = parse_moment(match.group(2), self.context.now)
        if first is None or second is None:
            return "Invalid date"
        return humanize(first - second, with_suffix=True)

    def idle_duration(self) -> str:
        since = self.context.idle_since
        if since is None:
            return "just now"
        return humanize(self.context.now - since)

    def banned_word(self, match: re.Match[str]) -> str:
        self.banned.append(match.group(1))
        return ""


def _literal(value: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: value


def _call(produce: Callable[[], str]) -> Callable[[re.Match[str]], str]:
    return lambda _match: produce()


_MOMENTS = (
    ("time", "LT"),
    ("date", "LL"),
    ("weekday", "dddd"),
    ("isotime", "HH:mm"),
    ("isodate", "YYYY-MM-DD"),
)


def _moment(now: datetime, moment_format: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: format_moment(now, moment_format)


def _optional_number(value: int | None) -> str:
    return "" if value is None else str(value)


def _reversed(match: re.Match[str]) -> str:
    return match.group(1)[::-1]


def evaluate(text: str, context: MacroContext) -> MacroResult:
    """Replace every macro in `text`; return the text and the resulting variables."""
    if not text:
        return MacroResult("", context.variables)
    run = _Evaluation(text, context)
    text = _LEGACY.sub(run.legacy, text)
    if "{{" not in text:
        return MacroResult(text, run.variables)
    text = run.fields_pass(run.early_passes(text))
    # Every later pass needs a "{{": a text without one is done (most texts end here).
    if "{{" not in text:
        return run.result(text)
    text = run.chat_state_pass(text)
    if "{{" not in text:
        return run.result(text)
    text = run.time_pass(text)
    text = _BANNED.sub(run.banned_word, text)
    text = _RANDOM.sub(run.random, text)
    text = _PICK.sub(run.pick, text)
    return run.result(text)
