"""Local models and the server's files. With accounts, only an admin adds a local model
other than the bundled one, by its file name in the models folder; no answer tells
whether a path exists (`~` is never expanded). A file is opened and checked by the
model's own process, never the server's: a malformed GGUF file is a 4xx naming the
model wherever it is used (the connection test, the prompt preview, a turn), never a 500.
The single user of a server without accounts may still name a path."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from taverna.server.app import create_app
from taverna.server.context import AppContext
from taverna.services.connections.local_models import MODELS_FOLDER, available, local_models
from tests.server import test_recall_keys
from tests.server.accounts_fixtures import enable_accounts, log_in

pytestmark = pytest.mark.skipif(not available(), reason="needs taverna's `local` extra")


def malformed_gguf(path: Path) -> Path:
    """A file that starts as a GGUF model does and then claims a key a terabyte long."""
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    path.write_bytes(header + struct.pack("<Q", 2**40) + b"general.name")
    return path


# The server over SQLite, and over PostgreSQL when its URL is set.
ctx = test_recall_keys.ctx


@pytest.fixture(autouse=True)
def no_model_left() -> Any:
    """No model process, and no server's rule on paths, outlives a test."""
    yield
    local_models().stop()
    local_models().paths_allowed = lambda: True


def _chat(client: TestClient) -> tuple[str, int]:
    card = client.post("/api/characters", json={"name": "Keeper"}).json()
    chat = client.post("/api/chats", json={"character_id": card["id"]}).json()
    return chat["id"], client.get(f"/api/chats/{chat['id']}").json()["revision"]


def _uses_fail_naming(client: TestClient, name: str, model: str) -> None:
    """The connection test, the prompt preview and a turn each say the model cannot be
    loaded, naming it: no 500."""
    tested = client.post(f"/api/connections/{name}/test")
    assert tested.status_code == 200 and tested.json()["ok"] is False
    assert model in tested.json()["message"]
    chat_id, revision = _chat(client)
    preview = client.get(f"/api/chats/{chat_id}/prompt")
    assert preview.status_code == 422, preview.text
    assert model in preview.json()["detail"]["message"]
    turn = client.post(
        f"/api/chats/{chat_id}/generate",
        json={"kind": "normal", "text": "hi", "revision": revision},
    )
    assert turn.status_code == 422, turn.text
    assert model in turn.json()["detail"]["message"]
    assert turn.json()["detail"]["code"] == "local_model_failed"


def test_a_malformed_model_file_is_a_4xx_naming_it_for_the_single_user(
    ctx: AppContext, tmp_path: Path
) -> None:
    bad = malformed_gguf(tmp_path / "broken.gguf")
    client = TestClient(create_app(ctx), raise_server_exceptions=False)
    with client:
        added = client.post(
            "/api/connections", json={"name": "Mine", "api": "local", "model": str(bad)}
        )
        assert added.status_code == 201, added.text
        _uses_fail_naming(client, "Mine", "broken.gguf")
        notes = tmp_path / "notes.gguf"
        notes.write_text("not a model")
        client.patch("/api/connections/Mine", json={"model": str(notes)})
        tested = client.post("/api/connections/Mine/test").json()
        assert tested["ok"] is False and "not a GGUF model file" in tested["message"]


def test_with_accounts_no_answer_tells_which_paths_exist(ctx: AppContext, tmp_path: Path) -> None:
    enable_accounts(ctx, "bob", admin="root")
    real = malformed_gguf(tmp_path / "real.gguf")
    asked = [str(real), str(tmp_path / "missing.gguf"), "/etc/passwd", "~root/.bashrc", "~/x.gguf"]
    client = TestClient(create_app(ctx), raise_server_exceptions=False)
    with client:
        log_in(client, "bob")
        answers = set()
        for path in asked:
            body = {"name": "Mine", "api": "local", "model": path}
            refused = client.post("/api/connections", json=body)
            assert refused.status_code == 403, refused.text
            answers.add(refused.text)
        assert len(answers) == 1 and "admin" in answers.pop()
        assert client.get("/api/connections/local-models").status_code == 403
        # The bundled model (named by nothing) is anyone's.
        bundled = client.post("/api/connections", json={"name": "Box", "api": "local"})
        assert bundled.status_code == 201, bundled.text

        log_in(client, "root")
        answers = set()
        for path in asked:
            body = {"name": "Mine", "api": "local", "model": path}
            refused = client.post("/api/connections", json=body)
            assert refused.status_code == 422, refused.text
            assert refused.json()["detail"]["code"] == "local_model_by_name_only"
            answers.add(refused.text)
        assert len(answers) == 1
        missing = client.post(
            "/api/connections", json={"name": "Mine", "api": "local", "model": "nothing.gguf"}
        )
        assert missing.status_code == 404
        assert missing.json()["detail"]["code"] == "no_model_in_folder"


def test_an_admin_chooses_from_the_models_folder_and_a_broken_file_is_named(
    ctx: AppContext, tmp_path: Path
) -> None:
    enable_accounts(ctx, "bob", admin="root")
    folder = ctx.data_dir / MODELS_FOLDER
    folder.mkdir(exist_ok=True)
    malformed_gguf(folder / "broken.gguf")
    shutil.copy(malformed_gguf(tmp_path / "x.gguf"), folder / "readme.txt")
    client = TestClient(create_app(ctx), raise_server_exceptions=False)
    with client:
        log_in(client, "root")
        assert client.get("/api/connections/local-models").json() == ["broken.gguf"]
        added = client.post(
            "/api/connections", json={"name": "Mine", "api": "local", "model": "broken.gguf"}
        )
        assert added.status_code == 201, added.text
        _uses_fail_naming(client, "Mine", "broken.gguf")


def test_a_stored_path_is_refused_at_use_with_accounts(ctx: AppContext, tmp_path: Path) -> None:
    """A connection stored with a path before (or imported) is refused when used, with
    the same answer whether the path exists."""
    enable_accounts(ctx, "bob0", "bob1", admin="root")
    real = malformed_gguf(tmp_path / "real.gguf")
    said = set()
    for who, path in (("bob0", str(real)), ("bob1", str(tmp_path / "missing.gguf"))):
        owner = ctx.store.account(name=who).id
        data = {"api": "local", "url": "", "model": path, "key_ref": "", "default": True}
        ctx.store.put_document("connection", "Old", data, owner=owner)
        client = TestClient(create_app(ctx), raise_server_exceptions=False)
        with client:
            log_in(client, who)
            chat_id, _ = _chat(client)
            preview = client.get(f"/api/chats/{chat_id}/prompt")
            assert preview.status_code == 422, preview.text
            tested = client.post("/api/connections/Old/test").json()
            assert tested["ok"] is False and tested["code"] == "local_model_by_name_only"
            said.add((preview.text, tested["message"]))
    assert len(said) == 1
