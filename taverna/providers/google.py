"""Google Gemini (AI Studio `generateContent`): request body and stream reader."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from taverna.model.prompt import Prompt
from taverna.providers.events import (
    ErrorKind,
    Event,
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamError,
    TextDelta,
)
from taverna.providers.request import HttpRequest, RequestOptions, models_listing
from taverna.providers.sampling import Sampling
from taverna.providers.wire import (
    JsonChunkStream,
    image_urls,
    lift_leading_system,
    media_type_and_data,
    parse_json,
    text_of,
    to_wire,
    tool_call_fields,
)

DEFAULT_URL = "https://generativelanguage.googleapis.com/v1beta"

# algo-providers.md §4.7: SillyTavern turns every safety filter off
SAFETY_OFF = tuple(
    {"category": category, "threshold": "BLOCK_NONE"}
    for category in (
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
        "HARM_CATEGORY_CIVIC_INTEGRITY",
    )
)

_FINISH = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
}


def uses_system_instruction(options: RequestOptions) -> bool:
    """Whether leading system messages become `system_instruction` (default on).

    SillyTavern 1.12.6 limited this to the Gemini 1.5 models of its day; every Gemini
    model since accepts it, so only the older ones without it are left out.
    """
    if options.use_system_prompt is False:
        return False
    return not options.model.startswith(("gemini-1.0", "gemini-pro", "gemma"))


# prompt-converters.js (1.12.6): the Gemini models sent pictures, and those that need one
VISION_MODELS = frozenset(
    {
        "gemini-1.5-flash",
        "gemini-1.5-flash-latest",
        "gemini-1.5-flash-001",
        "gemini-1.5-flash-exp-0827",
        "gemini-1.5-flash-8b-exp-0827",
        "gemini-1.5-pro",
        "gemini-1.5-pro-latest",
        "gemini-1.5-pro-001",
        "gemini-1.5-pro-exp-0801",
        "gemini-1.5-pro-exp-0827",
        "gemini-1.0-pro-vision-latest",
        "gemini-pro-vision",
    }
)
PICTURE_REQUIRED_MODELS = frozenset({"gemini-1.0-pro-vision-latest", "gemini-pro-vision"})
# a transparent 1x1 PNG
PNG_PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def sees_images(model: str) -> bool:
    """Whether Gemini is sent pictures for this model (an exact name, as 1.12.6 checks)."""
    return model in VISION_MODELS


def convert_messages(
    prompt: Prompt, options: RequestOptions
) -> tuple[list[dict[str, Any]], str | None]:
    """Gemini `contents` and the system instruction text (None when not used)."""
    messages = to_wire(prompt.messages)
    system: str | None = None
    if uses_system_instruction(options):
        # algo-providers.md §4.2: at least one message stays in `contents`
        system = lift_leading_system(messages, options.user_name, options.char_name, keep=1)
    contents: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    has_picture = False
    for message in messages:
        role = {"system": "user", "assistant": "model", "tool": "user"}.get(
            message["role"], message["role"]
        )
        text = text_of(message.get("content"))
        if message.get("name") and message["role"] != "tool":
            text = f"{message['name']}: {text}"
        parts: list[dict[str, Any]]
        if message["role"] == "tool":
            parsed = parse_json(text)
            parts = [
                {
                    "functionResponse": {
                        "name": call_names.get(str(message.get("tool_call_id")), ""),
                        "response": parsed if isinstance(parsed, dict) else {"result": text},
                    }
                }
            ]
        elif message.get("tool_calls"):
            parts = [{"text": text}] if text else []
            for call in message["tool_calls"]:
                cid, fname, arguments = tool_call_fields(call)
                call_names[cid] = fname
                args = parse_json(arguments)
                parts.append(
                    {
                        "functionCall": {
                            "name": fname,
                            "args": args if isinstance(args, dict) else {},
                        }
                    }
                )
        else:
            parts = [{"text": text}]
            if sees_images(options.model):
                for url in image_urls(message.get("content")):
                    media_type, data = media_type_and_data(url)
                    parts.append({"inlineData": {"mimeType": media_type, "data": data}})
                    has_picture = True
        last = contents[-1] if contents else None
        if last and last["role"] == role:
            head_text = last["parts"][0].get("text") if last["parts"] else None
            if isinstance(head_text, str) and "text" in parts[0]:
                # algo-providers.md §4.5: only the first text part is merged
                last["parts"][0]["text"] = f"{head_text}\n\n{parts[0]['text']}"
            else:
                last["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    if contents and not has_picture and options.model in PICTURE_REQUIRED_MODELS:
        # prompt-converters.js: the old vision models refuse a request without a picture
        contents[0]["parts"].append({"inlineData": {"mimeType": "image/png", "data": PNG_PIXEL}})
    return contents, system


# Gemini refuses more than five stop sequences
MAX_STOP = 5


def stop_sequences(prompt: Prompt, options: RequestOptions) -> list[str]:
    """SillyTavern's Gemini stop list (algo-providers.md §4.8): the speaker's name line
    (`"\n{user}:"`, `"\n{char}:"` when impersonating), the preset's new-chat separator,
    then the custom stop strings up to Gemini's five. In SillyTavern's order and without
    removing repeats; an empty separator (which the API would refuse) is left out."""
    name = options.char_name if options.impersonate else options.user_name
    custom = MAX_STOP - 2
    separator = [prompt.new_chat_prompt] if prompt.new_chat_prompt else []
    return [f"\n{name}:", *separator, *prompt.stop[:custom]]


def build_body(prompt: Prompt, options: RequestOptions) -> dict[str, Any]:
    """The exact JSON body POSTed to `models/{model}:streamGenerateContent`."""
    sampling = Sampling.from_preset(prompt.sampling)
    contents, system = convert_messages(prompt, options)
    config: dict[str, Any] = {"stopSequences": stop_sequences(prompt, options), "candidateCount": 1}
    if sampling.max_tokens is not None:
        config["maxOutputTokens"] = sampling.max_tokens
    if sampling.temperature is not None:
        config["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        config["topP"] = sampling.top_p
    if sampling.top_k:  # algo-providers.md §4.7: omitted when 0
        config["topK"] = sampling.top_k
    if sampling.seed is not None and sampling.seed >= 0:
        config["seed"] = sampling.seed
    body: dict[str, Any] = {
        "contents": contents,
        "safetySettings": [dict(s) for s in SAFETY_OFF],
        "generationConfig": config,
    }
    if system is not None:
        body["system_instruction"] = {"parts": {"text": system}}
    if options.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
                    for t in options.tools
                ]
            }
        ]
        mode = "ANY" if options.tool_choice == "required" else "AUTO"
        body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    return body


def endpoint(base_url: str, options: RequestOptions) -> str:
    base = (base_url or DEFAULT_URL).rstrip("/")
    method = "streamGenerateContent?alt=sse" if options.stream else "generateContent"
    return f"{base}/models/{quote(options.model, safe='')}:{method}"


def auth_headers(key: str) -> dict[str, str]:
    # in a header, not the URL's `?key=`, so it never shows up in a logged URL
    return {"x-goog-api-key": key} if key else {}


def models_request(base_url: str, key: str) -> HttpRequest:
    """The GET request that lists Gemini's models."""
    return models_listing(base_url, DEFAULT_URL, auth_headers(key))


