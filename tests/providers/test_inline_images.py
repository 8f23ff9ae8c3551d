"""Pictures sent with messages (SillyTavern's inline images), from assembly to each API's body."""

from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path
from typing import Any

from PIL import Image

from taverna.engine.assembly.images import image_tokens
from taverna.model.prompt import Prompt, PromptImage, PromptMessage, Role
from taverna.providers.builders import render_request_body
from taverna.providers.postprocess import Names, post_process
from taverna.providers.request import PostProcessing
from taverna.providers.vision import sends_pictures
from taverna.providers.wire import to_wire
from tests.engine.assembly.helpers import build, context, msg
from tests.providers.test_provider_prompt_cli import run


def png(width: int = 4, height: int = 3) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


PICTURE = PromptImage(png(), 4, 3, "low")


def pictured_chat() -> tuple[Any, ...]:
    return (
        msg(0, "character", "Hi, I am Seraphina."),
        msg(1, "user", "Look at this.", image=PICTURE),
    )


def test_inlining_on_sends_the_picture_after_the_text() -> None:
    ctx = context(messages=pictured_chat(), inline_images=True, cc={"image_inlining": True})
    prompt = build(ctx)
    last = prompt.messages[-1]
    assert last.content == "Look at this." and last.images == (PICTURE,)
    wire = to_wire([last])[0]
    assert wire["content"] == [
        {"type": "text", "text": "Look at this."},
        {"type": "image_url", "image_url": {"url": PICTURE.data_url, "detail": "low"}},
    ]
    plain = build(context(messages=pictured_chat()))
    with_picture = next(i for i in prompt.ledger.items if i.source == "1")
    text_only = next(i for i in plain.ledger.items if i.source == "1")
    assert with_picture.tokens == text_only.tokens + 85


def test_inlining_off_sends_text_only() -> None:
    prompt = build(context(messages=pictured_chat()))
    assert prompt.messages[-1].images == ()
    assert to_wire([prompt.messages[-1]])[0]["content"] == "Look at this."


def test_the_picture_costs_its_tokens_in_the_budget() -> None:
    without = build(context(messages=pictured_chat()))
    with_picture = build(
        context(messages=pictured_chat(), inline_images=True, cc={"image_inlining": True})
    )
    assert with_picture.ledger.total_tokens - without.ledger.total_tokens == 85


def test_the_quality_setting_is_the_detail_sent() -> None:
    ctx = context(
        messages=pictured_chat(),
        inline_images=True,
        cc={"image_inlining": True, "inline_image_quality": "high"},
    )
    assert build(ctx).messages[-1].images[0].detail == "high"


def test_image_token_costs_follow_openai_tiles() -> None:
    assert image_tokens(PromptImage("", 1024, 1024, "low")) == 85
    assert image_tokens(PromptImage("", 400, 300, "auto")) == 85
    # 1024x1024 -> 2048x2048 -> 768x768: 4 tiles
    assert image_tokens(PromptImage("", 1024, 1024, "high")) == 4 * 170 + 85
    # 2048x4096 -> 768x1536: 2x3 tiles
    assert image_tokens(PromptImage("", 2048, 4096, "auto")) == 6 * 170 + 85
    assert image_tokens(PromptImage("", 0, 0, "high")) == 85  # size unknown


def test_which_sources_and_models_see_pictures() -> None:
    assert sends_pictures("openai", "gpt-4o-2024-08-06")
    assert not sends_pictures("openai", "gpt-4-turbo-preview")
    assert not sends_pictures("openai", "gpt-3.5-turbo")
    assert sends_pictures("claude", "claude-3-5-sonnet-20240620")
    assert not sends_pictures("claude", "claude-2.1")
    assert sends_pictures("makersuite", "gemini-1.5-pro")
    assert sends_pictures("custom", "anything")
    assert sends_pictures("openrouter", "x") and not sends_pictures(
        "openrouter", "x", openrouter_force_instruct=True
    )
    assert not sends_pictures(None, "gpt-4o")  # Text Completion
    assert not sends_pictures("cohere", "command-r-plus")


def prompt_of(*messages: PromptMessage) -> Prompt:
    return Prompt(kind="chat", messages=messages)


def test_claude_sends_a_base64_image_block_and_merges_like_sillytavern() -> None:
    other = PromptImage(png(2, 2), 2, 2)
    prompt = prompt_of(
        PromptMessage(Role.SYSTEM, "Main."),
        PromptMessage(Role.USER, "First.", images=(PICTURE,)),
        PromptMessage(Role.USER, "Second."),
        PromptMessage(Role.ASSISTANT, "Reply."),
        PromptMessage(Role.USER, "Third.", images=(PICTURE,)),
        PromptMessage(Role.USER, "Fourth.", images=(other,)),
    )
    body = render_request_body(prompt, "claude", model="claude-3-5-sonnet-20240620")
    messages = body["messages"]
    block = {"type": "base64", "media_type": "image/png", "data": PICTURE.base64}
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Main.\n\nFirst.\n\nSecond."},
            {"type": "image", "source": block},
        ],
    }
    # two pictured messages in one turn: the later picture is the one kept (1.12.6)
    assert messages[2]["content"] == [
        {"type": "text", "text": "Third.\n\nFourth."},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": other.base64},
        },
    ]


