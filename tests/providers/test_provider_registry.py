"""The provider records: one per API, with what each API can do."""

from __future__ import annotations

import pytest

from taverna.providers.registry import PROVIDERS, provider
from taverna.providers.request import Api


def test_every_api_has_its_record() -> None:
    assert set(PROVIDERS) == set(Api)
    assert all(provider(api).api is api for api in Api)


def test_anthropic_and_text_completion_apis_continue_in_place() -> None:
    in_place = {api for api in Api if provider(api).continues_in_place}
    text = {Api.KOBOLDCPP, Api.LLAMACPP, Api.OPENAI_TEXT, Api.LOCAL, Api.OLLAMA}
    assert in_place == {Api.ANTHROPIC, *text}


def test_mistral_continues_in_place_only_when_its_prefix_option_is_on() -> None:
    mistral = provider(Api.MISTRAL)
    assert not mistral.continues_in_place_with({})
    assert mistral.continues_in_place_with({"prefix": True})
    assert not provider(Api.OPENAI).opted_in_place({"prefix": True})


@pytest.mark.parametrize(
    ("api", "url"),
    [
        (Api.OPENAI, "https://api.openai.com/v1/models"),
        (Api.OPENAI_COMPATIBLE, "https://api.openai.com/v1/models"),
        (Api.OPENAI_TEXT, "https://api.openai.com/v1/models"),
        (Api.MISTRAL, "https://api.mistral.ai/v1/models"),
        (Api.ANTHROPIC, "https://api.anthropic.com/v1/models"),
        (Api.GOOGLE, "https://generativelanguage.googleapis.com/v1beta/models"),
        (Api.KOBOLDCPP, "http://127.0.0.1:5001/api/v1/model"),
        (Api.LLAMACPP, "http://127.0.0.1:8080/v1/models"),
        (Api.OLLAMA, "http://127.0.0.1:11434/api/tags"),
    ],
    ids=lambda v: str(v),
)
def test_the_model_listing_request_of_each_api(api: Api, url: str) -> None:
    request = provider(api).models_request("", "")
    assert (request.method, request.url, request.stream) == ("GET", url, False)


def test_model_names_read_each_listing_shape() -> None:
    assert provider(Api.OPENAI).model_names({"data": [{"id": "b"}, {"id": "a"}]}) == ["a", "b"]
    assert provider(Api.KOBOLDCPP).model_names({"result": "koboldcpp/tiny"}) == ["tiny"]
    google = {"models": [{"name": "models/gemini"}]}
    assert provider(Api.GOOGLE).model_names(google) == ["gemini"]
    assert provider(Api.OPENAI).model_names(["not", "a", "listing"]) == []


def test_a_preset_sets_each_api_only_its_own_request_options() -> None:
    from taverna.providers.request import PostProcessing

    preset = {
        "claude_use_sysprompt": 1,
        "human_sysprompt_message": "Let's get started.",
        "use_makersuite_sysprompt": False,
        "custom_prompt_post_processing": "strict",
    }
    assert provider(Api.ANTHROPIC).preset_options(preset) == {
        "use_system_prompt": True,
        "human_sysprompt_message": "Let's get started.",
    }
    assert provider(Api.GOOGLE).preset_options(preset) == {"use_system_prompt": False}
    assert provider(Api.OPENAI_COMPATIBLE).preset_options(preset) == {
        "post_processing": PostProcessing.STRICT
    }
    others = set(Api) - {Api.ANTHROPIC, Api.GOOGLE, Api.OPENAI_COMPATIBLE}
    assert all(provider(api).preset_options(preset) == {} for api in others)
    assert provider(Api.ANTHROPIC).preset_options({}) == {}
