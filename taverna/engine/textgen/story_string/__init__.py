"""The context template's story string: a Handlebars template rendered without escaping.

SillyTavern compiles the story string with the Handlebars library (no HTML
escaping), then runs the macro engine over the result (algo-prompt-assembly.md
§6.2, formats-presets.md §3.1). This module is a re-implementation of the part of
Handlebars a story string can use: `{{x}}`, `{{{x}}}`, `{{#if}}`, `{{#unless}}`,
`{{else}}` (and `{{else if}}`), `{{#each}}`, `{{#with}}`, comments, `~` whitespace
control and Handlebars' "standalone line" rule, which drops a line that holds only a
block tag. A name the template does not define (`{{original}}`, `{{random::a::b}}`)
is handed to the macro engine, as SillyTavern's `helperMissing` does; `{{trim}}`
stays in the text for the macro pass.

The template is parsed once into a tree (`parse_story_string`, cacheable) and then
rendered with the turn's values; nothing in it runs code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from taverna.engine.textgen.story_string.parsing import parse
from taverna.engine.textgen.story_string.rendering import Frame, MacroHook, render_program
from taverna.engine.textgen.story_string.tree import Program

__all__ = ["MacroHook", "StoryTemplate", "parse_story_string", "render_story_template"]


@dataclass(frozen=True, slots=True)
class StoryTemplate:
    """A parsed story string, ready to render with the turn's values."""

    source: str
    _program: Program = field(repr=False, compare=False)

    def render(self, values: Mapping[str, Any], missing: MacroHook | None = None) -> str:
        """The template's text for these values.

        `missing` resolves a name the values do not define; it gets `{{name}}` and
        returns its text (SillyTavern passes it to the macro engine). Without it the
        tag is left as written.
        """
        hook = missing if missing is not None else (lambda text: text)
        out: list[str] = []
        render_program(self._program, Frame(values, None, {}), hook, out)
        return "".join(out)


@lru_cache(maxsize=64)
def parse_story_string(template: str) -> StoryTemplate:
    """The parsed story string; raises `FormatError` (field `story_string`) if malformed."""
    return StoryTemplate(template, parse(template))


def render_story_template(
    template: str, values: Mapping[str, Any], missing: MacroHook | None = None
) -> str:
    """Parse (cached) and render a story string in one step."""
    return parse_story_string(template).render(values, missing)
