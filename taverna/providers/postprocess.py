"""Reshaping a message list for custom OpenAI-compatible endpoints: none, merge, semi, strict, single.

Many local and hosted servers reject what OpenAI accepts: several system messages,
a system message mid-chat, a conversation that starts with the assistant. These modes
rewrite the list as SillyTavern's prompt post-processing does (algo-providers.md §7.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taverna.providers.request import PostProcessing
from taverna.providers.wire import example_prefixed, text_of, with_text

# algo-providers.md §7.2: the text of an inserted user turn
PLACEHOLDER = "Let's get started."

WireMessage = dict[str, Any]
# a folded message's pictures, carried beside its text while messages merge
_PICTURES = "pictures"


@dataclass(frozen=True, slots=True)
class Names:
    """The names folded into message text: the persona, the character, other group members."""

    user: str = ""
    char: str = ""
    group: tuple[str, ...] = ()

    def starts_with_member(self, text: str) -> bool:
        """Whether the text already begins with some group member's `Name: `."""
        return any(text.startswith(f"{name}: ") for name in self.group)


def post_process(
    messages: Sequence[WireMessage],
    mode: PostProcessing,
    names: Names,
    *,
    keep_tools: bool = False,
) -> list[WireMessage]:
    """The messages reshaped by `mode`; the input is not changed.

    `keep_tools` keeps tool calls and results as such (SillyTavern's `*_tools` variants);
    without it a tool result becomes a user turn and calls are dropped.
    """
    copied = [dict(m) for m in messages]
    if mode is PostProcessing.NONE:
        return copied
    if mode is PostProcessing.CLAUDE:
        return _claude(copied, names)
    strict = mode in (PostProcessing.SEMI, PostProcessing.STRICT, PostProcessing.SINGLE)
    placeholders = mode is PostProcessing.STRICT
    single = mode is PostProcessing.SINGLE
    return _merge(
        copied,
        names,
        strict=strict,
        placeholders=placeholders,
        single=single,
        keep_tools=keep_tools and not single,
    )


def _claude(messages: list[WireMessage], names: Names) -> list[WireMessage]:
    """SillyTavern 1.12.6's `claude` post-processing (algo-providers.md §7.1): Claude's
    message conversion without a system prompt or prefill. System turns become user
    turns (an example's speaker named in front), every name left is put in front of its
    text (an example's too, so it reads `example_user: Alex: ...`), and neighbours of
    one role are joined by a blank line."""
    merged: list[WireMessage] = []
    for message in messages:
        if message.get("role") == "system":
            message["content"] = example_prefixed(
                message, names.user, names.char, only_if_missing=False
            )
            message["role"] = "user"
        name = message.pop("name", None)
        content = message.get("content") or ""
        if name:
            message["content"] = content = with_text(content, f"{name}: {text_of(content)}")
        if merged and merged[-1].get("role") == message.get("role"):
            previous = merged[-1]
            joined = f"{text_of(previous.get('content'))}\n\n{text_of(content)}"
            pictures = _picture_parts(previous.get("content")) + _picture_parts(content)
            previous["content"] = (
                [{"type": "text", "text": joined}, *pictures] if pictures else joined
            )
        else:
            merged.append(message)
    return merged


def _picture_parts(content: Any) -> list[Any]:
    """The non-text parts (pictures) of a part list."""
    if not isinstance(content, list):
        return []
    return [p for p in content if not (isinstance(p, dict) and p.get("type") == "text")]


def _with_prefix(text: str, name: str) -> str:
    """`Name: text` unless the text already starts so (or the name is empty)."""
    if not name or text.startswith(f"{name}: "):
        return text
    return f"{name}: {text}"


def _fold_names(message: WireMessage, names: Names, single: bool, keep_tools: bool) -> WireMessage:
    """Fold the message's speaker into its text and drop fields a merged list cannot keep."""
    text = message.get("content") or ""
    pictures = _picture_parts(text)
    if not isinstance(text, str):
        text = "\n\n".join(
            str(p.get("text") or "")
            for p in text
            if isinstance(p, dict) and p.get("type") == "text"
        )
    role = message.get("role", "user")
    name = message.get("name")
    if role == "system" and name == "example_assistant" and not names.starts_with_member(text):
        text = _with_prefix(text, names.char)
    if role == "system" and name == "example_user":
        text = _with_prefix(text, names.user)
    if name and role != "system":
        text = _with_prefix(text, name)
    if role == "tool" and not keep_tools:
        role = "user"
    if single:
        if role == "assistant" and not names.starts_with_member(text):
            text = _with_prefix(text, names.char)
        elif role == "user":
            text = _with_prefix(text, names.user)
        role = "user"
    folded: WireMessage = {"role": role, "content": text}
    if pictures:
        folded[_PICTURES] = pictures
    if keep_tools:
        for key in ("tool_calls", "tool_call_id"):
            if message.get(key):
                folded[key] = message[key]
    return folded


def _squash(messages: list[WireMessage]) -> list[WireMessage]:
    """Join each message onto the previous one when both have the same role.

    An empty message is kept as its own entry, as SillyTavern does (§7.2 step 2).
    """
    out: list[WireMessage] = []
    for message in messages:
        if (
            out
            and out[-1]["role"] == message["role"]
            and message["content"]
            and message["role"] != "tool"
            and not message.get("tool_calls")
            and not out[-1].get("tool_calls")
        ):
            joined = {**out[-1], "content": f"{out[-1]['content']}\n\n{message['content']}"}
            pictures = [*out[-1].get(_PICTURES, ()), *message.get(_PICTURES, ())]
            if pictures:
                joined[_PICTURES] = pictures
            out[-1] = joined
        else:
            out.append(message)
    return out


def _with_pictures(messages: list[WireMessage]) -> list[WireMessage]:
    """Each merged message's pictures back as parts after its text (newer SillyTavern
    keeps the pictures through merging; the text is merged as plain text)."""
    out = []
    for message in messages:
        pictures = message.pop(_PICTURES, None)
        if pictures:
            message = {
                **message,
                "content": [{"type": "text", "text": message["content"]}, *pictures],
            }
        out.append(message)
    return out


def _merge(
    messages: list[WireMessage],
    names: Names,
    *,
    strict: bool,
    placeholders: bool,
    single: bool,
    keep_tools: bool,
) -> list[WireMessage]:
    merged = _squash([_fold_names(m, names, single, keep_tools) for m in messages])
    if not merged:
        merged = [{"role": "user", "content": PLACEHOLDER}]
    if not strict:
        return _with_pictures(merged)
    for i in range(1, len(merged)):
        if merged[i]["role"] == "system":
            merged[i] = {**merged[i], "role": "user"}
    if placeholders:
        first = merged[0]["role"]
        if first == "system" and (len(merged) == 1 or merged[1]["role"] != "user"):
            merged.insert(1, {"role": "user", "content": PLACEHOLDER})
        elif first not in ("system", "user"):
            merged.insert(0, {"role": "user", "content": PLACEHOLDER})
    return _with_pictures(_squash(merged))
