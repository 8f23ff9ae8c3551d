"""Post-processing modes for custom OpenAI-compatible endpoints (algo-providers.md §7.2)."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers.builders import render_request_body
from taverna.providers.openai_chat import compatible_preset_options
from taverna.providers.postprocess import PLACEHOLDER, Names, post_process
from taverna.providers.request import PostProcessing

NAMES = Names(user="Alex", char="Aria", group=("Bram",))


def m(role: str, content: str, name: str | None = None) -> dict[str, object]:
    out: dict[str, object] = {"role": role, "content": content}
    if name:
        out["name"] = name
    return out


def test_none_keeps_everything_including_names() -> None:
    messages = [m("system", "A"), m("system", "Hi", "example_user"), m("user", "E")]
    assert post_process(messages, PostProcessing.NONE, NAMES) == messages


def test_merge_folds_names_and_joins_equal_neighbours() -> None:
    messages = [
        m("system", "A"),
        m("system", "Why?", "example_user"),
        m("system", "Because.", "example_assistant"),
        m("assistant", "Hello"),
        m("user", "Hi", "Alex"),
        m("user", "Alex: again", "Alex"),
    ]
    assert post_process(messages, PostProcessing.MERGE, NAMES) == [
        {"role": "system", "content": "A\n\nAlex: Why?\n\nAria: Because."},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Alex: Hi\n\nAlex: again"},
    ]


def test_merge_keeps_an_example_already_prefixed_by_a_group_member() -> None:
    out = post_process([m("system", "Bram: yes", "example_assistant")], PostProcessing.MERGE, NAMES)
    assert out == [{"role": "system", "content": "Bram: yes"}]


def test_empty_messages_survive_as_their_own_entries() -> None:
    messages = [m("user", "a"), m("user", ""), m("user", "b")]
    assert post_process(messages, PostProcessing.MERGE, NAMES) == [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "\n\nb"},
    ]


def test_strict_worked_example_from_the_spec() -> None:
    messages = [
        m("system", "A"),
        m("system", "B"),
        m("assistant", "C"),
        m("system", "D"),
        m("user", "E"),
    ]
    assert post_process(messages, PostProcessing.STRICT, NAMES) == [
        {"role": "system", "content": "A\n\nB"},
        {"role": "user", "content": PLACEHOLDER},
        {"role": "assistant", "content": "C"},
        {"role": "user", "content": "D\n\nE"},
    ]


def test_semi_moves_later_system_text_to_user_without_placeholders() -> None:
    messages = [
        m("system", "A"),
        m("system", "B"),
        m("assistant", "C"),
        m("system", "D"),
        m("user", "E"),
    ]
    assert post_process(messages, PostProcessing.SEMI, NAMES) == [
        {"role": "system", "content": "A\n\nB"},
        {"role": "assistant", "content": "C"},
        {"role": "user", "content": "D\n\nE"},
    ]


def test_strict_inserts_a_user_turn_before_a_leading_assistant() -> None:
    out = post_process([m("assistant", "Hi"), m("user", "Yo")], PostProcessing.STRICT, NAMES)
    assert out == [
        {"role": "user", "content": PLACEHOLDER},
        {"role": "assistant", "content": "Hi"},
        {"role": "user", "content": "Yo"},
    ]


def test_single_collapses_everything_into_one_user_message() -> None:
    messages = [
        m("system", "Rules"),
        m("assistant", "Hi"),
        m("user", "Yo"),
        m("assistant", "Bram: hey"),
    ]
    assert post_process(messages, PostProcessing.SINGLE, NAMES) == [
        {"role": "user", "content": "Rules\n\nAria: Hi\n\nAlex: Yo\n\nBram: hey"}
    ]


def test_empty_list_gets_the_placeholder() -> None:
    assert post_process([], PostProcessing.MERGE, NAMES) == [
        {"role": "user", "content": PLACEHOLDER}
    ]


def test_tool_results_become_user_turns_unless_tools_are_kept() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "roll", "arguments": "{}"}}
    messages = [m("user", "roll"), {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "content": "4", "tool_call_id": "c1"}]  # fmt: skip
    dropped = post_process(messages, PostProcessing.MERGE, NAMES)
    assert all("tool_calls" not in x and x["role"] != "tool" for x in dropped)
    kept = post_process(messages, PostProcessing.MERGE, NAMES, keep_tools=True)
    assert kept[1]["tool_calls"] == [call] and kept[2]["role"] == "tool"


def test_the_input_is_not_changed() -> None:
    messages = [m("system", "A"), m("system", "B", "example_user")]
    before = [dict(x) for x in messages]
    post_process(messages, PostProcessing.STRICT, NAMES)
    assert messages == before


def test_render_request_body_applies_the_mode_only_to_compatible_endpoints() -> None:
    prompt = Prompt(
        kind="chat", messages=(PromptMessage(Role.SYSTEM, "A"), PromptMessage(Role.SYSTEM, "B"))
    )
    compatible = render_request_body(
        prompt, "openai-compatible", post_processing="merge", model="x"
    )
    assert compatible["messages"] == [{"role": "system", "content": "A\n\nB"}]
    openai = render_request_body(prompt, "openai", post_processing="merge", model="x")
    assert len(openai["messages"]) == 2


roles = st.sampled_from(["system", "user", "assistant"])
message_lists = st.lists(
    st.builds(
        m,
        roles,
        st.text(alphabet="ab ", max_size=4),
        st.sampled_from([None, "example_user", "Alex"]),
    ),
    max_size=8,
)


@given(message_lists)
def test_strict_always_starts_with_optional_system_then_user(
    messages: list[dict[str, object]],
) -> None:
    out = post_process(messages, PostProcessing.STRICT, NAMES)
    rest = out[1:] if out[0]["role"] == "system" else out
    assert rest and rest[0]["role"] == "user"
    assert all(x["role"] != "system" for x in rest)
    assert all("name" not in x for x in out)


@given(message_lists)
def test_single_always_gives_one_user_message(messages: list[dict[str, object]]) -> None:
    out = post_process(messages, PostProcessing.SINGLE, NAMES)
    assert [x["role"] for x in out] == ["user"] * len(out)
    non_empty = [x for x in messages if x["content"]]
    if len(non_empty) == len(messages):
        assert len(out) == 1


@given(message_lists)
def test_merge_keeps_all_text(messages: list[dict[str, object]]) -> None:
    out = post_process(messages, PostProcessing.MERGE, NAMES)
    joined = "\n\n".join(str(x["content"]) for x in out)
    for x in messages:
        assert str(x["content"]) in joined


def test_claude_mode_is_sillytaverns_claude_conversion() -> None:
    """algo-providers.md §7.1: 1.12.6's `claude` post-processing turns every system message
    into a user one (examples get their speaker in front), puts each name left in front
    of its text (so an example reads `example_user: Alex: ...`) and joins neighbours of
    one role with a blank line; no system prompt is kept."""
    messages = [
        m("system", "Main"),
        m("system", "[Example Chat]"),
        m("system", "Hi", "example_user"),
        m("system", "Hello", "example_assistant"),
        m("assistant", "Greetings."),
        m("user", "Yo", "Alex"),
        m("user", "Again"),
    ]
    assert post_process(messages, PostProcessing.CLAUDE, NAMES) == [
        {
            "role": "user",
            "content": "Main\n\n[Example Chat]\n\nexample_user: Alex: Hi"
            "\n\nexample_assistant: Aria: Hello",
        },
        {"role": "assistant", "content": "Greetings."},
        {"role": "user", "content": "Alex: Yo\n\nAgain"},
    ]
    assert messages[0] == m("system", "Main")  # the input is not changed


def test_a_presets_claude_mode_reaches_the_request() -> None:
    prompt = Prompt(
        kind="chat",
        messages=(
            PromptMessage(Role.SYSTEM, "Main"),
            PromptMessage(Role.SYSTEM, "Hi", name="example_user"),
            PromptMessage(Role.USER, "Go"),
        ),
    )
    body = render_request_body(
        prompt, "openai-compatible", post_processing="claude", model="x", user_name="Alex"
    )
    assert body["messages"] == [{"role": "user", "content": "Main\n\nexample_user: Alex: Hi\n\nGo"}]
    assert PostProcessing.parse("Claude") is PostProcessing.CLAUDE
    assert compatible_preset_options({"custom_prompt_post_processing": "claude"}) == {
        "post_processing": PostProcessing.CLAUDE
    }
    for mode in ("", "merge", "semi", "strict", "single"):
        assert PostProcessing.parse(mode).value == (mode or "none")


@given(message_lists)
def test_claude_leaves_no_system_turn_nor_name(messages: list[dict[str, object]]) -> None:
    out = post_process(messages, PostProcessing.CLAUDE, NAMES)
    assert all(x["role"] != "system" and "name" not in x for x in out)
    assert all(a["role"] != b["role"] for a, b in pairwise(out))