def test_gemini_sends_inline_data_only_to_vision_models() -> None:
    prompt = prompt_of(
        PromptMessage(Role.USER, "Hi."),
        PromptMessage(Role.ASSISTANT, "Hello."),
        PromptMessage(Role.USER, "See.", images=(PICTURE,)),
    )
    seeing = render_request_body(prompt, "google", model="gemini-1.5-pro")
    assert seeing["contents"][-1]["parts"] == [
        {"text": "See."},
        {"inlineData": {"mimeType": "image/png", "data": PICTURE.base64}},
    ]
    blind = render_request_body(prompt, "google", model="gemini-1.0-pro")
    assert blind["contents"][-1]["parts"] == [{"text": "See."}]


def test_gemini_old_vision_models_get_a_pixel_when_no_picture_is_sent() -> None:
    prompt = prompt_of(PromptMessage(Role.USER, "Hi."))
    body = render_request_body(prompt, "google", model="gemini-pro-vision")
    assert body["contents"][0]["parts"][1]["inlineData"]["mimeType"] == "image/png"


def test_openai_body_carries_content_parts() -> None:
    prompt = prompt_of(PromptMessage(Role.USER, "See.", name="Alex", images=(PICTURE,)))
    body = render_request_body(prompt, "openai", model="gpt-4o")
    assert body["messages"][0]["content"][1]["type"] == "image_url"
    assert body["messages"][0]["name"] == "Alex"


def test_merging_modes_keep_pictures_after_the_merged_text() -> None:
    messages = to_wire(
        [
            PromptMessage(Role.USER, "a", images=(PICTURE,)),
            PromptMessage(Role.USER, "b"),
            PromptMessage(Role.ASSISTANT, "c"),
        ]
    )
    for mode in (PostProcessing.MERGE, PostProcessing.SEMI, PostProcessing.STRICT):
        out = post_process(messages, mode, Names("Alex", "Aria"))
        assert out[0]["content"] == [
            {"type": "text", "text": "a\n\nb"},
            {"type": "image_url", "image_url": {"url": PICTURE.data_url, "detail": "low"}},
        ], mode
        assert out[1] == {"role": "assistant", "content": "c"}


def test_claude_post_processing_names_the_text_of_a_pictured_message() -> None:
    messages = to_wire([PromptMessage(Role.USER, "a", name="Alex", images=(PICTURE,))])
    out = post_process(messages, PostProcessing.CLAUDE, Names("Alex", "Aria"))
    assert out[0]["content"][0] == {"type": "text", "text": "Alex: a"}
    assert out[0]["content"][1]["type"] == "image_url"


def pictured_case(oracle_cases: Path, tmp_path: Path, url: str, *, inlining: bool) -> Path:
    """Case 01 with inline images set as asked and a last user message carrying `url`."""
    case = tmp_path / "case"
    shutil.copytree(oracle_cases / "01_seraphina_basic", case)
    settings = json.loads((case / "settings.json").read_text())
    settings["oai_settings"]["image_inlining"] = inlining
    (case / "settings.json").write_text(json.dumps(settings))
    line = {
        "name": "User",
        "is_user": True,
        "is_system": False,
        "send_date": "January 1, 2024 12:01pm",
        "mes": "What is this?",
        "extra": {"image": url, "inline_image": True},
    }
    with (case / "chat.jsonl").open("a") as chat:
        chat.write("\n" + json.dumps(line))
    return case


def test_prompt_command_sends_a_chat_file_picture(oracle_cases: Path, tmp_path: Path) -> None:
    case = pictured_case(oracle_cases, tmp_path, PICTURE.data_url, inlining=True)
    last = run(case, "--api", "openai")["messages"][-1]  # type: ignore[index]
    assert last["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": PICTURE.data_url, "detail": "low"}},
    ]


def test_prompt_command_reads_a_picture_path_beside_the_chat(
    oracle_cases: Path, tmp_path: Path
) -> None:
    case = pictured_case(oracle_cases, tmp_path, "/user/images/Seraphina/1.png", inlining=True)
    (case / "user" / "images" / "Seraphina").mkdir(parents=True)
    raw = base64.b64decode(PICTURE.base64)
    (case / "user" / "images" / "Seraphina" / "1.png").write_bytes(raw)
    claude = run(case, "--api", "anthropic")["messages"][-1]  # type: ignore[index]
    assert claude["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PICTURE.base64},
    }


def test_prompt_command_leaves_pictures_out_when_inlining_is_off(
    oracle_cases: Path, tmp_path: Path
) -> None:
    case = pictured_case(oracle_cases, tmp_path, PICTURE.data_url, inlining=False)
    assert run(case, "--api", "openai")["messages"][-1]["content"] == "What is this?"  # type: ignore[index]


def test_a_picture_outside_the_chat_folder_is_never_read(
    oracle_cases: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.png"
    outside.write_bytes(base64.b64decode(PICTURE.base64))
    case = pictured_case(oracle_cases, tmp_path, "../secret.png", inlining=True)
    assert run(case, "--api", "openai")["messages"][-1]["content"] == "What is this?"  # type: ignore[index]
