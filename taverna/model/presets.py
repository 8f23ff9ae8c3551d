"""Presets and templates: Chat Completion presets, instruct, context and system-prompt
templates, and Text Completion sampler presets (formats-presets.md).

Defaults are SillyTavern 1.12.6's code defaults, i.e. what a key that is absent from a
file behaves as; absent keys are still not written back.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

from pydantic import Field

from taverna.model.document import JsonInt, Number, STDocument

# Order SillyTavern uses when a preset's 100001 list is empty (formats-presets.md §1.3).
DEFAULT_PROMPT_ORDER: tuple[tuple[str, bool], ...] = (
    ("main", True),
    ("worldInfoBefore", True),
    ("personaDescription", True),
    ("charDescription", True),
    ("charPersonality", True),
    ("scenario", True),
    ("enhanceDefinitions", False),
    ("nsfw", True),
    ("worldInfoAfter", True),
    ("dialogueExamples", True),
    ("chatHistory", True),
    ("jailbreak", True),
)

GLOBAL_ORDER_ID = 100001
"""The `character_id` of the prompt order Chat Completion uses (§1.3)."""

# The prompt-manager markers (formats-presets.md §1.2): where the card, lorebook and chat
# parts go, with the names SillyTavern shows for them.
MARKER_NAMES: dict[str, str] = {
    "dialogueExamples": "Chat Examples",
    "chatHistory": "Chat History",
    "worldInfoAfter": "World Info (after)",
    "worldInfoBefore": "World Info (before)",
    "charDescription": "Char Description",
    "charPersonality": "Char Personality",
    "scenario": "Scenario",
    "personaDescription": "Persona Description",
}
MARKER_IDS = frozenset(MARKER_NAMES)


class NamesBehavior(IntEnum):
    """How speaker names reach a Chat Completion request (§1.4)."""

    NONE = -1
    DEFAULT = 0
    COMPLETION = 1
    CONTENT = 2


class PromptDefinition(STDocument):
    """One prompt-manager prompt (`prompts[]`, §1.2). Markers have no content."""

    identifier: str = ""
    name: str = ""
    role: str | None = None
    content: str | None = None
    system_prompt: bool = False
    marker: bool = False
    injection_position: JsonInt | None = None  # 0: its place in the order; 1: into the chat
    injection_depth: JsonInt | None = None
    injection_order: JsonInt | None = None
    injection_trigger: list[str] | None = None
    forbid_overrides: bool | None = None
    enabled: bool | None = None  # ignored by SillyTavern: enablement lives in prompt_order


class PromptOrderItem(STDocument):
    """One `{identifier, enabled}` of a prompt order."""

    identifier: str
    enabled: bool = True


def default_prompt_order() -> tuple[PromptOrderItem, ...]:
    """The order SillyTavern ships and uses when a preset's list is empty (§1.3)."""
    return tuple(PromptOrderItem(identifier=i, enabled=e) for i, e in DEFAULT_PROMPT_ORDER)


class PromptOrder(STDocument):
    """The prompt order of one `character_id` (100001 is the one Chat Completion uses)."""

    character_id: JsonInt | str
    order: list[PromptOrderItem] = Field(default_factory=list)


class ChatCompletionPreset(STDocument):
    """A Chat Completion preset (`OpenAI Settings/<name>.json`, §1.1).

    The file holds no name; `name` is the file stem, kept outside the JSON.
    """

    chat_completion_source: str = "openai"
    openai_model: str | None = None
    claude_model: str | None = None
    google_model: str | None = None
    openrouter_model: str | None = None
    mistralai_model: str | None = None
    custom_model: str | None = None
    custom_url: str | None = None
    temperature: Number = 1
    frequency_penalty: Number = 0
    presence_penalty: Number = 0
    top_p: Number = 1
    top_k: Number = 0
    top_a: Number = 0
    min_p: Number = 0
    repetition_penalty: Number = 1
    openai_max_context: JsonInt = 4095
    openai_max_tokens: JsonInt = 300
    max_context_unlocked: bool = False
    stream_openai: bool = False
    seed: JsonInt = -1
    n: JsonInt = 1
    names_behavior: JsonInt = 0
    wrap_in_quotes: bool = False
    send_if_empty: str = ""
    impersonation_prompt: str = (
        "[Write your next reply from the point of view of {{user}}, using the chat history so "
        "far as a guideline for the writing style of {{user}}. Don't write as {{char}} or "
        "system. Don't describe actions of {{char}}.]"
    )
    new_chat_prompt: str = "[Start a new Chat]"
    new_group_chat_prompt: str = "[Start a new group chat. Group members: {{group}}]"
    new_example_chat_prompt: str = "[Example Chat]"
    continue_nudge_prompt: str = (
        "[Continue the following message. Do not include ANY parts of the original message. "
        "Use capitalization and punctuation as if your reply is a part of the original "
        "message: {{lastChatMessage}}]"
    )
    continue_prefill: bool = False
    continue_postfix: str = " "
    group_nudge_prompt: str = "[Write the next reply only as {{char}}.]"
    wi_format: str = "{0}"
    scenario_format: str = "[Circumstances and context of the dialogue: {{scenario}}]"
    personality_format: str = "[{{char}}'s personality: {{personality}}]"
    bias_preset_selected: str = "Default (none)"
    assistant_prefill: str = ""
    assistant_impersonation: str | None = None
    human_sysprompt_message: str | None = None
    claude_use_sysprompt: bool = False
    use_makersuite_sysprompt: bool = True
    squash_system_messages: bool = False
    image_inlining: bool = False
    inline_image_quality: str = "low"
    function_calling: bool = False
    jailbreak_system: bool = False
    prompts: list[PromptDefinition] = Field(default_factory=list)
    prompt_order: list[PromptOrder] = Field(default_factory=list)

    def prompt(self, identifier: str) -> PromptDefinition | None:
        """The prompt definition with this identifier, if any."""
        return next((p for p in self.prompts if p.identifier == identifier), None)

    def order_for(self, character_id: int = GLOBAL_ORDER_ID) -> list[PromptOrderItem]:
        """The prompt order of `character_id`; SillyTavern's default when absent or empty."""
        for entry in self.prompt_order:
            if str(entry.character_id) == str(character_id) and entry.order:
                return list(entry.order)
        return list(default_prompt_order())


