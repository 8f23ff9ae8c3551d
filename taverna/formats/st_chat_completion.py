"""SillyTavern's Chat Completion settings (`oai_settings`, or a Chat Completion preset
file on its own), read into the settings prompt assembly uses.

The prompts and their order come from the prompt manager's lists, with the migrations
SillyTavern runs when it loads an older file (formats-presets.md §1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from taverna.formats.chat_sources import models_of
from taverna.formats.settings_reader import SettingsReader
from taverna.model.presets import (
    GLOBAL_ORDER_ID,
    NamesBehavior,
    PromptOrderItem,
    default_prompt_order,
)
from taverna.model.settings import ChatCompletionSettings, PromptSlot, default_prompts


def read_chat_completion(
    reader: SettingsReader, oai: Mapping[str, Any], path: str = "oai_settings."
) -> ChatCompletionSettings:
    """The Chat Completion settings of `oai` (the keys of `oai_settings`); a malformed field
    raises FormatError naming it, under `path`."""
    base = ChatCompletionSettings()
    prompts = _prompts(reader, oai.get("prompts"), path)
    # Before the prompt manager (1.9 and older) the texts had keys of their own;
    # SillyTavern moves them into the prompts when it loads them.
    legacy = {
        slot: text
        for slot, key in (("main", "main_prompt"), ("nsfw", "nsfw_prompt"),
                          ("jailbreak", "jailbreak_prompt"))
        if isinstance(text := oai.get(key), str) and text
    }  # fmt: skip
    if legacy:
        prompts = tuple(
            replace(p, content=legacy[p.identifier]) if p.identifier in legacy else p
            for p in prompts
        )
    order = _order(reader, oai.get("prompt_order"), path)
    source = reader.str_(oai, "chat_completion_source", "openai", path)
    models = models_of(oai)
    if "assistant_impersonation" not in oai and "assistant_prefill" in oai:
        # formats-presets.md §1.1: a missing impersonation prefill copies the prefill.
        oai = {**oai, "assistant_impersonation": oai["assistant_prefill"]}
    names = reader.int_(oai, "names_behavior", 0, path)
    if "names_behavior" not in oai and oai.get("names_in_completion") is True:
        names = 1  # formats-presets.md §1.1 migration
    texts: dict[str, Any] = {
        f.name: reader.str_(oai, f.name, getattr(base, f.name), path)
        for f in fields(ChatCompletionSettings)
        if f.name
        in (
            "send_if_empty",
            "impersonation_prompt",
            "new_chat_prompt",
            "new_group_chat_prompt",
            "new_example_chat_prompt",
            "continue_nudge_prompt",
            "continue_postfix",
            "group_nudge_prompt",
            "wi_format",
            "scenario_format",
            "personality_format",
            "assistant_prefill",
            "assistant_impersonation",
        )
    }
    return ChatCompletionSettings(
        prompts=prompts,
        order=order,
        source=source,
        model=models.get(source, ""),
        models=models,
        max_context=reader.int_(oai, "openai_max_context", 4095, path),
        max_tokens=reader.int_(oai, "openai_max_tokens", 300, path),
        names_behavior=NamesBehavior(names if names in (-1, 0, 1, 2) else 0),
        wrap_in_quotes=reader.bool_(oai, "wrap_in_quotes", False, path),
        continue_prefill=reader.bool_(oai, "continue_prefill", False, path),
        squash_system_messages=reader.bool_(oai, "squash_system_messages", False, path),
        image_inlining=reader.bool_(oai, "image_inlining", False, path),
        inline_image_quality=reader.str_(oai, "inline_image_quality", "low", path) or "low",
        sampling=_sampling(reader, oai, path),
        extras={
            k: oai.get(k)
            for k in (
                "claude_use_sysprompt",
                "use_makersuite_sysprompt",
                "human_sysprompt_message",
                "custom_prompt_post_processing",
                "reverse_proxy",
                "custom_url",
                "function_calling",
            )
            if k in oai
        }
        | {"logit_bias_preset": _logit_bias(oai)},
        **texts,
    )


def _sampling(reader: SettingsReader, oai: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The sampler values, under the names a provider's request uses."""
    return {
        "temperature": oai.get("temp_openai", 1),
        "frequency_penalty": oai.get("freq_pen_openai", 0),
        "presence_penalty": oai.get("pres_pen_openai", 0),
        "top_p": oai.get("top_p_openai", 1),
        "top_k": oai.get("top_k_openai", 0),
        "top_a": oai.get("top_a_openai", 0),
        "min_p": oai.get("min_p_openai", 0),
        "repetition_penalty": oai.get("repetition_penalty_openai", 1),
        "max_tokens": reader.int_(oai, "openai_max_tokens", 300, path),
        "stream": reader.bool_(oai, "stream_openai", False, path),
        "seed": oai.get("seed", -1),
        "n": oai.get("n", 1),
        "logit_bias": {},
    }


def _logit_bias(oai: Mapping[str, Any]) -> dict[str, Any]:
    """The selected logit-bias preset's entries, kept for a provider to tokenize."""
    presets = oai.get("bias_presets")
    selected = oai.get("bias_preset_selected")
    if isinstance(presets, dict) and isinstance(selected, str):
        entries = presets.get(selected)
        if isinstance(entries, list) and entries:
            return {"entries": entries}
    return {}


def _prompts(
    reader: SettingsReader, value: Any, prefix: str = "oai_settings."
) -> tuple[PromptSlot, ...]:
    if value is None or value == []:
        return default_prompts()
    if not isinstance(value, list):
        raise reader.fail(prefix + "prompts", "a list", value)
    out: list[PromptSlot] = []
    for i, item in enumerate(value):
        path = f"{prefix}prompts[{i}]."
        if not isinstance(item, dict):
            raise reader.fail(path[:-1], "an object", item)
        role = item.get("role")
        out.append(
            PromptSlot(
                identifier=reader.str_(item, "identifier", "", path),
                name=reader.str_(item, "name", "", path),
                role=role if isinstance(role, str) and role else "system",
                content=reader.str_(item, "content", "", path),
                system_prompt=reader.bool_(item, "system_prompt", False, path),
                marker=reader.bool_(item, "marker", False, path),
                injection_position=reader.int_(item, "injection_position", 0, path),
                injection_depth=reader.int_(item, "injection_depth", 4, path),
                forbid_overrides=reader.bool_(item, "forbid_overrides", False, path),
            )
        )
    # formats-presets.md §1.2: missing built-in prompts are re-added on load.
    have = {p.identifier for p in out}
    out.extend(p for p in default_prompts() if p.identifier not in have)
    return tuple(out)


def _order(
    reader: SettingsReader, value: Any, prefix: str = "oai_settings."
) -> tuple[PromptOrderItem, ...]:
    if not isinstance(value, list):
        return default_prompt_order()
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise reader.fail(f"{prefix}prompt_order[{i}]", "an object", item)
        if item.get("character_id") == GLOBAL_ORDER_ID:
            entries = item.get("order")
            if not isinstance(entries, list):
                raise reader.fail(f"{prefix}prompt_order[{i}].order", "a list", entries)
            if not entries:
                return default_prompt_order()
            out = []
            for j, entry in enumerate(entries):
                path = f"{prefix}prompt_order[{i}].order[{j}]."
                if not isinstance(entry, dict):
                    raise reader.fail(path[:-1], "an object", entry)
                out.append(
                    PromptOrderItem(
                        identifier=reader.str_(entry, "identifier", "", path),
                        enabled=reader.bool_(entry, "enabled", True, path),
                    )
                )
            return tuple(out)
    return default_prompt_order()
