"""Writes the provider oracle inputs: one `providers/NAME/` folder per Text Completion type
and per Chat Completion source that SillyTavern 1.12.6 can send to a URL of one's own.

Every case is the same card and chat; only the connection differs, so a recorded body
shows what that provider's request carries. The cases are recorded by SillyTavern 1.12.6
with `capture_providers.py` (the capture harness plus the routes TabbyAPI, Ollama and a
HuggingFace endpoint answer) at the fixed stub URL `STUB` (see README.md); re-running
this file rewrites the inputs, never the recorded `expected.json`.

Types and sources 1.12.6 sends only to a fixed address (`NOT_LOCAL`) are not recorded:
the replay checks taverna's body for them against the provider's documented format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "providers"
# the stub the cases were recorded against (capture.py --stub-port 5571)
STUB = "http://127.0.0.1:5571"

# Text Completion types whose server URL a person sets (textgen-settings.js: every other
# type's `getTextGenServer` is a constant)
TEXT_TYPES = (
    "ooba",
    "vllm",
    "aphrodite",
    "tabby",
    "koboldcpp",
    "llamacpp",
    "ollama",
    "huggingface",
)
# models the types that name one send (textgen-settings.js: `<type>_model`)
TEXT_MODELS = {"vllm", "aphrodite", "tabby", "ollama"}

# Chat Completion sources that honour a reverse proxy (openai.js: only Claude, OpenAI,
# Mistral AI and Google AI Studio take `reverse_proxy`), and Custom with its own URL
CHAT_SOURCES = ("openai", "claude", "mistralai", "makersuite", "custom")

# What 1.12.6 can only send to the provider's own address, and why
NOT_LOCAL = {
    "togetherai": "TogetherAI's server is a constant (TOGETHERAI_SERVER)",
    "infermaticai": "InfermaticAI's server is a constant (INFERMATICAI_SERVER)",
    "dreamgen": "DreamGen's server is a constant (DREAMGEN_SERVER)",
    "openrouter-text": "OpenRouter's text server is a constant (OPENROUTER_SERVER)",
    "featherless": "Featherless's server is a constant (FEATHERLESS_SERVER)",
    "mancer": "Mancer's server is read from the browser's localStorage once, at page load",
    "openrouter": "Chat Completion's OpenRouter takes no reverse proxy",
    "groq": "Chat Completion's Groq takes no reverse proxy",
    "perplexity": "Chat Completion's Perplexity takes no reverse proxy",
    "cohere": "Chat Completion's Cohere takes no reverse proxy",
    "ai21": "Chat Completion's AI21 takes no reverse proxy",
    "01ai": "Chat Completion's 01.AI takes no reverse proxy",
}

CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Wren",
        "description": "{{char}} keeps the ferry log at Sallow Crossing.",
        "personality": "Dry, exact, kind to travellers.",
        "scenario": "Fog on the river; the last ferry waits.",
        "first_mes": 'Wren taps the ledger. "Name and destination."',
        "mes_example": "",
        "creator_notes": "",
        "system_prompt": "",
        "post_history_instructions": "",
        "alternate_greetings": [],
        "tags": [],
        "creator": "taverna",
        "character_version": "1",
        "extensions": {"talkativeness": "0.5", "fav": False, "world": ""},
    },
}

CHAT = [
    {
        "user_name": "User",
        "character_name": "Wren",
        "create_date": "2024-10-01@12h00m00s",
        "chat_metadata": {},
    },
    {
        "name": "Wren",
        "is_user": False,
        "is_system": False,
        "send_date": "October 1, 2024 12:00pm",
        "mes": CARD["data"]["first_mes"],
        "extra": {},
    },
    {
        "name": "User",
        "is_user": True,
        "is_system": False,
        "send_date": "October 1, 2024 12:01pm",
        "mes": "Tomas Reed, to the far bank. Is the ferry still running?",
        "extra": {},
    },
]


# samplers moved off the preset's values, and the reply streamed: the `_moved` cases
TEXT_MOVED = {
    "streaming": True,
    "temp": 0.8,
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "rep_pen": 1.15,
    "freq_pen": 0.2,
    "presence_pen": 0.1,
    "seed": 7,
}
CHAT_MOVED = {
    "stream_openai": False,
    "temp_openai": 0.7,
    "top_p_openai": 0.9,
    "top_k_openai": 30,
    "freq_pen_openai": 0.3,
    "pres_pen_openai": 0.2,
    "openai_max_tokens": 222,
    "seed": 7,
}


def text_patch(kind: str, moved: bool = False) -> dict[str, Any]:
    settings: dict[str, Any] = {"type": kind, "server_urls": {kind: STUB}}
    if moved:
        settings.update(TEXT_MOVED)
    if kind in TEXT_MODELS:
        settings[f"{kind}_model"] = "stub-model"
    return {"textgenerationwebui_settings": settings}


def chat_patch(source: str, moved: bool = False) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings of one Chat Completion source pointed at the stub, and its secrets."""
    proxy = {"name": "oracle-stub-provider", "url": f"{STUB}/v1", "password": "stub-key"}
    oai: dict[str, Any] = {"chat_completion_source": source, **(CHAT_MOVED if moved else {})}
    patch: dict[str, Any] = {"oai_settings": oai}
    secrets: dict[str, str] = {}
    if source == "custom":
        oai.update(custom_url=f"{STUB}/v1", custom_model="stub-model", reverse_proxy="")
        patch["selected_proxy"] = {"name": "None", "url": "", "password": ""}
    else:
        oai.update(reverse_proxy=proxy["url"], proxy_password=proxy["password"])
        patch["proxies"] = [{"name": "None", "url": "", "password": ""}, proxy]
        patch["selected_proxy"] = proxy
    if source == "makersuite":
        # 1.12.6 connects to Google AI Studio only when its key is saved, proxy or not
        secrets["api_key_makersuite"] = "stub-key"
    return patch, secrets


