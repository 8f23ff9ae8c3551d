"""Request checks against each provider's documented request schema.

Each checker returns a list of problems (empty when the body is valid). The stub
servers answer a bad body with the provider's own 400 error, naming the problems, and
record them so a test can assert that none occurred.
"""

from __future__ import annotations

from typing import Any

Problems = list[str]

OPENAI_CHAT_KEYS = {
    "messages", "model", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
    "max_tokens", "max_completion_tokens", "n", "presence_penalty", "response_format",
    "seed", "stop", "stream", "stream_options", "temperature", "top_p", "tools",
    "tool_choice", "parallel_tool_calls", "user", "reasoning_effort", "metadata", "store",
}  # fmt: skip
# extra samplers that OpenAI-compatible servers (vLLM, llama.cpp, TabbyAPI, OpenRouter) accept
COMPATIBLE_EXTRA_KEYS = {"top_k", "min_p", "top_a", "repetition_penalty"}


def _number(body: dict[str, Any], key: str, low: float, high: float, problems: Problems) -> None:
    if key not in body:
        return
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.append(f"{key} must be a number")
    elif not low <= value <= high:
        problems.append(f"{key} must be in [{low}, {high}], got {value}")


def _integer(body: dict[str, Any], key: str, low: int, problems: Problems) -> None:
    if key not in body:
        return
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(f"{key} must be an integer")
    elif value < low:
        problems.append(f"{key} must be >= {low}")


def _strings(value: Any, key: str, problems: Problems, limit: int | None = None) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{key} must be a list of strings")
    elif limit is not None and len(value) > limit:
        problems.append(f"{key} takes at most {limit} items, got {len(value)}")


def check_openai_chat(body: Any, *, compatible: bool) -> Problems:
    """OpenAI `POST /v1/chat/completions` (Chat Completions API reference)."""
    problems: Problems = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    allowed = OPENAI_CHAT_KEYS | (COMPATIBLE_EXTRA_KEYS if compatible else set())
    problems += [f"unknown field {k!r}" for k in body if k not in allowed]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model is required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages must be a non-empty list"]
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"messages[{i}].role {role!r} is not valid")
            continue
        content = m.get("content")
        if not isinstance(content, str | list) and not (
            role == "assistant" and m.get("tool_calls")
        ):
            problems.append(f"messages[{i}].content must be a string or parts")
        if role == "tool" and not isinstance(m.get("tool_call_id"), str):
            problems.append(f"messages[{i}].tool_call_id is required for a tool message")
        for call in m.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call, dict) else None
            if call.get("type") != "function" or not isinstance(fn, dict):
                problems.append(f"messages[{i}].tool_calls must be function calls")
            elif not isinstance(fn.get("name"), str) or not isinstance(fn.get("arguments"), str):
                problems.append(f"messages[{i}].tool_calls need name and arguments (a string)")
        extra = set(m) - {"role", "content", "name", "tool_calls", "tool_call_id"}
        if extra:
            problems.append(f"messages[{i}] has unknown fields {sorted(extra)}")
    _number(body, "temperature", 0, 2, problems)
    _number(body, "top_p", 0, 1, problems)
    _number(body, "presence_penalty", -2, 2, problems)
    _number(body, "frequency_penalty", -2, 2, problems)
    _integer(body, "max_tokens", 1, problems)
    _integer(body, "n", 1, problems)
    if "stop" in body and not isinstance(body["stop"], str):
        _strings(body["stop"], "stop", problems, limit=4)
    if "stream" in body and not isinstance(body["stream"], bool):
        problems.append("stream must be a boolean")
    if "stream_options" in body and not body.get("stream"):
        problems.append("stream_options is only allowed when stream is true")
    for tool in body.get("tools") or ():
        if tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            problems.append("tools must be {type: function, function: {...}}")
    return problems


