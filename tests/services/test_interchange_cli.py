"""`taverna import`, `taverna chats ...` and `taverna backup ...` as a person runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from taverna.cli.main import app
from tests.support.cli import run, runner

MAIN = "Seraphina - 2024-09-28@14h03m12s"


def imported_chat(st_fixtures: Path) -> tuple[str, dict[str, object]]:
    chat = st_fixtures / "handmade" / "user-data" / "chats" / "Seraphina" / f"{MAIN}.jsonl"
    report = json.loads(run("import", "--json", str(chat)))
    (entry,) = report["chats"]
    return str(entry["id"]), entry


def test_import_prints_what_it_stored_with_ids(default_data: Path, st_fixtures: Path) -> None:
    output = run(
        "import",
        str(st_fixtures / "content" / "default_Seraphina.png"),
        str(st_fixtures / "content" / "Eldoria.json"),
        str(st_fixtures / "presets" / "openai" / "Default.json"),
        str(st_fixtures / "handmade" / "user-data" / "chats" / "Seraphina" / f"{MAIN}.jsonl"),
    )
    assert "stored character 'Seraphina'  id " in output
    assert "stored lorebook 'Eldoria'  id " in output
    assert "stored chat_completion_preset 'Default'  id " in output
    assert f"stored chat '{MAIN}'" in output and "7 messages (1 checkpoints)" in output
    assert (default_data / "taverna.db").exists() or any(default_data.iterdir())


def test_chats_list_and_show(default_data: Path, st_fixtures: Path) -> None:
    chat_id, entry = imported_chat(st_fixtures)
    assert entry["checkpoints"] == ["Checkpoint #1 - 2024-09-28@14h10m05s"]
    (row,) = json.loads(run("chats", "list", "--json"))
    assert row["id"] == chat_id and row["title"] == MAIN
    assert row["characters"] == ["Seraphina"]
    assert (row["messages"], row["checkpoints"]) == (7, 1)
    assert chat_id in run("chats", "list")
    shown = run("chats", "show", chat_id[:30])
    assert "[2] ‹2/2› Seraphina:" in shown and "[5] Note (hidden):" in shown
    as_json = json.loads(run("chats", "show", chat_id, "--json"))
    assert [m["candidate"] for m in as_json["messages"]][:3] == [[1, 2], [1, 1], [2, 2]]
    tree = run("chats", "show", chat_id, "--tree")
    assert "‹1/2› [2] Seraphina: *Seraphina's brow furrows" in tree
    assert "⚑ Checkpoint #1" in tree
    whole = json.loads(run("chats", "show", chat_id, "--tree", "--json"))
    assert len(whole["nodes"]) == 9


def test_export_writes_sillytavern_files(
    default_data: Path, st_fixtures: Path, tmp_path: Path
) -> None:
    chat_id, _ = imported_chat(st_fixtures)
    out = tmp_path / "out"
    printed = run("chats", "export", chat_id, "--out", str(out)).split("\n")
    assert {Path(p).name for p in printed if p} == {
        f"{MAIN}.jsonl",
        "Checkpoint #1 - 2024-09-28@14h10m05s.jsonl",
    }
    source = st_fixtures / "handmade" / "user-data" / "chats" / "Seraphina"
    for path in out.iterdir():
        assert path.read_text(encoding="utf-8") == (source / path.name).read_text(encoding="utf-8")


def test_backup_now_list_and_restore(default_data: Path, st_fixtures: Path) -> None:
    chat_id, _ = imported_chat(st_fixtures)
    written = Path(run("backup", "now", chat_id).strip())
    assert written.parent == default_data / "backups"
    (listed,) = json.loads(run("backup", "list", "--json"))
    assert listed["name"] == written.name
    restored = run("backup", "restore", written.name[:20], "--title", "Recovered")
    assert "restored chat 'Recovered'" in restored and "7 messages" in restored
    assert len(json.loads(run("chats", "list", "--json"))) == 2


def test_errors_are_one_line_with_exit_code_two(default_data: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"user_name":"a","chat_metadata":{}}\n{"mes":[5]}', encoding="utf-8")
    command = [sys.executable, "-c", "from taverna.cli.main import main; main()"]
    env = {"TAVERNA_DATA": str(default_data), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [*command, "import", str(bad)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "line 2" in result.stderr
    assert "Traceback" not in result.stderr
    result = subprocess.run(
        [*command, "chats", "show", "nope"], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 2 and "no chat with id 'nope'" in result.stderr


def test_among_several_files_a_bad_one_is_skipped(
    default_data: Path, st_fixtures: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    result = runner.invoke(
        app, ["import", str(empty), str(st_fixtures / "content" / "Eldoria.json")]
    )
    assert result.exit_code == 0, result.output
    assert "stored lorebook 'Eldoria'" in result.output
    assert "empty.jsonl: the chat file is empty" in result.output
    again = runner.invoke(app, ["import", str(empty)])
    assert again.exit_code != 0 and "the chat file is empty" in str(again.exception)


def test_export_as_plain_text_too(default_data: Path, st_fixtures: Path, tmp_path: Path) -> None:
    chat_id, _ = imported_chat(st_fixtures)
    out = tmp_path / "text"
    printed = run("chats", "export", chat_id, "--out", str(out), "--text")
    assert f"{MAIN}.txt" in printed
    assert (out / f"{MAIN}.txt").read_text(encoding="utf-8").startswith("Seraphina: ")
