"""A logit-bias preset sent as token ids for the model's tokenizer, as SillyTavern's
`/bias` route makes it (public/scripts/openai.js calculateLogitBias)."""

from __future__ import annotations

import json

import pytest

from taverna.engine.assemble import assemble
from taverna.engine.assembly.context import CharacterInfo
from taverna.engine.tokens.bpe import OpenAITokenizer
from taverna.engine.tokens.logit_bias import logit_bias
from taverna.formats.st_settings import read_settings
from taverna.providers.builders import build_request
from taverna.providers.request import Api, RequestOptions
from taverna.services.turns.inputs import assembly_context

ENTRIES = [
    {"text": " bond", "value": -50},
    {"text": "[31929, 326]", "value": 5},  # raw token ids
    {"text": "", "value": 9},  # no text: skipped
    {"text": "<|endoftext|>", "value": 3},  # refused by OpenAI's encoder: skipped
]


def _sent_bias(source: str, model: str, entries: list[dict] | None = None) -> dict:
    model_key = {"openai": "openai_model", "custom": "custom_model", "claude": "claude_model"}
    oai = {
        "chat_completion_source": source,
        model_key[source]: model,
        "bias_preset_selected": "Mine",
        "bias_presets": {"Mine": ENTRIES if entries is None else entries},
    }
    settings = read_settings(json.dumps({"oai_settings": oai}))
    context = assembly_context(settings, [CharacterInfo(name="Aria")], {}, [], {})
    return dict(assemble(context, count_text=len).sampling["logit_bias"])


def test_texts_become_the_models_token_ids() -> None:
    for source, model, encoding in (
        ("openai", "gpt-4-turbo", "cl100k_base"),
        ("openai", "gpt-4o-mini", "o200k_base"),
        ("custom", "some-model", "cl100k_base"),  # unknown models count as gpt-3.5-turbo
    ):
        ids = OpenAITokenizer(encoding).encode(" bond")
        expected = {str(t): -50 for t in ids} | {"31929": 5, "326": 5}
        sent = _sent_bias(source, model, ENTRIES)
        assert sent == expected
        # Keys in a JavaScript object's order: integer keys ascending.
        assert list(sent) == sorted(sent, key=int)


def test_no_bias_where_sillytavern_sends_none() -> None:
    assert _sent_bias("claude", "claude-3-5-sonnet") == {}  # not a bias source
    assert _sent_bias("openai", "gpt-4-turbo", []) == {}  # nothing selected
    # Claude's tokenizer, and families SillyTavern's route cannot encode (Llama 3).
    assert logit_bias(ENTRIES, "claude") == {}
    assert logit_bias(ENTRIES, "llama3") == {}


def test_mistral_uses_its_sentencepiece_ids() -> None:
    sent = logit_bias([{"text": "[7]", "value": 1}, {"text": "hello", "value": -1}], "mistral")
    assert sent["7"] == 1 and len(sent) >= 2 and all(int(k) < 32000 for k in sent)


@pytest.mark.parametrize("text", ["[1.9, -1]", " [5] "])
def test_raw_ids_are_read_as_unsigned_32_bit(text: str) -> None:
    expected = {"[1.9, -1]": {"1": 2, "4294967295": 2}, " [5] ": {"5": 2}}[text]
    assert logit_bias([{"text": text, "value": 2}], "cl100k_base") == expected


def test_the_request_carries_the_ids() -> None:
    oai = {
        "chat_completion_source": "openai",
        "openai_model": "gpt-4-turbo",
        "bias_preset_selected": "Mine",
        "bias_presets": {"Mine": [{"text": "[326]", "value": 5}]},
    }
    settings = read_settings(json.dumps({"oai_settings": oai}))
    context = assembly_context(settings, [CharacterInfo(name="Aria")], {}, [], {})
    prompt = assemble(context, count_text=len)
    body = build_request(prompt, Api.OPENAI, RequestOptions(model="gpt-4-turbo")).body
    assert body["logit_bias"] == {"326": 5}
