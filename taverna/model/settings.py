"""The prompt-relevant settings SillyTavern keeps, as plain frozen data.

Presets' Chat Completion settings (the prompt manager and the texts around it), the
Text Completion side (the instruct, context and system-prompt templates in use, the
file models of `taverna.model.presets`, with their switches), the power-user
settings and the persona: what `taverna.formats.st_settings` reads and the assembly
engine takes in its context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from taverna.model.injection import InjectionRole
from taverna.model.persona import PersonaPosition
from taverna.model.presets import (
    MARKER_NAMES,
    ChatCompletionPreset,
    ContextTemplate,
    InstructTemplate,
    NamesBehavior,
    PromptOrderItem,
    SystemPromptPreset,
    default_prompt_order,
)

# ---------------------------------------------------------- injections and persona


@dataclass(frozen=True, slots=True)
class PersonaInfo:
    """The user's persona: name, description and where the description goes."""

    name: str = "User"
    description: str = ""
    position: PersonaPosition = PersonaPosition.IN_PROMPT
    depth: int = 2
    role: InjectionRole = InjectionRole.SYSTEM
    avatar: str = ""
    lorebook: str = ""


# ------------------------------------------------------------------- presets


@dataclass(frozen=True, slots=True)
class PromptSlot:
    """One prompt-manager prompt: a text slot or a marker (formats-presets.md §1.2)."""

    identifier: str
    name: str = ""
    role: str = "system"
    content: str = ""
    system_prompt: bool = False
    marker: bool = False
    injection_position: int = 0  # 0 relative, 1 in-chat at `injection_depth`
    injection_depth: int = 4
    forbid_overrides: bool = False


DEFAULT_MAIN_PROMPT = (
    "Write {{char}}'s next reply in a fictional chat between {{charIfNotGroup}} and {{user}}."
)
DEFAULT_ENHANCE_DEFINITIONS = (
    "If you have more knowledge of {{char}}, add to the character's lore and personality to "
    "enhance them but keep the Character Sheet's definitions absolute."
)
# SillyTavern's defaults for a Chat Completion preset's utility texts, as its files have them
_PRESET_FILE_DEFAULTS = ChatCompletionPreset()


def default_prompts() -> tuple[PromptSlot, ...]:
    """The built-in prompt-manager prompts (formats-presets.md §1.2)."""
    return (
        PromptSlot("main", "Main Prompt", content=DEFAULT_MAIN_PROMPT, system_prompt=True),
        PromptSlot("nsfw", "Auxiliary Prompt", system_prompt=True),
        PromptSlot("jailbreak", "Post-History Instructions", system_prompt=True),
        PromptSlot(
            "enhanceDefinitions",
            "Enhance Definitions",
            content=DEFAULT_ENHANCE_DEFINITIONS,
            system_prompt=True,
        ),
        *(PromptSlot(i, n, system_prompt=True, marker=True) for i, n in MARKER_NAMES.items()),
    )