MISTRAL_CHAT_KEYS = {
    "model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop",
    "random_seed", "response_format", "tools", "tool_choice", "presence_penalty",
    "frequency_penalty", "n", "prediction", "parallel_tool_calls", "safe_prompt",
}  # fmt: skip
MISTRAL_MESSAGE_KEYS = {
    "system": {"role", "content"},
    "user": {"role", "content"},
    "assistant": {"role", "content", "tool_calls", "prefix"},
    "tool": {"role", "content", "tool_call_id", "name"},
}


def check_mistral_chat(body: Any) -> Problems:
    """Mistral `POST /v1/chat/completions` (La Plateforme API reference).

    Unlike OpenAI's it refuses fields it does not know (`seed`, `logit_bias`, a
    message's `name`), takes `any` for a required tool call, and serves only a
    conversation ending in a user or tool message, or in an assistant message
    marked `prefix` (which only the last message may be).
    """
    problems: Problems = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    problems += [
        f"Extra inputs are not permitted: {k!r}" for k in body if k not in MISTRAL_CHAT_KEYS
    ]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model is required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages must be a non-empty list"]
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in MISTRAL_MESSAGE_KEYS:
            problems.append(f"messages[{i}].role {role!r} is not valid")
            continue
        extra = set(m) - MISTRAL_MESSAGE_KEYS[role]
        if extra:
            problems.append(f"messages[{i}]: Extra inputs are not permitted: {sorted(extra)}")
        if not isinstance(m.get("content"), str | list) and not m.get("tool_calls"):
            problems.append(f"messages[{i}].content must be a string or chunks")
        if m.get("prefix") and i != len(messages) - 1:
            problems.append(f"messages[{i}]: only the last message may be a prefix")
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    if not (
        last.get("role") in ("user", "tool")
        or (last.get("role") == "assistant" and last.get("prefix") is True)
    ):
        problems.append(
            "Expected last role User or Tool (or Assistant with prefix True) for serving"
            f" but got {last.get('role')}"
        )
    _number(body, "temperature", 0, float("inf"), problems)
    _number(body, "top_p", 0, 1, problems)
    _integer(body, "max_tokens", 0, problems)
    _integer(body, "random_seed", 0, problems)
    if "safe_prompt" in body and not isinstance(body["safe_prompt"], bool):
        problems.append("safe_prompt must be a boolean")
    if "stream" in body and not isinstance(body["stream"], bool):
        problems.append("stream must be a boolean")
    if "tool_choice" in body and body["tool_choice"] not in ("auto", "none", "any", "required"):
        problems.append("tool_choice must be auto, none, any or required")
    for tool in body.get("tools") or ():
        if tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            problems.append("tools must be {type: function, function: {...}}")
    return problems


def check_openai_completions(body: Any) -> Problems:
    """OpenAI `POST /v1/completions` (legacy Completions API)."""
    problems: Problems = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    allowed = {
        "model", "prompt", "max_tokens", "temperature", "top_p", "n", "stream", "stop",
        "presence_penalty", "frequency_penalty", "seed", "logit_bias", "echo", "suffix",
        "best_of", "logprobs", "user", *COMPATIBLE_EXTRA_KEYS,
    }  # fmt: skip
    problems += [f"unknown field {k!r}" for k in body if k not in allowed]
    if not isinstance(body.get("model"), str):
        problems.append("model is required")
    if not isinstance(body.get("prompt"), str):
        problems.append("prompt must be a string")
    if "stop" in body:
        _strings(body["stop"], "stop", problems, limit=4)
    _number(body, "temperature", 0, 2, problems)
    _integer(body, "max_tokens", 1, problems)
    return problems


ANTHROPIC_KEYS = {
    "model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature",
    "top_p", "top_k", "tools", "tool_choice", "metadata", "thinking",
}  # fmt: skip


