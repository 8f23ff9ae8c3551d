"""Counting as the backend counts: SillyTavern's API tokenizers ask the Text Completion
server, each backend at its own tokenize endpoint (stubs speaking each one's format); many
texts at once, each remembered; the estimate only where the server does not answer, and
the ledger says so."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from taverna.engine.assembly.context import GenerationType
from taverna.model.chat import CharacterRef, ChatState, NodeRole
from taverna.providers.request import Api
from taverna.services.chats.service import ChatService
from taverna.services.connections import backend_tokens
from taverna.services.connections.backend_tokens import BackendTokenizer, backend_tokenizer
from taverna.services.connections.service import ConnectionService
from taverna.services.library.active_settings import set_active
from taverna.services.turns import GenerationService
from taverna.services.turns.context import TurnContexts
from taverna.services.turns.inspector import inspect_prompt
from taverna.services.turns.paths import PathEnds
from taverna.store.sql import SqlStore
from tests.stubs.model_server import StubServer
from tests.stubs.tokenize_routes import stub_tokens

NOW = datetime(2026, 5, 1, tzinfo=UTC)
CHINESE = "灯塔守护者在夜里数着经过的船只，雾角在远处低鸣。" * 3
pytestmark = pytest.mark.stub_model(models=("stub-model",))


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    backend_tokens._SERVERS.clear()  # each test asks the stub anew


# (api, source, the base URL's path under the stub, the path asked)
BACKENDS = [
    (Api.KOBOLDCPP, "koboldcpp", "", "/api/extra/tokencount"),
    (Api.OPENAI_TEXT, "ooba", "/v1", "/v1/internal/token-count"),
    (Api.OPENAI_TEXT, "", "/v1", "/v1/internal/token-count"),  # a generic text API: ooba's
    (Api.LLAMACPP, "llamacpp", "", "/tokenize"),
    (Api.OPENAI_TEXT, "vllm", "/v1", "/tokenize"),
    (Api.OPENAI_TEXT, "aphrodite", "/v1", "/v1/tokenize"),
    (Api.OPENAI_TEXT, "tabby", "/v1", "/v1/token/encode"),
]


@pytest.mark.parametrize(("api", "source", "under", "path"), BACKENDS)
def test_each_backend_counts_at_its_own_endpoint(
    stub: StubServer, api: Api, source: str, under: str, path: str
) -> None:
    tokenizer = backend_tokenizer(api, source, stub.url + under, "", "stub-model")
    assert tokenizer is not None
    stub.tokenize_requests.clear()
    assert tokenizer.count(CHINESE) == len(stub_tokens(CHINESE))
    assert [p for p, _ in stub.tokenize_requests] == [path]
    assert tokenizer.label == f"api:{tokenizer.endpoint.kind}" and not tokenizer.failed
    # the real count is far above the estimate SillyTavern budgets without the backend
    assert tokenizer.count(CHINESE) > 2 * math.ceil(len(CHINESE) / 3.35)
    assert len(stub.tokenize_requests) == 1  # remembered


def test_services_by_name_have_no_tokenize_endpoint() -> None:
    assert backend_tokenizer(Api.OPENAI_TEXT, "togetherai", "https://x/v1", "", "m") is None
    assert backend_tokenizer(Api.OPENAI_COMPATIBLE, "", "https://x/v1", "", "m") is None
    assert backend_tokenizer(Api.LOCAL, "", "", "", "m") is None


def test_many_texts_are_asked_at_once_and_each_once(stub: StubServer) -> None:
    tokenizer = backend_tokenizer(Api.KOBOLDCPP, "koboldcpp", stub.url, "", "stub-model")
    assert isinstance(tokenizer, BackendTokenizer)
    texts = [f"第{i}句话。" for i in range(30)]
    stub.tokenize_requests.clear()
    tokenizer.prime([*texts, *texts[:5], ""])
    assert sorted(b["prompt"] for _, b in stub.tokenize_requests) == sorted(texts)
    assert [tokenizer.count(t) for t in texts] == [len(stub_tokens(t)) for t in texts]
    again = backend_tokenizer(Api.KOBOLDCPP, "koboldcpp", stub.url, "", "stub-model")
    assert again is not None
    again.prime(texts)  # another turn: every count is known
    assert len(stub.tokenize_requests) == 30 and again.asked == 0


def test_a_server_that_does_not_answer_gets_the_estimate_and_says_so(stub: StubServer) -> None:
    stub.tokenize_down = True
    try:
        tokenizer = backend_tokenizer(Api.KOBOLDCPP, "koboldcpp", stub.url, "", "stub-model")
        assert tokenizer is not None
        assert tokenizer.count(CHINESE) == math.ceil(len(CHINESE) / 3.35)
        assert tokenizer.failed and "503" in tokenizer.failed
        assert tokenizer.label == "estimate"
    finally:
        stub.tokenize_down = False
    later = backend_tokenizer(Api.KOBOLDCPP, "koboldcpp", stub.url, "", "stub-model")
    assert later is not None and later.count(CHINESE) == len(stub_tokens(CHINESE))


def _kobold_chat(store: SqlStore, tmp_path: Path, stub: StubServer, tokenizer: int) -> tuple:
    connections = ConnectionService(store, tmp_path)
    connections.add("kobold", "koboldcpp", url=stub.url, model="stub-model")
    set_active(store, "power_user", {"tokenizer": tokenizer})
    chats = ChatService(store)
    chat = chats.create_chat(
        "Aria", characters=[CharacterRef("Aria")], greetings=[CHINESE], base_state=ChatState()
    ).chat
    for role, line in ((NodeRole.USER, "你好，守灯人。"), (NodeRole.ASSISTANT, CHINESE)):
        chat = chats.append(chat.id, role, line, revision=chat.revision).chat
    turns = TurnContexts(store, clock=lambda: NOW, paths=PathEnds(store))
    service = GenerationService(store, connections, turns, paths=turns.paths, clock=lambda: NOW)
    return service, chat.id


@pytest.mark.parametrize("tokenizer", [10, 9, 6])
def test_a_prompt_is_budgeted_with_the_backends_counts(
    store: SqlStore, tmp_path: Path, stub: StubServer, tokenizer: int
) -> None:
    service, chat_id = _kobold_chat(store, tmp_path, stub, tokenizer)
    view = inspect_prompt(service, chat_id, None)
    ledger = view.prompt["ledger"]
    assert ledger["tokenizer"] == "api:koboldcpp" and ledger["tokenizer_note"] == ""
    history = [i for i in ledger["items"] if i["kind"] == "history"]
    # the messages' texts were asked for at once, before the assembly counted them
    asked = {b["prompt"] for _, b in stub.tokenize_requests}
    assert CHINESE in asked and "你好，守灯人。" in asked
    assert max(i["tokens"] for i in history) >= len(stub_tokens(CHINESE))
    typed = service.count_tokens(chat_id, "雾角")
    assert (typed.tokenizer, typed.text) == ("api:koboldcpp", len(stub_tokens("雾角")))


def test_with_the_server_down_the_ledger_says_the_estimate_stood_in(
    store: SqlStore, tmp_path: Path, stub: StubServer
) -> None:
    service, chat_id = _kobold_chat(store, tmp_path, stub, 10)
    stub.tokenize_down = True
    try:
        ledger = inspect_prompt(service, chat_id, None).prompt["ledger"]
    finally:
        stub.tokenize_down = False
    assert ledger["tokenizer"] == "estimate"
    assert "did not answer" in ledger["tokenizer_note"] and "503" in ledger["tokenizer_note"]
    # the estimated counts are not kept as the server's: the next build asks again
    ledger = inspect_prompt(service, chat_id, None).prompt["ledger"]
    assert ledger["tokenizer"] == "api:koboldcpp" and ledger["tokenizer_note"] == ""


def test_a_model_named_tokenizer_does_not_ask_the_backend(
    store: SqlStore, tmp_path: Path, stub: StubServer
) -> None:
    service, chat_id = _kobold_chat(store, tmp_path, stub, 12)  # Llama 3's vocabulary
    stub.tokenize_requests.clear()
    ledger = inspect_prompt(service, chat_id, None).prompt["ledger"]
    assert ledger["tokenizer"] == "llama3" and stub.tokenize_requests == []
    assert service.turn  # the service was built with the real assembly
    assert GenerationType.NORMAL