@dataclass(frozen=True, slots=True)
class ChatCompletionSettings:
    """The active Chat Completion preset: prompt manager and the texts around it."""

    prompts: tuple[PromptSlot, ...] = field(default_factory=default_prompts)
    order: tuple[PromptOrderItem, ...] = field(default_factory=default_prompt_order)
    source: str = "openai"
    model: str = "gpt-4-turbo"
    # SillyTavern keeps one model per source (`claude_model`, `google_model`, ...)
    models: Mapping[str, str] = field(default_factory=dict)
    max_context: int = 4095
    max_tokens: int = 300
    names_behavior: NamesBehavior = NamesBehavior.DEFAULT
    wrap_in_quotes: bool = False
    send_if_empty: str = ""
    impersonation_prompt: str = _PRESET_FILE_DEFAULTS.impersonation_prompt
    new_chat_prompt: str = _PRESET_FILE_DEFAULTS.new_chat_prompt
    new_group_chat_prompt: str = _PRESET_FILE_DEFAULTS.new_group_chat_prompt
    new_example_chat_prompt: str = _PRESET_FILE_DEFAULTS.new_example_chat_prompt
    continue_nudge_prompt: str = _PRESET_FILE_DEFAULTS.continue_nudge_prompt
    continue_prefill: bool = False
    continue_postfix: str = " "
    group_nudge_prompt: str = _PRESET_FILE_DEFAULTS.group_nudge_prompt
    wi_format: str = "{0}"
    scenario_format: str = _PRESET_FILE_DEFAULTS.scenario_format
    personality_format: str = _PRESET_FILE_DEFAULTS.personality_format
    squash_system_messages: bool = False
    # Send pictures attached to messages (where the API and model see them), at this detail.
    image_inlining: bool = False
    inline_image_quality: str = "low"
    assistant_prefill: str = ""
    assistant_impersonation: str = ""
    stop: tuple[str, ...] = ()
    # The sampling fields by SillyTavern's request names (temperature, top_p, ...).
    sampling: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, Any] = field(default_factory=dict)

    def for_source(self, source: str) -> ChatCompletionSettings:
        """These settings sending to another source, with that source's own model."""
        if source == self.source:
            return self
        return replace(self, source=source, model=self.models.get(source, ""))

    def slot(self, identifier: str) -> PromptSlot | None:
        """The prompt with this identifier, if the preset has it."""
        for prompt in self.prompts:
            if prompt.identifier == identifier:
                return prompt
        return None


# The shipped `Default` context template's story string (a new install's), which adds the
# lorebook blocks to the plain one a template file lacking the key means.
SHIPPED_STORY_STRING = (
    "{{#if system}}{{system}}\n{{/if}}{{#if wiBefore}}{{wiBefore}}\n{{/if}}"
    "{{#if description}}{{description}}\n{{/if}}{{#if personality}}{{char}}'s personality: "
    "{{personality}}\n{{/if}}{{#if scenario}}Scenario: {{scenario}}\n{{/if}}"
    "{{#if wiAfter}}{{wiAfter}}\n{{/if}}{{#if persona}}{{persona}}\n{{/if}}"
)
# A new install's templates (SillyTavern's `power_user` defaults), for settings that choose
# none and for the keys a chosen template lacks. A template *file* lacking a key means less
# (formats-presets.md §3: no stop strings from `chat_start`, the plain story string).
DEFAULT_INSTRUCT_TEMPLATE = InstructTemplate()
DEFAULT_CONTEXT_TEMPLATE = ContextTemplate(
    name="Default", story_string=SHIPPED_STORY_STRING, use_stop_strings=True
)
DEFAULT_SYSTEM_PROMPT = SystemPromptPreset(
    name="Neutral - Chat",
    content="Write {{char}}'s next reply in a fictional chat between {{char}} and {{user}}.",
)


@dataclass(frozen=True, slots=True)
class TextCompletionSettings:
    """The Text Completion side: templates, context size and sampling."""

    instruct: InstructTemplate = DEFAULT_INSTRUCT_TEMPLATE
    instruct_enabled: bool = False  # `power_user.instruct.enabled`: instruct mode is on
    context: ContextTemplate = DEFAULT_CONTEXT_TEMPLATE
    system_prompt: SystemPromptPreset = DEFAULT_SYSTEM_PROMPT
    system_prompt_enabled: bool = True  # `power_user.sysprompt.enabled`
    api_type: str = "llamacpp"  # SillyTavern `textgen_type`
    max_context: int = 8192
    amount_gen: int = 350
    # The sampling fields by SillyTavern's request names.
    sampling: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PowerUserSettings:
    """The user settings that change the prompt (SillyTavern `power_user`)."""

    prefer_character_prompt: bool = True
    prefer_character_jailbreak: bool = True
    pin_examples: bool = False
    strip_examples: bool = False
    collapse_newlines: bool = False
    always_force_name2: bool = True
    user_prompt_bias: str = ""
    single_line: bool = False
    trim_sentences: bool = False
    custom_stopping_strings: str = ""
    custom_stopping_strings_macro: bool = True
    token_padding: int = 64
    tokenizer: int = 99  # SillyTavern's tokenizer id; 99 = best match for the model