def parse_models(body: Mapping[str, Any]) -> list[str]:
    """The models that generate content, sorted, without their `models/` prefix."""
    names = []
    for model in body.get("models") or ():
        methods = model.get("supportedGenerationMethods") or ["generateContent"]
        if isinstance(model, dict) and "generateContent" in methods:
            names.append(str(model.get("name", "")).removeprefix("models/"))
    return sorted(n for n in names if n)


def preset_options(preset: Mapping[str, Any]) -> dict[str, Any]:
    """The request options a SillyTavern Chat Completion preset sets for Gemini."""
    if "use_makersuite_sysprompt" in preset:
        return {"use_system_prompt": bool(preset["use_makersuite_sysprompt"])}
    return {}


_ERRORS = {
    "UNAUTHENTICATED": ErrorKind.AUTH,
    "PERMISSION_DENIED": ErrorKind.AUTH,
    "NOT_FOUND": ErrorKind.NOT_FOUND,
    "RESOURCE_EXHAUSTED": ErrorKind.RATE_LIMITED,
    "INVALID_ARGUMENT": ErrorKind.BAD_REQUEST,
    "INTERNAL": ErrorKind.SERVER,
    "UNAVAILABLE": ErrorKind.SERVER,
}


def error_event(error: Any) -> StreamError:
    """A stream error from Google's `{"error": {code, message, status}}`."""
    status = str(error.get("status", "")) if isinstance(error, dict) else ""
    message = str(error.get("message", "")) if isinstance(error, dict) else str(error)
    kind = _ERRORS.get(status, ErrorKind.SERVER)
    if "token" in message.lower() and "exceed" in message.lower():
        kind = ErrorKind.CONTEXT_LENGTH
    return StreamError(kind, f"the model API reported an error: {message or status}")


class GenerateContentStream(JsonChunkStream):
    """Reads `GenerateContentResponse` chunks (`alt=sse`); each chunk carries text parts."""

    def _read_chunk(self, chunk: dict[str, Any]) -> list[Event]:
        if "error" in chunk:
            self.finished = True
            return [error_event(chunk["error"])]
        out: list[Event] = []
        usage = chunk.get("usageMetadata") or {}
        self._note_usage(
            usage.get("promptTokenCount"),
            usage.get("candidatesTokenCount"),
            cached=usage.get("cachedContentTokenCount"),
        )
        candidates = chunk.get("candidates") or []
        if not candidates:
            blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
            if blocked:
                self.finished = True
                return [StreamError(ErrorKind.BAD_REQUEST, f"the prompt was blocked: {blocked}")]
            return out
        candidate = candidates[0]
        for part in (candidate.get("content") or {}).get("parts") or ():
            if "functionCall" in part:
                call = part["functionCall"]
                parts = self._tool_parts(len(self._tools))
                parts.id = call.get("id") or f"call_{len(self._tools)}"
                parts.name = call.get("name", "")
                parts.arguments.append(json.dumps(call.get("args") or {}))
            elif isinstance(part.get("text"), str) and part["text"]:
                kind = ReasoningDelta if part.get("thought") else TextDelta
                out.append(kind(part["text"]))
        reason = candidate.get("finishReason")
        if reason:
            finish = _FINISH.get(reason, FinishReason.OTHER)
            if self._tools and finish is FinishReason.STOP:
                finish = FinishReason.TOOL_CALLS
            self._finish = Finish(finish, reason)
        return out