def check_anthropic(body: Any) -> Problems:
    """Anthropic `POST /v1/messages` (Messages API reference)."""
    problems: Problems = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    problems += [f"unknown field {k!r}" for k in body if k not in ANTHROPIC_KEYS]
    if not isinstance(body.get("model"), str) or not body["model"]:
        problems.append("model: Field required")
    if not isinstance(body.get("max_tokens"), int):
        problems.append("max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return [*problems, "messages: at least one message is required"]
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            problems.append(f"messages.{i}.role: Input should be 'user' or 'assistant'")
            continue
        if set(m) - {"role", "content"}:
            problems.append(f"messages.{i}: Extra inputs are not permitted")
        content = m.get("content")
        if isinstance(content, str):
            # an empty text is refused, except in a final assistant prefill
            if not content and not (i == len(messages) - 1 and m["role"] == "assistant"):
                problems.append(f"messages.{i}: text content blocks must be non-empty")
        elif isinstance(content, list):
            for block in content:
                kind = block.get("type") if isinstance(block, dict) else None
                if kind not in ("text", "image", "tool_use", "tool_result", "thinking"):
                    problems.append(f"messages.{i}.content: unknown block type {kind!r}")
                if kind == "tool_use" and m["role"] != "assistant":
                    problems.append(f"messages.{i}: tool_use blocks belong to the assistant")
                if kind == "tool_result" and m["role"] != "user":
                    problems.append(f"messages.{i}: tool_result blocks belong to the user")
        else:
            problems.append(f"messages.{i}.content must be a string or a list of blocks")
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    final_text = last.get("content") if last.get("role") == "assistant" else None
    if isinstance(final_text, str) and final_text != final_text.rstrip():
        problems.append("final assistant content cannot end with trailing whitespace")
    if (
        last.get("role") == "assistant"
        and body.get("tools")
        and isinstance(last.get("content"), str)
    ):
        problems.append("a final assistant prefill is not allowed together with tools")
    if "system" in body and not isinstance(body["system"], str | list):
        problems.append("system must be a string or text blocks")
    for block in body.get("system") if isinstance(body.get("system"), list) else ():
        if not isinstance(block, dict) or block.get("type") != "text" or not block.get("text"):
            problems.append("system: blocks must be non-empty text blocks")
    problems += _cache_breakpoint_problems(body)
    if "stop_sequences" in body:
        _strings(body["stop_sequences"], "stop_sequences", problems)
    _number(body, "temperature", 0, 1, problems)
    _number(body, "top_p", 0, 1, problems)
    _integer(body, "top_k", 0, problems)
    for tool in body.get("tools") or ():
        if not isinstance(tool.get("name"), str) or not isinstance(tool.get("input_schema"), dict):
            problems.append("tools need name and input_schema")
    return problems


def check_gemini(body: Any) -> Problems:
    """Google `models.generateContent` / `streamGenerateContent` request body."""
    problems: Problems = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    allowed = {
        "contents", "safetySettings", "generationConfig", "system_instruction",
        "systemInstruction", "tools", "toolConfig", "cachedContent",
    }  # fmt: skip
    problems += [f"Unknown name {k!r}" for k in body if k not in allowed]
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return [*problems, "contents is not specified"]
    for i, c in enumerate(contents):
        if not isinstance(c, dict) or c.get("role") not in ("user", "model", "function"):
            problems.append(f"contents[{i}].role must be user or model")
            continue
        parts = c.get("parts")
        if not isinstance(parts, list) or not parts:
            problems.append(f"contents[{i}].parts must not be empty")
            continue
        for part in parts:
            kinds = {"text", "inlineData", "functionCall", "functionResponse", "fileData"}
            if not isinstance(part, dict) or len(kinds & set(part)) != 1:
                problems.append(f"contents[{i}].parts: each part holds exactly one kind of data")
    config = body.get("generationConfig") or {}
    known = {
        "stopSequences", "candidateCount", "maxOutputTokens", "temperature", "topP", "topK",
        "seed", "presencePenalty", "frequencyPenalty", "responseMimeType", "thinkingConfig",
    }  # fmt: skip
    problems += [f"Unknown name {k!r} at 'generation_config'" for k in config if k not in known]
    if "stopSequences" in config:
        _strings(config["stopSequences"], "stopSequences", problems, limit=5)
    _number(config, "temperature", 0, 2, problems)
    _number(config, "topP", 0, 1, problems)
    for setting in body.get("safetySettings") or ():
        if set(setting) != {"category", "threshold"}:
            problems.append("safetySettings items are {category, threshold}")
    instruction = body.get("system_instruction", body.get("systemInstruction"))
    if instruction is not None and not isinstance(instruction, dict):
        problems.append("system_instruction must be a Content object")
    return problems


def check_llamacpp(body: Any) -> Problems:
    """llama.cpp server `POST /completion` (tools/server README)."""
    problems: Problems = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    allowed = {
        "prompt", "n_predict", "stream", "stop", "temperature", "top_k", "top_p", "min_p",
        "typical_p", "tfs_z", "repeat_penalty", "repeat_last_n", "presence_penalty",
        "frequency_penalty", "mirostat", "mirostat_tau", "mirostat_eta", "seed", "cache_prompt",
        "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n",
        "dry_sequence_breakers", "xtc_threshold", "xtc_probability", "grammar", "n_probs",
        "ignore_eos", "logit_bias", "samplers", "n_keep",
    }  # fmt: skip
    problems += [f"unknown field {k!r}" for k in body if k not in allowed]
    if not isinstance(body.get("prompt"), str | list):
        problems.append("prompt must be a string")
    if "stop" in body:
        _strings(body["stop"], "stop", problems)
    if "dry_sequence_breakers" in body:
        _strings(body["dry_sequence_breakers"], "dry_sequence_breakers", problems)
    _integer(body, "n_predict", -1, problems)
    return problems


def check_koboldcpp(body: Any) -> Problems:
    """KoboldCpp `POST /api/v1/generate` (KoboldAI United API schema)."""
    problems: Problems = []
    if not isinstance(body, dict):
        return ["the body must be a JSON object"]
    allowed = {
        "prompt", "max_length", "max_context_length", "temperature", "top_p", "top_k", "top_a",
        "min_p", "typical", "tfs", "rep_pen", "rep_pen_range", "rep_pen_slope", "sampler_order",
        "sampler_seed", "stop_sequence", "trim_stop", "mirostat", "mirostat_tau", "mirostat_eta",
        "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n",
        "dry_sequence_breakers", "xtc_threshold", "xtc_probability", "grammar", "banned_tokens",
        "use_default_badwordsids", "genkey", "memory", "quiet", "dynatemp_range",
    }  # fmt: skip
    problems += [f"unknown field {k!r}" for k in body if k not in allowed]
    if not isinstance(body.get("prompt"), str):
        problems.append("prompt: Missing data for required field.")
    if "stop_sequence" in body:
        _strings(body["stop_sequence"], "stop_sequence", problems)
    _integer(body, "max_length", 1, problems)
    _integer(body, "max_context_length", 1, problems)
    if "sampler_order" in body and not all(isinstance(v, int) for v in body["sampler_order"]):
        problems.append("sampler_order must be integers")
    return problems


def cache_breakpoints(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every block of an Anthropic body that carries `cache_control`, in prompt order."""
    blocks = list(body.get("system") or ()) if isinstance(body.get("system"), list) else []
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        blocks += content if isinstance(content, list) else []
    return [b for b in blocks if isinstance(b, dict) and "cache_control" in b]


def _cache_breakpoint_problems(body: dict[str, Any]) -> Problems:
    """Anthropic's prompt caching rules: at most 4 breakpoints, each `ephemeral`."""
    marked = cache_breakpoints(body)
    problems: Problems = []
    if len(marked) > 4:
        problems.append(
            f"A maximum of 4 blocks with cache_control may be provided. Found {len(marked)}."
        )
    for block in marked:
        control = block["cache_control"]
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            problems.append("cache_control.type: Input should be 'ephemeral'")
        if block.get("type") == "text" and not block.get("text"):
            problems.append("cache_control cannot be set for empty text blocks")
    return problems
