"""The Text Completion prompt in a model's own Hugging Face chat template."""

from __future__ import annotations

from taverna.engine.assembly.context import AssemblyContext
from taverna.engine.assembly.turn import Turn, turn_state
from taverna.engine.textgen.chat_template import ChatTemplate, ChatTemplateError
from taverna.engine.textgen.history import Entry, as_item
from taverna.engine.textgen.steps import CountText, TextSteps
from taverna.engine.textgen.stop import stopping_strings
from taverna.model.injection import ExtensionPosition
from taverna.model.persona import PersonaPosition
from taverna.model.prompt import Ledger, Prompt

_CUT = "\u0000taverna-continue\u0000"


def build_with_chat_template(
    context: AssemblyContext, turn: Turn, count_text: CountText, template: ChatTemplate
) -> Prompt:
    """The Text Completion prompt in a model's own Hugging Face chat template.

    The story string (with the anchors and example dialogue) is the system
    message; the history, with the in-chat injections at their depths, follows in
    chat roles; as much history as fits is kept, newest first, without holes. On
    continue the last message is left open (no end-of-turn after it).
    """
    steps = TextSteps(context, turn, count_text)
    steps.instruct_on = False
    budget = turn.prompt_budget
    padding = steps.power.token_padding
    moved = context.layout.lore_after_chat
    if moved:
        # Beyond SillyTavern: anchors and lorebook text follow the newest message
        steps.move_volatile(
            steps.anchor(ExtensionPosition.BEFORE_PROMPT),
            steps.anchor(ExtensionPosition.IN_PROMPT),
        )
    items = steps.core_items()
    steps.inject(items)
    system_text = _system_text(steps, moved)
    system = [{"role": "system", "content": system_text}] if system_text else []
    history = [{"role": _chat_role(item), "content": _content(steps, item)} for item in items]

    def render(start: int) -> str:
        return _render(steps, template, system, history[start:])

    # The rendered cost only grows with more history: find the oldest start that fits.
    low, high = 0, len(history)
    while low < high:
        middle = (low + high) // 2
        if steps.tokens(render(middle), padding) < budget:
            high = middle
        else:
            low = middle + 1
    text = render(low)
    _account(steps, system_text, items, history, low)
    return Prompt(
        kind="text",
        text=text,
        stop=_stop(steps, template),
        sampling=steps.sampling(),
        ledger=Ledger(
            items=steps.ledger.accounted(text, padding, pieces=False),
            total_tokens=steps.tokens(text, padding),
            budget=budget,
            trace=tuple(turn.world.trace),
            history_stopped=low > 0,
            scanned_books=turn.world.books,
        ),
        state=turn_state(turn),
    )


def _system_text(steps: TextSteps, moved: bool) -> str:
    """The system message: the story string between the anchors, then the examples
    (`moved`: the anchors and the lorebook's text are placed after the chat instead)."""
    turn = steps.turn
    fields = turn.fields
    world_before = "" if moved else turn.world.before
    world_after = "" if moved else turn.world.after
    in_prompt = (PersonaPosition.IN_PROMPT, PersonaPosition.AFTER_CHAR)
    values = {
        "description": fields.description,
        "personality": fields.personality,
        "persona": fields.persona if steps.context.persona.position in in_prompt else "",
        "scenario": fields.scenario,
        "system": steps.system_prompt(),
        "char": steps.char,
        "user": steps.user,
        "wiBefore": world_before,
        "wiAfter": world_after,
        "loreBefore": world_before,
        "loreAfter": world_after,
        "mesExamples": "".join(turn.example_blocks),
        "mesExamplesRaw": "".join(turn.example_blocks),
    }
    story = steps.story_string(values)
    examples = "" if steps.power.strip_examples else "".join(turn.example_blocks)
    before = "" if moved else steps.anchor(ExtensionPosition.BEFORE_PROMPT).lstrip()
    after = "" if moved else steps.anchor(ExtensionPosition.IN_PROMPT)
    return (before + story + after + examples).strip()


def _content(steps: TextSteps, entry: Entry) -> str:
    """A history message's text, after its speaker's name where a group (or a message
    shown under another avatar) needs it."""
    item = as_item(entry)
    others = item.name != steps.user and (steps.context.is_group or bool(item.forced_avatar))
    named = bool(item.name) and not item.is_narrator and others
    return f"{item.name}: {item.text}" if named else item.text


def _render(
    steps: TextSteps,
    template: ChatTemplate,
    system: list[dict[str, str]],
    history: list[dict[str, str]],
) -> str:
    """The system message and this part of the history in the template, ending as the
    turn needs: open for a continue, on the person's turn for an impersonate, else on
    the model's turn."""
    kept = [dict(m) for m in history]
    if steps.is_continue and kept:
        kept[-1]["content"] += _CUT
        text = template.render_adapted(system + kept, add_generation_prompt=False)
        return text[: text.find(_CUT)] if _CUT in text else text
    if steps.is_impersonate:
        return _opened_user_turn(template, system + kept)
    return template.render_adapted(system + kept, add_generation_prompt=True)


def _account(
    steps: TextSteps,
    system_text: str,
    items: list[Entry],
    history: list[dict[str, str]],
    kept_from: int,
) -> None:
    """The ledger's lines: the system message, then every history message, kept or cut."""
    if system_text:
        steps.ledger.add(
            "story_string",
            "",
            system_text,
            steps.tokens(system_text),
            source_code="system_message",
        )
    for index, item in enumerate(items):
        kept = index >= kept_from
        steps.ledger.add_entry(
            item,
            history[index]["content"],
            steps.tokens(history[index]["content"]),
            included=kept,
            code="" if kept else "context_full",
        )


def _stop(steps: TextSteps, template: ChatTemplate) -> tuple[str, ...]:
    """The stopping strings, with the template's end-of-sequence token."""
    stop = stopping_strings(
        user=steps.user,
        char=steps.char,
        context=steps.settings.context,
        power_user=steps.power,
        instruct=None,
        macros=steps.macros,
        impersonate=steps.is_impersonate,
    )
    if template.eos_token and template.eos_token not in stop:
        stop.append(template.eos_token)
    return tuple(stop)


def _chat_role(entry: Entry) -> str:
    if as_item(entry).is_narrator:
        return "system"
    return "user" if entry.is_user else "assistant"


def _opened_user_turn(template: ChatTemplate, messages: list[dict[str, str]]) -> str:
    """The messages rendered, then the person's next turn opened: the model writes as them
    (impersonate). The header is what the template puts before a user message's text; a
    template that cannot end on a user turn gets the messages alone."""
    base = template.render_adapted(messages, add_generation_prompt=False)
    try:
        opened = template.render_adapted(
            [*messages, {"role": "user", "content": _CUT}], add_generation_prompt=False
        )
    except ChatTemplateError:
        return base
    if _CUT not in opened or not opened.startswith(base):
        return base
    return opened[: opened.find(_CUT)]