class InstructNames(StrEnum):
    """Speaker names in instruct mode (§2.1 `names_behavior`)."""

    NONE = "none"
    FORCE = "force"
    ALWAYS = "always"


class InstructTemplate(STDocument):
    """An instruct template (`instruct/<name>.json`, §2)."""

    name: str = ""
    input_sequence: str = "### Instruction:"
    input_suffix: str = ""
    output_sequence: str = "### Response:"
    output_suffix: str = ""
    system_sequence: str = ""
    system_suffix: str = ""
    system_same_as_user: bool = False
    first_input_sequence: str = ""
    last_input_sequence: str = ""
    first_output_sequence: str = ""
    last_output_sequence: str = ""
    last_system_sequence: str = ""
    system_sequence_prefix: str = ""
    system_sequence_suffix: str = ""
    story_string_prefix: str | None = None
    story_string_suffix: str | None = None
    stop_sequence: str = ""
    user_alignment_message: str = ""
    wrap: bool = True
    macro: bool = True
    names_behavior: str = "force"
    activation_regex: str = ""
    skip_examples: bool = False
    sequences_as_stop_strings: bool = True
    # legacy keys, migrated on load by SillyTavern (§2.1)
    separator_sequence: str | None = None
    names: bool | None = None
    names_force_groups: bool | None = None
    system_prompt: str | None = None

    @property
    def effective_names_behavior(self) -> InstructNames:
        """`names_behavior`, or what the legacy `names` flags mean when it is absent."""
        legacy = self._legacy_names_behavior()
        if legacy is not None:
            return legacy
        try:
            return InstructNames(self.names_behavior)
        except ValueError:
            return InstructNames.FORCE

    @property
    def effective_output_suffix(self) -> str:
        """`output_suffix`, or the legacy `separator_sequence` when it is absent."""
        if "output_suffix" not in self.model_fields_set and self.separator_sequence is not None:
            return self.separator_sequence
        return self.output_suffix

    def migrated(self) -> InstructTemplate:
        """The template with its legacy keys moved as SillyTavern moves them on load (§2.1).

        `names`/`names_force_groups` give `names_behavior` and `separator_sequence` gives
        `output_suffix`, where those are absent; everything else stays as written.
        """
        changes: dict[str, str] = {}
        legacy = self._legacy_names_behavior()
        if legacy is not None:
            changes["names_behavior"] = legacy.value
        if "output_suffix" not in self.model_fields_set and self.separator_sequence is not None:
            changes["output_suffix"] = self.separator_sequence
        return self.model_copy(update=changes) if changes else self

    def _legacy_names_behavior(self) -> InstructNames | None:
        # §2.1: `names: true` is always; else `names_force_groups: true` is force; else none.
        if "names_behavior" in self.model_fields_set:
            return None
        if self.names is None and self.names_force_groups is None:
            return None
        if self.names:
            return InstructNames.ALWAYS
        return InstructNames.FORCE if self.names_force_groups else InstructNames.NONE


DEFAULT_STORY_STRING = (
    "{{#if system}}{{system}}\n{{/if}}{{#if description}}{{description}}\n{{/if}}"
    "{{#if personality}}{{char}}'s personality: {{personality}}\n{{/if}}"
    "{{#if scenario}}Scenario: {{scenario}}\n{{/if}}{{#if persona}}{{persona}}\n{{/if}}"
)


