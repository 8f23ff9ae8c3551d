"""`taverna import ST --accounts`: a SillyTavern install with several users (a folder made
here: data/<handle>/ each) goes into the accounts of the same names; each person then
sees only their own things over HTTP. A folder with no account is skipped and said so."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from taverna.cli.main import _register, app
from taverna.server.app import create_app
from taverna.server.context import open_context
from taverna.services.accounts.service import AccountService
from taverna.services.house.data import open_data
from tests.server.accounts_fixtures import PASSWORD, log_in

_register()
runner = CliRunner()


def _chat_lines(character: str, user: str, said: list[str]) -> str:
    """A SillyTavern chat file: its metadata line, then one line a message."""
    lines = [
        {
            "user_name": user,
            "character_name": character,
            "create_date": "2024-05-01@10h00m00s",
            "chat_metadata": {},
        }
    ]
    for i, text in enumerate(said):
        lines.append(
            {
                "name": user if i % 2 else character,
                "is_user": bool(i % 2),
                "is_system": False,
                "send_date": f"May 1, 2024 10:0{i}am",
                "mes": text,
                "extra": {},
            }
        )
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def make_install(root: Path) -> Path:
    """A SillyTavern folder with users alice, bob, default-user and carol."""
    data = root / "data"
    card = (files("taverna") / "data" / "Ione Calder.png").read_bytes()
    book = (files("taverna") / "data" / "Brasswater.json").read_bytes()
    alice = data / "alice"
    (alice / "characters").mkdir(parents=True)
    (alice / "characters" / "Ione Calder.png").write_bytes(card)
    chats = alice / "chats" / "Ione Calder"
    chats.mkdir(parents=True)
    (chats / "Ione Calder - 2024-05-01@10h00m00s.jsonl").write_text(
        _chat_lines("Ione Calder", "Alice", ["The tide is in.", "ALICE-ONLY question"]),
        encoding="utf-8",
    )
    bob = data / "bob"
    (bob / "worlds").mkdir(parents=True)
    (bob / "worlds" / "Brasswater.json").write_bytes(book)
    owner = data / "default-user"
    (owner / "worlds").mkdir(parents=True)
    (owner / "worlds" / "Brasswater.json").write_bytes(book)
    carol = data / "carol"
    (carol / "worlds").mkdir(parents=True)
    (carol / "worlds" / "Brasswater.json").write_bytes(book)
    # SillyTavern's own folders beside the users' are not users.
    (data / "_storage").mkdir()
    (data / "_storage" / "user-alice").write_text("{}", encoding="utf-8")
    return root


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TAVERNA_DATABASE_URL", raising=False)
    folder = tmp_path / "taverna-data"
    opened = open_data(folder)
    try:
        accounts = AccountService(opened.store)
        accounts.add("root", PASSWORD, admin=True)
        for name in ("alice", "bob"):
            accounts.add(name, PASSWORD)
    finally:
        opened.close()
    return folder


def test_each_users_folder_goes_into_the_account_of_its_name(
    tmp_path: Path, data_dir: Path
) -> None:
    install = make_install(tmp_path / "SillyTavern")
    result = runner.invoke(
        app,
        [
            "import",
            str(install),
            "--accounts",
            "--as",
            "default-user=root",
            "--data",
            str(data_dir),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "user folder alice -> account alice: 1 items, 1 chats" in result.output
    assert "user folder default-user -> account root" in result.output
    assert "skipped user folder carol: no account named 'carol'" in result.output
    assert "_storage" not in result.output

    ctx = open_context(data_dir)
    ctx.services["accounts"] = ctx.accounts()
    with TestClient(create_app(ctx)) as alice:
        bob, root = TestClient(alice.app), TestClient(alice.app)
        for client, name in ((alice, "alice"), (bob, "bob"), (root, "root")):
            log_in(client, name)
        assert [c["name"] for c in alice.get("/api/characters").json()] == ["Ione Calder"]
        (chat,) = alice.get("/api/chats").json()
        messages = alice.get(f"/api/chats/{chat['id']}").json()["messages"]
        assert [m["content"] for m in messages] == ["The tide is in.", "ALICE-ONLY question"]
        assert alice.get("/api/lorebooks").json() == []
        for other in (bob, root):
            assert other.get("/api/chats").json() == []
            assert other.get("/api/characters").json() == []
            assert [b["name"] for b in other.get("/api/lorebooks").json()] == ["Brasswater"]
            assert "ALICE-ONLY" not in other.get("/api/search", params={"q": "ALICE"}).text


def said(result: Result) -> str:
    """What a failed command reports (the entry point prints the error it raised)."""
    return result.output + str(result.exception)


def test_json_report_and_refusals(tmp_path: Path, data_dir: Path) -> None:
    install = make_install(tmp_path / "SillyTavern")
    result = runner.invoke(
        app, ["import", str(install / "data"), "--accounts", "--json", "--data", str(data_dir)]
    )
    assert result.exit_code == 0, result.output
    rows = {row["handle"]: row for row in json.loads(result.output)}
    assert set(rows) == {"alice", "bob", "carol", "default-user"}
    assert rows["alice"]["account"] == "alice" and rows["alice"]["report"]["chats"]
    assert rows["carol"]["account"] is None and "carol" in rows["carol"]["skipped"]
    # A mapping naming no folder, a malformed one, an empty folder: refused, named.
    wrong = runner.invoke(
        app, ["import", str(install), "--accounts", "--as", "nobody=root", "--data", str(data_dir)]
    )
    assert wrong.exit_code != 0 and "nobody" in said(wrong)
    bad = runner.invoke(
        app, ["import", str(install), "--accounts", "--as", "alice", "--data", str(data_dir)]
    )
    assert bad.exit_code != 0 and "HANDLE=ACCOUNT" in said(bad)
    empty = tmp_path / "empty"
    empty.mkdir()
    none = runner.invoke(app, ["import", str(empty), "--accounts", "--data", str(data_dir)])
    assert none.exit_code != 0 and "no SillyTavern user folders" in said(none)
