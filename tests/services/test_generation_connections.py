"""Connections and their keys: kept apart, owner-only, never printed; `taverna connection`."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import taverna.cli.connection  # noqa: F401 - registers the commands
from taverna.cli.main import app
from taverna.errors import FormatError, NotFound
from taverna.services.connections import ConnectionService, Secrets
from taverna.store.testing import temporary_store
from tests.stubs import StubServer

KEY = "sk-connection-test-5555aaaa9999"

pytestmark = pytest.mark.stub_model(key=KEY)


def test_a_stored_key_lives_only_in_an_owner_only_file(tmp_path: Path) -> None:
    with temporary_store("sqlite", tmp_path) as store:
        service = ConnectionService(store, tmp_path)
        connection = service.add("main", "anthropic", model="claude-x", key=KEY)
        secrets = tmp_path / "secrets.json"
        assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
        # Encrypted at rest with the server key, itself owner-only.
        assert KEY not in secrets.read_text()
        assert stat.S_IMODE((tmp_path / "server.key").stat().st_mode) == 0o600
        assert KEY not in json.dumps(connection.public(service.key_hint(connection)))
        assert service.key_hint(connection) == "…9999"
        assert KEY not in json.dumps(store.find_documents("connection")[0].data)
        assert service.resolve_key(connection) == KEY
    for file in (tmp_path / "data").iterdir():
        assert KEY.encode() not in file.read_bytes()


def test_keys_stored_in_the_clear_before_are_read_and_a_wrong_server_key_is_named(
    tmp_path: Path,
) -> None:
    (tmp_path / "secrets.json").write_text(json.dumps({"secret:old": "k-old"}))
    (tmp_path / "secrets.json").chmod(0o600)
    secrets = Secrets(tmp_path)
    assert secrets.get("secret:old") == "k-old"
    ref = secrets.put("k-2")
    assert "k-old" not in secrets.path.read_text()  # re-sealed on the next write
    assert secrets.get(ref) == "k-2" and secrets.get("secret:old") == "k-old"
    from cryptography.fernet import Fernet

    (tmp_path / "server.key").write_bytes(Fernet.generate_key())
    with pytest.raises(FormatError, match=r"server\.key"):
        secrets.get(ref)


def test_loosened_permissions_are_taken_back(tmp_path: Path) -> None:
    secrets = Secrets(tmp_path)
    ref = secrets.put("k-1")
    secrets.path.chmod(0o644)
    assert secrets.get(ref) == "k-1"
    assert stat.S_IMODE(secrets.path.stat().st_mode) == 0o600


def test_an_environment_key_is_read_at_use_and_never_stored(tmp_path: Path) -> None:
    with temporary_store("sqlite", tmp_path) as store:
        env = {"MY_KEY": KEY}
        service = ConnectionService(store, tmp_path, environ=env)
        connection = service.add("env", "openai", key_env="MY_KEY")
        assert service.resolve_key(connection) == KEY
        assert not (tmp_path / "secrets.json").exists()
        assert connection.public()["key"] == "from $MY_KEY"
        env.clear()
        with pytest.raises(NotFound, match=r"\$MY_KEY"):
            service.resolve_key(connection)


def test_default_connection_and_replacing_a_key(tmp_path: Path) -> None:
    with temporary_store("sqlite", tmp_path) as store:
        service = ConnectionService(store, tmp_path)
        service.add("a", "openai", key="k-a")
        service.add("b", "llamacpp", default=True)
        assert service.get().name == "b"
        service.set_default("a")
        assert service.get().name == "a" and not service.get("b").default
        old_ref = service.get("a").key_ref
        service.add("a", "openai", key="k-new")
        assert service.resolve_key(service.get("a")) == "k-new"
        assert service.get("a").key_ref == old_ref  # replaced in place
        service.remove("a")
        assert "k-new" not in (tmp_path / "secrets.json").read_text()
        with pytest.raises(NotFound, match="no connection named"):
            service.get("a")


def test_connection_test_reports_success_and_a_refused_key(
    tmp_path: Path, stub: StubServer
) -> None:
    with temporary_store("sqlite", tmp_path) as store:
        service = ConnectionService(store, tmp_path)
        service.add("ok", "google", url=stub.base_url("google"), model="stub-model", key=KEY)
        service.add(
            "bad",
            "google",
            url=stub.base_url("google"),
            model="stub-model",
            key="wrong-key-123456789",
        )
        good = asyncio.run(service.test("ok"))
        assert good.ok and good.message
        bad = asyncio.run(service.test("bad"))
        assert not bad.ok and "key" in bad.message and "wrong-key-123456789" not in bad.message


def test_the_cli_adds_lists_and_tests_without_printing_the_key(
    tmp_path: Path, stub: StubServer
) -> None:
    runner = CliRunner()
    data = str(tmp_path / "data")
    added = runner.invoke(
        app,
        ["connection", "add", "stub", "--api", "openai", "--url", stub.base_url("openai"),
         "--model", "stub-model", "--key-stdin", "--default", "--data", data],
        input=KEY + "\n",
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    listed = runner.invoke(app, ["connection", "list", "--data", data])
    shown = runner.invoke(app, ["connection", "list", "--json", "--data", data])
    tested = runner.invoke(app, ["connection", "test", "stub", "--data", data])
    for result in (added, listed, shown, tested):
        assert result.exit_code == 0, result.output
        assert KEY not in result.output and KEY[-12:] not in result.output
    assert "* stub: openai stub-model" in listed.output
    assert json.loads(shown.output)[0]["key"] == "…9999"
    assert tested.output.startswith("ok in ")
    listed_models = runner.invoke(app, ["connection", "models", "--data", data])
    assert listed_models.exit_code == 0 and listed_models.output.strip() == "stub-model"
    assert stat.S_IMODE((tmp_path / "data" / "secrets.json").stat().st_mode) == 0o600


def test_request_options_are_set_checked_and_listed(tmp_path: Path) -> None:
    from taverna.services.house.data import open_data

    runner = CliRunner()
    data = str(tmp_path / "data")
    added = runner.invoke(
        app,
        ["connection", "add", "c", "--api", "anthropic", "--set", "use_system_prompt=true",
         "--set", "stream=false", "--data", data],
    )  # fmt: skip
    assert added.exit_code == 0, added.output
    listed = runner.invoke(app, ["connection", "list", "--data", data])
    assert "use_system_prompt=true stream=false" in listed.output
    for bad, said in (("stream=maybe", "stream takes bool"), ("colour=red", "KEY one of")):
        wrong = runner.invoke(
            app, ["connection", "add", "d", "--api", "openai", "--set", bad, "--data", data]
        )
        assert wrong.exit_code != 0 and said in str(wrong.exception)
    with open_data(data) as folder:
        service = ConnectionService(folder.store, folder.path)
        options = service.request_options(service.get("c"))
        assert options.use_system_prompt is True and options.stream is False


@pytest.mark.parametrize(
    "api", ["openai", "openai-compatible", "anthropic", "google", "koboldcpp", "llamacpp"]
)
def test_every_api_lists_its_models(tmp_path: Path, stub: StubServer, api: str) -> None:
    with temporary_store("sqlite", tmp_path) as store:
        service = ConnectionService(store, tmp_path)
        service.add("c", api, url=stub.base_url(api), key=KEY)
        assert asyncio.run(service.list_models("c")) == ["stub-model"]


def test_a_refused_listing_says_why_without_the_key(tmp_path: Path, stub: StubServer) -> None:
    from taverna.errors import ProviderError

    with temporary_store("sqlite", tmp_path) as store:
        service = ConnectionService(store, tmp_path)
        service.add("c", "anthropic", url=stub.base_url("anthropic"), key="sk-wrong-abcdefgh1234")
        with pytest.raises(ProviderError, match="key") as caught:
            asyncio.run(service.list_models("c"))
        assert "abcdefgh1234" not in str(caught.value)


def test_kept_connections_are_read_again_after_any_write_of_the_library(tmp_path: Path) -> None:
    from taverna.services.library.watch import LibraryWatch

    with temporary_store("sqlite", tmp_path) as store:
        watch = LibraryWatch().watch(store)
        service = ConnectionService(store, tmp_path, versions=watch)
        service.add("a", "openai", model="m1", key="k-1")
        assert service.get().name == "a"
        reads: list[str] = []
        store.find_documents = _counting(store.find_documents, reads)  # type: ignore[method-assign]
        assert service.get().name == "a" and service.of("").get("a").model == "m1"
        assert reads == []  # kept: no read while nothing was written
        # A write by another service on the same store (a page editing connections).
        other = ConnectionService(store, tmp_path)
        other.add("b", "openai", model="m2", key="k-2", default=True)
        before = len(reads)
        assert service.get().name == "b" and service.get("a").model == "m1"
        assert len(reads) == before + 1  # read again once, then kept
        other.remove("a")
        assert [c.name for c in service.list()] == ["b"]
        # Another process's write, heard through the watch (Redis, in a server).
        store.put_document("connection", "c", {"api": "openai", "model": "m3"})
        watch.heard()
        assert [c.name for c in service.of("").list()] == ["b", "c"]
        # Without a count of writes, every use reads.
        before = len(reads)
        other.list()
        other.list()
        assert len(reads) == before + 2


def _counting(read: Any, reads: list[str]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args[0])
        return read(*args, **kwargs)

    return counted
