"""Regex scripts: find/replace rules SillyTavern runs on messages, prompts and lore."""

from __future__ import annotations

from enum import IntEnum

from pydantic import Field

from taverna.model.document import JsonInt, STDocument


class RegexPlacement(IntEnum):
    """Which texts a script applies to (formats-extensions.md §1.3)."""

    MARKDOWN_DISPLAY = 0  # deprecated; migrated on load
    USER_INPUT = 1
    AI_OUTPUT = 2
    SLASH_COMMAND = 3
    SEND_AS = 4  # legacy; migrated on load
    WORLD_INFO = 5
    REASONING = 6  # newer SillyTavern


class RegexScript(STDocument):
    """One regex script, as stored in settings, in a card's extensions or in an export file.

    `find_regex` is JavaScript regex syntax (`/pattern/flags` or a bare pattern); running
    it is the engine's job. `substitute_regex` is a bool in 1.12.6 and 0/1/2 in newer
    releases; `min_depth`/`max_depth` are null when unset.
    """

    id: str = ""
    script_name: str = Field("", alias="scriptName")
    find_regex: str = Field("", alias="findRegex")
    replace_string: str = Field("", alias="replaceString")
    trim_strings: list[str] = Field(default_factory=list, alias="trimStrings")
    placement: list[JsonInt] = Field(default_factory=list)
    disabled: bool = False
    markdown_only: bool = Field(False, alias="markdownOnly")
    prompt_only: bool = Field(False, alias="promptOnly")
    run_on_edit: bool = Field(False, alias="runOnEdit")
    substitute_regex: bool | JsonInt = Field(False, alias="substituteRegex")
    min_depth: JsonInt | None = Field(None, alias="minDepth")
    max_depth: JsonInt | None = Field(None, alias="maxDepth")

    @property
    def substitution_mode(self) -> int:
        """Macro substitution inside `find_regex`: 0 none, 1 raw, 2 escaped."""
        value = self.substitute_regex
        if value is True:
            return 1
        if value is False:
            return 0
        return int(value)

    def migrated(self) -> RegexScript:
        """The script with legacy placements replaced, as SillyTavern migrates on load.

        formats-extensions.md §1.3: placement 0 (markdown display) is dropped and sets both
        "only" flags; if it was the only one the script gets every 1.12.6 placement.
        Placement 4 ("sendAs") is dropped; if it was the only one it becomes slash commands.
        """
        placement = list(self.placement)
        changes: dict[str, object] = {}
        if RegexPlacement.MARKDOWN_DISPLAY in placement:
            placement = [p for p in placement if p != RegexPlacement.MARKDOWN_DISPLAY]
            if not placement:
                placement = [
                    RegexPlacement.USER_INPUT,
                    RegexPlacement.AI_OUTPUT,
                    RegexPlacement.SLASH_COMMAND,
                    RegexPlacement.WORLD_INFO,
                ]
            changes.update({"markdownOnly": True, "promptOnly": True})
        if RegexPlacement.SEND_AS in placement:
            placement = [p for p in placement if p != RegexPlacement.SEND_AS]
            if not placement:
                placement = [RegexPlacement.SLASH_COMMAND]
        if placement == list(self.placement) and not changes:
            return self
        return RegexScript.from_json(
            {**self.to_json(), **changes, "placement": [int(p) for p in placement]}
        )
