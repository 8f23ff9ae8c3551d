"""Hugging Face chat templates: a model's own Jinja2 `chat_template`, rendered safely.

A model published on the Hugging Face hub ships its prompt format as a Jinja2
template in `tokenizer_config.json`. This is a template kind of its own, beside
SillyTavern's instruct templates: the messages go in, the model's exact prompt
text comes out. Templates are untrusted text, so they run in Jinja2's immutable
sandbox (no attribute access to Python internals, no mutation), with limits on
loop ranges, string and number growth, recursion and output size, so a hostile
or broken template can neither run code nor hang the process.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jinja2 import TemplateError, nodes
from jinja2.exceptions import SecurityError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from taverna.errors import FormatError, TavernaError, library_cause

# Limits that keep a template's work proportional to its input.
MAX_OUTPUT_CHARS = 4_000_000
MAX_LOOP_ITEMS = 200_000
MAX_STRING_CHARS = 1_000_000


class ChatTemplateError(TavernaError):
    """A chat template refused the messages or broke a limit (its own words included)."""


def _raise_exception(message: str) -> None:
    raise ChatTemplateError(
        f"the chat template refused the messages: {message}",
        field="chat_template",
        code="chat_template_refused_messages",
        params={"message_name": str(message)},
    )


def _tojson(value: Any, indent: int | None = None, ensure_ascii: bool = False) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)


class _Budget:
    """Counts loop items across one render."""

    def __init__(self) -> None:
        self.items = 0

    def take(self, count: int) -> None:
        self.items += count
        if self.items > MAX_LOOP_ITEMS:
            raise ChatTemplateError(
                "the chat template loops too much",
                field="chat_template",
                code="chat_template_loops_too_much",
            )


class _Environment(ImmutableSandboxedEnvironment):
    """The sandbox with the binary operators that can explode checked first."""

    intercepted_binops = frozenset({"*", "**", "+"})

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        if op == "**":
            if isinstance(right, int | float) and abs(right) > 64:
                raise SecurityError("exponent too large in a chat template")
            return operator.pow(left, right)
        if op == "*":
            for text, times in ((left, right), (right, left)):
                if (
                    isinstance(text, str | list | tuple)
                    and isinstance(times, int)
                    and len(text) * max(times, 0) > MAX_STRING_CHARS
                ):
                    raise SecurityError("a repeated string is too long in a chat template")
            return operator.mul(left, right)
        result = operator.add(left, right)
        if isinstance(result, str | list) and len(result) > MAX_STRING_CHARS:
            raise SecurityError("a string grows too long in a chat template")
        return result


def _environment(budget: _Budget) -> _Environment:
    env = _Environment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson

    def bounded_range(*args: int) -> range:
        result = range(*args)
        budget.take(len(result))
        return result

    env.globals["range"] = bounded_range
    env.globals["raise_exception"] = _raise_exception
    # Templates that print today's date get a fixed one: the engine reads no clock.
    env.globals["strftime_now"] = lambda fmt: datetime(2024, 1, 1).strftime(str(fmt))
    return env


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """A model's chat template and the special tokens it refers to."""

    source: str
    bos_token: str = ""
    eos_token: str = ""
    special_tokens: Mapping[str, str] = field(default_factory=dict)
    name: str = ""

    @classmethod
    def from_tokenizer_config(
        cls, text: str, *, file: str | None = None, variant: str = "default"
    ) -> ChatTemplate:
        """The template in a `tokenizer_config.json` (a string, or named variants)."""
        try:
            config = json.loads(text)
        except ValueError as error:
            raise FormatError(
                f"not JSON: {error}",
                file=file,
                code="not_json",
                params={"error": str(error), **library_cause(error)},
            ) from error
        if not isinstance(config, dict):
            raise FormatError(
                "a tokenizer config is a JSON object",
                file=file,
                code="tokenizer_config_is_json_object",
            )
        template = config.get("chat_template")
        if isinstance(template, list):
            named = {
                str(t.get("name")): str(t.get("template"))
                for t in template
                if isinstance(t, dict) and isinstance(t.get("template"), str)
            }
            if variant not in named:
                raise FormatError(
                    f"no chat template named '{variant}' (there are: {', '.join(named)})",
                    file=file,
                    field="chat_template",
                    code="no_chat_template_named_there",
                    params={"variant": str(variant), "named": str(", ".join(named))},
                )
            template = named[variant]
        if not isinstance(template, str) or not template:
            raise FormatError(
                "the tokenizer config has no chat_template",
                file=file,
                field="chat_template",
                code="tokenizer_config_has_no_chat",
            )
        specials: dict[str, str] = {}
        for key in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token"):
            value = config.get(key)
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                specials[key] = value
        return cls(
            template,
            specials.get("bos_token", ""),
            specials.get("eos_token", ""),
            specials,
            str(config.get("name_or_path", "")),
        )

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool = True,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """The prompt text for these messages (`{role, content}` mappings)."""
        budget = _Budget()
        env = _environment(budget)
        try:
            compiled = env.from_string(self.source)
            _check_recursion(env, self.source)
            values: dict[str, Any] = {
                **self.special_tokens,
                "bos_token": self.bos_token,
                "eos_token": self.eos_token,
                "messages": [dict(m) for m in messages],
                "add_generation_prompt": add_generation_prompt,
                **(extra or {}),
            }
            out: list[str] = []
            size = 0
            for chunk in compiled.generate(values):
                size += len(chunk)
                if size > MAX_OUTPUT_CHARS:
                    raise ChatTemplateError(
                        "the chat template's output is too long",
                        field="chat_template",
                        code="chat_template_output_too_long",
                    )
                out.append(chunk)
            return "".join(out)
        except ChatTemplateError:
            raise
        except SecurityError as error:
            raise ChatTemplateError(
                f"the chat template did something unsafe: {error}",
                field="chat_template",
                code="chat_template_did_something_unsafe",
                params={"error": str(error)},
            ) from error
        except TemplateError as error:
            raise ChatTemplateError(
                f"the chat template is broken: {error}",
                field="chat_template",
                code="chat_template_is_broken",
                params={"error": str(error)},
            ) from error
        except RecursionError as error:
            raise ChatTemplateError(
                "the chat template recurses too deeply",
                field="chat_template",
                code="chat_template_recurses_too_deeply",
            ) from error
        except (
            TypeError,
            ValueError,
            KeyError,
            IndexError,
            AttributeError,
            ZeroDivisionError,
        ) as error:
            raise ChatTemplateError(
                f"the chat template failed: {error}",
                field="chat_template",
                code="chat_template_failed",
                params={"error": str(error)},
            ) from error

    def render_adapted(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool = True,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """Render; if the template refuses the messages, retry with them adapted.

        Many templates accept no system role or demand alternating user and
        assistant turns. The adapted list folds system text into the next user
        turn and merges neighbours of the same role.
        """
        try:
            return self.render(messages, add_generation_prompt=add_generation_prompt, extra=extra)
        except ChatTemplateError:
            adapted = alternate_roles(messages)
            return self.render(adapted, add_generation_prompt=add_generation_prompt, extra=extra)


def _check_recursion(env: _Environment, source: str) -> None:
    # A macro that calls itself could recurse until Python's own limit; Jinja offers
    # no hook for depth, so such templates are refused outright.
    tree = env.parse(source)
    for macro in tree.find_all(nodes.Macro):
        for call in macro.find_all(nodes.Call):
            if isinstance(call.node, nodes.Name) and call.node.name == macro.name:
                raise ChatTemplateError(
                    f"the chat template's macro '{macro.name}' calls itself",
                    field="chat_template",
                    code="chat_template_macro_calls_itself",
                    params={"name": str(macro.name)},
                )


def alternate_roles(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages reshaped for strict templates: user first, roles alternating, no system."""
    out: list[dict[str, Any]] = []
    pending_system: list[str] = []
    for message in messages:
        role = str(message.get("role", "user"))
        content = str(message.get("content", ""))
        if role == "system":
            pending_system.append(content)
            continue
        if role not in ("user", "assistant"):
            role = "user"
        if pending_system and role == "user":
            content = "\n\n".join([*pending_system, content])
            pending_system = []
        elif pending_system:
            out.append({"role": "user", "content": "\n\n".join(pending_system)})
            pending_system = []
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    if pending_system:
        if out and out[-1]["role"] == "user":
            out[-1]["content"] += "\n\n" + "\n\n".join(pending_system)
        else:
            out.append({"role": "user", "content": "\n\n".join(pending_system)})
    if out and out[0]["role"] == "assistant":
        # The opening SillyTavern itself sends when a prompt must start with the user.
        out.insert(0, {"role": "user", "content": "[Start a new chat]"})
    return out