def write(folder: Path, name: str, data: Any) -> None:
    path = folder / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data))
    else:
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def case(name: str, spec: dict[str, Any], about: str) -> None:
    folder = HERE / name
    folder.mkdir(parents=True, exist_ok=True)
    write(folder, "Wren.json", CARD)
    write(folder, "chat.jsonl", CHAT)
    common = {
        "characters": [
            {"file": "Wren.json", "type": "json", "avatar": "Wren.png", "preserved_name": "Wren"}
        ],
        "chat": {"file": "chat.jsonl", "avatar": "Wren.png", "file_name": name},
    }
    write(folder, "case.json", {**common, **spec, "name": name})
    (folder / "case.md").write_text(about.strip() + "\n")


MOVED_ABOUT = " Samplers moved off the preset's values, the stream switched {}."


def main() -> None:
    for kind in TEXT_TYPES:
        for moved in (False, True):
            case(
                f"tc_{kind}" + ("_moved" if moved else ""),
                {"api": "tc", "provider": kind, "settings_patch": text_patch(kind, moved)},
                f"Text Completion, type `{kind}`, its server URL the stub: the body 1.12.6's "
                "server posts to it (ChatML instruct, the default text preset)."
                + (MOVED_ABOUT.format("on") if moved else ""),
            )
    for source in CHAT_SOURCES:
        for moved in (False, True):
            chat_case(source, moved)


def chat_case(source: str, moved: bool) -> None:
    patch, secrets = chat_patch(source, moved)
    spec: dict[str, Any] = {"api": "cc", "provider": source, "settings_patch": patch}
    if secrets:
        spec["secrets"] = secrets
    how = "its custom URL" if source == "custom" else "a reverse proxy"
    about = (
        f"Chat Completion, source `{source}`, sent to the stub through {how}: the body "
        "1.12.6's server posts to it (the Default preset)."
        + (MOVED_ABOUT.format("off") if moved else "")
    )
    if source == "mistralai":
        about += (
            " 1.12.6 asks api.mistral.ai for Mistral's status whatever the proxy, so "
            "`capture_providers.py` marks the page connected; the send goes to the proxy."
        )
    case(f"cc_{source}" + ("_moved" if moved else ""), spec, about)


if __name__ == "__main__":
    main()
    print(sorted(p.name for p in HERE.iterdir() if (p / "case.json").exists()))
