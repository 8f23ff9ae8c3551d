"""Sources by name: each service a SillyTavern user picks, its URL, key, rules and stream."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from taverna.errors import ProviderError
from taverna.model.prompt import Prompt, PromptMessage, Role
from taverna.providers import sources
from taverna.providers.builders import build_request, stream_parser
from taverna.providers.events import ReasoningDelta, TextDelta
from taverna.providers.registry import provider
from taverna.providers.request import Api, PostProcessing
from taverna.services.connections.service import ConnectionService
from taverna.store import Store
from tests.stubs.model_server import Reply, StubServer

pytestmark = pytest.mark.stub_model(key="sk-src", models=("deepseek-reasoner", "or/model"))

# source -> (API, the URL its chat or text request goes to, its key header, post-processing)
EXPECTED = {
    "openai": (Api.OPENAI, "https://api.openai.com/v1/chat/completions", "authorization", "none"),
    "claude": (Api.ANTHROPIC, "https://api.anthropic.com/v1/messages", "x-api-key", "none"),
    "openrouter": (Api.OPENAI_COMPATIBLE, "https://openrouter.ai/api/v1/chat/completions", "authorization", "none"),
    "deepseek": (Api.OPENAI_COMPATIBLE, "https://api.deepseek.com/beta/chat/completions", "authorization", "semi"),
    "xai": (Api.OPENAI_COMPATIBLE, "https://api.x.ai/v1/chat/completions", "authorization", "none"),
    "groq": (Api.OPENAI_COMPATIBLE, "https://api.groq.com/openai/v1/chat/completions", "authorization", "none"),
    "mistralai": (Api.MISTRAL, "https://api.mistral.ai/v1/chat/completions", "authorization", "none"),
    "perplexity": (Api.OPENAI_COMPATIBLE, "https://api.perplexity.ai/chat/completions", "authorization", "claude"),
    "cohere": (Api.OPENAI_COMPATIBLE, "https://api.cohere.ai/compatibility/v1/chat/completions", "authorization", "none"),
    "ai21": (Api.OPENAI_COMPATIBLE, "https://api.ai21.com/studio/v1/chat/completions", "authorization", "none"),
    "01ai": (Api.OPENAI_COMPATIBLE, "https://api.01.ai/v1/chat/completions", "authorization", "none"),
    "ooba": (Api.OPENAI_TEXT, "http://127.0.0.1:5000/v1/completions", "authorization", "none"),
    "koboldcpp": (Api.KOBOLDCPP, "http://127.0.0.1:5001/api/extra/generate/stream", "authorization", "none"),
    "llamacpp": (Api.LLAMACPP, "http://127.0.0.1:8080/completion", "authorization", "none"),
    "ollama": (Api.OLLAMA, "http://127.0.0.1:11434/api/generate", "authorization", "none"),
    "vllm": (Api.OPENAI_TEXT, "http://127.0.0.1:8000/v1/completions", "authorization", "none"),
    "aphrodite": (Api.OPENAI_TEXT, "http://127.0.0.1:2242/v1/completions", "authorization", "none"),
    "tabby": (Api.OPENAI_TEXT, "http://127.0.0.1:5000/v1/completions", "authorization", "none"),
    "togetherai": (Api.OPENAI_TEXT, "https://api.together.xyz/v1/completions", "authorization", "none"),
    "mancer": (Api.OPENAI_TEXT, "https://neuro.mancer.tech/oai/v1/completions", "authorization", "none"),
    "infermaticai": (Api.OPENAI_TEXT, "https://api.totalgpt.ai/v1/completions", "authorization", "none"),
    "dreamgen": (Api.OPENAI_TEXT, "https://dreamgen.com/api/openai/v1/completions", "authorization", "none"),
    "openrouter-text": (Api.OPENAI_TEXT, "https://openrouter.ai/api/v1/completions", "authorization", "none"),
    "featherless": (Api.OPENAI_TEXT, "https://api.featherless.ai/v1/completions", "authorization", "none"),
}  # fmt: skip


# names that were API names (or their aliases) before sources: they keep meaning the API
GENERIC = {"openai", "claude", "mistralai", "koboldcpp", "llamacpp", "ollama"}


def _prompt(api: Api) -> Prompt:
    if api.is_text_completion:
        return Prompt(kind="text", text="Hi\n", sampling={})
    return Prompt(
        kind="chat",
        messages=(
            PromptMessage(Role.SYSTEM, "Be brief."),
            PromptMessage(Role.USER, "Hi"),
            PromptMessage(Role.ASSISTANT, "Well"),
        ),
        sampling={},
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_source_sends_to_its_url_with_its_key_header(
    name: str, store: Store, tmp_path: Path
) -> None:
    api, url, header, mode = EXPECTED[name]
    source = sources.usable(name)
    assert (source.api, source.post_processing.value) == (api, mode)
    connections = ConnectionService(store, tmp_path)
    added = connections.add(name, name, key="sk-secret", model="m")
    if name in GENERIC:  # the generic API's name: stored as before sources existed
        assert (added.api, added.url, dict(added.options)) == (api, "", {})
    else:
        assert (added.api, added.url, added.options["source"]) == (api, source.default_url, name)
    assert added.post_processing.value == mode
    request = build_request(
        _prompt(api),
        api,
        connections.request_options(added),
        base_url=added.url,
        key="sk-secret",
    )
    assert request.url == url
    assert "sk-secret" in {k.lower(): v for k, v in request.headers.items()}[header]


def test_deepseek_messages_take_semi_post_processing_and_continue_by_prefix(
    store: Store,
    tmp_path: Path,
) -> None:
    connections = ConnectionService(store, tmp_path)
    added = connections.add("ds", "deepseek", key="k", model="deepseek-chat")
    assert provider(added.api).continues_in_place_with(added.options)
    options = connections.request_options(added)
    body = build_request(_prompt(added.api), added.api, options, base_url=added.url).body
    # semi: the system message stays first, the trailing assistant text is continued
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant"]
    assert body["messages"][-1] == {"role": "assistant", "content": "Well", "prefix": True}
    # a generic OpenAI-compatible connection made before sources existed is unchanged
    plain = connections.add("plain", "openai-compatible", url="https://x.example/v1", model="m")
    assert plain.options == {} and plain.post_processing is PostProcessing.NONE
    plain_body = build_request(
        _prompt(plain.api), plain.api, connections.request_options(plain), base_url=plain.url
    ).body
    assert "prefix" not in plain_body["messages"][-1]


def test_gone_and_unknown_sources_are_refused_by_name(store: Store, tmp_path: Path) -> None:
    connections = ConnectionService(store, tmp_path)
    for name in ("windowai", "scale", "blockentropy"):
        with pytest.raises(ProviderError) as gone:
            connections.add(name, name, url="https://x.example/v1")
        assert gone.value.code == "source_gone"
    with pytest.raises(ProviderError) as unknown:
        connections.add("x", "nosuchsource")
    assert "openrouter" in unknown.value.message and unknown.value.code == (
        "unknown_api_expected_one_of"
    )


def test_sillytavern_names_map_to_sources() -> None:
    assert sources.from_sillytavern("openrouter").name == "openrouter"  # type: ignore[union-attr]
    assert sources.from_sillytavern("", "openrouter").name == "openrouter-text"  # type: ignore[union-attr]
    assert sources.from_sillytavern("", "ooba").label == "text-generation-webui"  # type: ignore[union-attr]
    assert sources.from_sillytavern("claude").api is Api.ANTHROPIC  # type: ignore[union-attr]
    assert sources.from_sillytavern("nonesuch") is None


def test_stop_strings_follow_each_sources_limit() -> None:
    stops = ("a", "b", "c", "d", "e", "f")
    assert sources.stop_strings(sources.usable("openrouter"), stops) == stops[:4]
    assert sources.stop_strings(sources.usable("cohere"), stops) == stops[:5]
    assert sources.stop_strings(sources.usable("perplexity"), stops) == ()
    assert sources.stop_strings(sources.usable("claude"), stops) == stops


def test_openrouter_model_list_gives_context_lengths(
    stub: StubServer, store: Store, tmp_path: Path
) -> None:
    stub.context_lengths = {"or/model": 131072}
    connections = ConnectionService(store, tmp_path)
    connections.add("or", "openrouter", url=stub.base_url("openai"), key=stub.key, model="or/model")
    assert asyncio.run(connections.list_models("or")) == ["deepseek-reasoner", "or/model"]
    listing = {"data": [{"id": "or/model", "context_length": 131072}, {"id": "x"}]}
    assert sources.model_contexts(listing, sources.usable("openrouter")) == {"or/model": 131072}
    assert sources.model_contexts(listing, sources.usable("groq")) == {}


@pytest.mark.parametrize(
    ("name", "field"), [("deepseek", "reasoning_content"), ("openrouter", "reasoning")]
)
def test_a_streamed_turn_shows_reasoning_apart_from_the_reply(
    stub: StubServer, store: Store, tmp_path: Path, name: str, field: str
) -> None:
    assert sources.usable(name).reasoning_field == field
    stub.script(Reply(tokens=["Hel", "lo."], reasoning=["Think ", "first."], reasoning_field=field))
    connections = ConnectionService(store, tmp_path)
    added = connections.add(
        name, name, url=stub.base_url("openai"), key=stub.key, model="deepseek-reasoner"
    )
    prompt = Prompt(kind="chat", messages=(PromptMessage(Role.USER, "Hi"),), sampling={})
    request = build_request(
        prompt, added.api, connections.request_options(added), base_url=added.url, key=stub.key
    )

    async def turn() -> tuple[str, str]:
        said, thought = [], []
        async for event in connections.stream(request, stream_parser(added.api), secret=stub.key):
            if isinstance(event, TextDelta):
                said.append(event.text)
            elif isinstance(event, ReasoningDelta):
                thought.append(event.text)
        return "".join(said), "".join(thought)

    assert asyncio.run(turn()) == ("Hello.", "Think first.")
    assert stub.requests[-1].body["stream"] is True


def test_the_cli_adds_a_connection_by_source_name(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import taverna.cli.connection  # noqa: F401 - registers the commands
    from taverna.cli.main import app

    data = str(tmp_path / "data")
    runner = CliRunner()
    added = runner.invoke(
        app, ["connection", "add", "or", "--api", "openrouter", "--model", "x/y", "--data", data]
    )
    assert added.exit_code == 0, added.output
    shown = runner.invoke(app, ["connection", "list", "--json", "--data", data])
    listed = json.loads(shown.output)[0]
    assert (listed["api"], listed["url"]) == ("openai-compatible", "https://openrouter.ai/api/v1")
    assert listed["options"] == {"source": "openrouter"}
    gone = runner.invoke(app, ["connection", "add", "w", "--api", "scale", "--data", data])
    assert gone.exit_code != 0 and "shut down" in str(gone.exception or gone.output)


@pytest.mark.parametrize(
    ("name", "sent"),
    [
        ("openrouter", ["a", "b", "c", "d"]),
        ("cohere", ["a", "b", "c", "d", "e"]),
        ("perplexity", None),
        ("01ai", None),
        ("vllm", ["a", "b", "c", "d", "e", "f"]),
        ("huggingface", ["a", "b", "c", "d"]),
    ],
)
def test_a_request_carries_the_stop_strings_its_source_takes(
    name: str, sent: list[str] | None, store: Store, tmp_path: Path
) -> None:
    connections = ConnectionService(store, tmp_path)
    added = connections.add(name, name, url="http://127.0.0.1:9/v1", model="m")
    api = added.api
    stops = ("a", "b", "c", "d", "e", "f")
    if api.is_text_completion:
        prompt = Prompt(kind="text", text="Hi\n", stop=stops, sampling={})
    else:
        prompt = Prompt(
            kind="chat", messages=(PromptMessage(Role.USER, "Hi"),), stop=stops, sampling={}
        )
    body = build_request(prompt, api, connections.request_options(added), base_url=added.url).body
    assert body.get("stop") == sent
    # a generic connection keeps OpenAI's four
    plain = connections.add("plain", "openai-text", url="http://127.0.0.1:9/v1", model="m")
    text = Prompt(kind="text", text="Hi\n", stop=stops, sampling={})
    assert build_request(text, plain.api, connections.request_options(plain)).body["stop"] == list(
        stops[:4]
    )