# SillyTavern 1.9's story-string placeholders and the names its successors render them by
# (1.9 kept `{name, storyString, injections}` files; 1.10 renamed the key `story_string`).
LEGACY_STORY_PLACEHOLDERS = (
    ("{{instructSystemPrompt}}", "{{system}}"),
    ("{{wiBeforeCharacter}}", "{{wiBefore}}"),
    ("{{wiAfterCharacter}}", "{{wiAfter}}"),
)


def migrated_story_string(legacy: str) -> str:
    """A 1.9 `storyString` written with the placeholders of 1.10 and later."""
    for old, new in LEGACY_STORY_PLACEHOLDERS:
        legacy = legacy.replace(old, new)
    return legacy


class ContextTemplate(STDocument):
    """A context template (`context/<name>.json`, §3).

    A 1.9 template (`storyString`, `injections`) keeps its keys as they are; its story
    string is read through `effective_story_string`.
    """

    name: str = ""
    story_string: str = DEFAULT_STORY_STRING
    example_separator: str = "***"
    chat_start: str = "***"
    use_stop_strings: bool = False
    names_as_stop_strings: bool = True
    allow_jailbreak: bool = False
    always_force_name2: bool = True
    trim_sentences: bool = False
    single_line: bool = False
    story_string_position: JsonInt | None = None
    story_string_depth: JsonInt | None = None
    story_string_role: JsonInt | None = None

    @property
    def legacy(self) -> bool:
        """A SillyTavern 1.9 template: `storyString` and no `story_string`."""
        return "story_string" not in self.model_fields_set and isinstance(
            self.extras.get("storyString"), str
        )

    @property
    def effective_story_string(self) -> str:
        """The story string this template renders (a 1.9 one migrated)."""
        if self.legacy:
            return migrated_story_string(self.extras["storyString"])
        return self.story_string


class ReasoningTemplate(STDocument):
    """A reasoning template (`reasoning/<name>.json`): how a model's thinking is marked.

    `prefix` and `suffix` wrap the reasoning when it is parsed out of a reply or added
    back to a prompt; `separator` comes between it and the reply.
    """

    name: str = ""
    prefix: str = ""
    suffix: str = ""
    separator: str = ""


class SystemPromptPreset(STDocument):
    """A system-prompt preset (`sysprompt/<name>.json`, §4)."""

    name: str = ""
    content: str = ""
    post_history: str | None = None


class TextCompletionPreset(STDocument):
    """A Text Completion sampler preset (`TextGen Settings/<name>.json`, §5).

    The numeric samplers and switches are typed (SillyTavern reads a slider's value as a
    number, so "0.7" is 0.7); every other key is kept as SillyTavern wrote it.
    """

    temp: Number | None = None
    top_p: Number | None = None
    top_k: Number | None = None
    top_a: Number | None = None
    tfs: Number | None = None
    typical_p: Number | None = None
    min_p: Number | None = None
    rep_pen: Number | None = None
    rep_pen_range: Number | None = None
    rep_pen_slope: Number | None = None
    rep_pen_decay: Number | None = None
    freq_pen: Number | None = None
    presence_pen: Number | None = None
    no_repeat_ngram_size: Number | None = None
    penalty_alpha: Number | None = None
    num_beams: Number | None = None
    length_penalty: Number | None = None
    min_length: Number | None = None
    encoder_rep_pen: Number | None = None
    epsilon_cutoff: Number | None = None
    eta_cutoff: Number | None = None
    mirostat_mode: Number | None = None
    mirostat_tau: Number | None = None
    mirostat_eta: Number | None = None
    min_temp: Number | None = None
    max_temp: Number | None = None
    dynatemp_exponent: Number | None = None
    smoothing_factor: Number | None = None
    smoothing_curve: Number | None = None
    dry_multiplier: Number | None = None
    dry_base: Number | None = None
    dry_allowed_length: Number | None = None
    dry_penalty_last_n: Number | None = None
    xtc_threshold: Number | None = None
    xtc_probability: Number | None = None
    guidance_scale: Number | None = None
    dynatemp: bool | None = None
    temperature_last: bool | None = None
    do_sample: bool | None = None
    early_stopping: bool | None = None
    add_bos_token: bool | None = None
    ban_eos_token: bool | None = None
    skip_special_tokens: bool | None = None
    genamt: JsonInt | None = None
    max_length: JsonInt | None = None


class PromptManagerExportData(STDocument):
    """The `data` of a prompt-manager export: user prompts and one order list."""

    prompts: list[PromptDefinition] = Field(default_factory=list)
    prompt_order: list[PromptOrderItem] = Field(default_factory=list)


class PromptManagerExport(STDocument):
    """A prompt-manager export file (`st-prompts-*.json`, formats-presets.md §1.5)."""

    version: JsonInt = 1
    type: str = "full"
    data: PromptManagerExportData = Field(default_factory=PromptManagerExportData)
