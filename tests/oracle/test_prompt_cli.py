"""`taverna prompt` on SillyTavern's own files: groups, the ledger view, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from taverna.cli.main import _register, app
from tests.support.cases import case_prompt_args


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register()
    return CliRunner()


def _group_args(st_fixtures: Path, oracle_cases: Path) -> list[str]:
    base = oracle_cases / "01_seraphina_basic"
    data = st_fixtures / "handmade" / "user-data"
    return [
        "prompt",
        "--settings",
        str(base / "settings.json"),
        "--card",
        str(base / "default_Seraphina.png"),
        "--card",
        str(st_fixtures / "handmade" / "cards" / "Kael.v3.json"),
        "--world",
        str(base / "Eldoria.json"),
        "--group",
        str(data / "groups" / "1727532000123.json"),
        "--chat",
        str(data / "group chats" / "2024-09-28@15h00m00s.jsonl"),
        "--json",
    ]


def test_group_chat_body(runner: CliRunner, st_fixtures: Path, oracle_cases: Path) -> None:
    """algo-prompt-assembly.md §3.5: group separator, prefixed names, the nudge last."""
    result = runner.invoke(app, _group_args(st_fixtures, oracle_cases), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    messages = json.loads(result.stdout)["messages"]
    assert messages[-1] == {
        "role": "system",
        "content": "[Write the next reply only as Seraphina.]",
    }
    contents = [m["content"] for m in messages]
    assert "[Start a new group chat. Group members: Seraphina, Kael]" in contents
    assert any(c.startswith("Kael: ") for c in contents)


def test_group_speaker_option(runner: CliRunner, st_fixtures: Path, oracle_cases: Path) -> None:
    args = [*_group_args(st_fixtures, oracle_cases), "--speaker", "Kael"]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    messages = json.loads(result.stdout)["messages"]
    assert messages[0]["content"].startswith("Write Kael's next reply")
    assert messages[-1]["content"] == "[Write the next reply only as Kael.]"


def test_ledger_view(runner: CliRunner, oracle_cases: Path) -> None:
    args = case_prompt_args(oracle_cases / "05_context_budget", "--ledger")
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "cut (" in result.stdout and "older messages" in result.stdout
    assert "of a budget of 1748" in result.stdout


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    """Bad input: one line naming the file, exit code 2 (the project's error type)."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "taverna"),
            "prompt",
            "--settings",
            str(tmp_path / "nope.json"),
            "--card",
            str(tmp_path / "c.json"),
            "--chat",
            str(tmp_path / "x.jsonl"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "nope.json" in done.stderr and "not found" in done.stderr


def test_cache_check_names_the_moved_injection(runner: CliRunner, oracle_cases: Path) -> None:
    """The depth-4 character note moves each turn; the cache-friendly layout shares more."""
    args = case_prompt_args(oracle_cases / "04_depth_injections", "--cache-check")
    plain = runner.invoke(app, args, catch_exceptions=False).stdout
    friendly = runner.invoke(app, [*args, "--cache-friendly"], catch_exceptions=False).stdout
    assert "previous prompt had injection depth 4" in plain

    def shared(line: str) -> int:
        return int(line.split("prefix shared: ", 1)[1].split(" ", 1)[0])

    assert shared(friendly) > shared(plain)


def test_dry_run_turns_lorebook_timers_off(
    runner: CliRunner, oracle_cases: Path, tmp_path: Path
) -> None:
    """The body is a real generation's: a delayed entry waits (algo-world-info.md §7);
    `--dry-run` builds it as SillyTavern's previews do, with timers off (§4.1)."""
    base = oracle_cases / "01_seraphina_basic"
    book = {
        "entries": {
            "0": {
                "uid": 0,
                "key": [],
                "constant": True,
                "delay": 10,
                "content": "DELAYED LORE",
                "position": 0,
                "order": 100,
            }
        }
    }
    (tmp_path / "Delayed.json").write_text(json.dumps(book))
    header = {
        "user_name": "User",
        "character_name": "Seraphina",
        "create_date": "2024-01-01@12h00m00s",
        "chat_metadata": {"world_info": "Delayed"},
    }
    line = {
        "name": "User",
        "is_user": True,
        "is_system": False,
        "mes": "Hello",
        "send_date": "January 1, 2024 12:01pm",
    }
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")
    args = [
        "prompt",
        "--settings",
        str(base / "settings.json"),
        "--card",
        str(base / "default_Seraphina.png"),
        "--world",
        str(tmp_path / "Delayed.json"),
        "--chat",
        str(chat),
        "--json",
    ]
    real = runner.invoke(app, args, catch_exceptions=False)
    dry = runner.invoke(app, [*args, "--dry-run"], catch_exceptions=False)
    assert real.exit_code == 0 and dry.exit_code == 0, real.output + dry.output
    assert "DELAYED LORE" not in real.stdout
    assert "DELAYED LORE" in dry.stdout


TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _case_07_args(oracle_cases: Path) -> list[str]:
    return case_prompt_args(
        oracle_cases / "07_text_completion_chatml", "--api", "textgen", "--json"
    )


def test_chat_template_from_a_tokenizer_config(
    runner: CliRunner, oracle_cases: Path, tmp_path: Path
) -> None:
    """`--chat-template tokenizer_config.json` formats the prompt in the model's template."""
    config = tmp_path / "tokenizer_config.json"
    config.write_text(
        json.dumps({"chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": "</s>"})
    )
    args = [*_case_07_args(oracle_cases), "--chat-template", str(config)]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    prompt = body["prompt"]
    assert prompt.startswith("<s><|system|>") and "<|im_start|>" not in prompt
    assert prompt.endswith("<|user|>Fine. Tell me about the lighthouse keeper.</s><|assistant|>")
    assert '<|assistant|>"Two days if the tide is kind, three if it is not."</s>' in prompt
    assert "</s>" in body["stop"]


def test_chat_template_from_a_jinja_file(
    runner: CliRunner, oracle_cases: Path, tmp_path: Path
) -> None:
    template = tmp_path / "template.jinja"
    template.write_text(TEMPLATE)
    args = [*_case_07_args(oracle_cases), "--chat-template", str(template)]
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    prompt = json.loads(result.stdout)["prompt"]
    assert prompt.startswith("<|system|>")  # no bos token without a tokenizer config
    assert prompt.endswith("<|user|>Fine. Tell me about the lighthouse keeper.<|assistant|>")


def test_chat_template_needs_a_text_api(oracle_cases: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    template = tmp_path / "template.jinja"
    template.write_text(TEMPLATE)
    args = [a for a in _case_07_args(oracle_cases) if a != "textgen"]
    args[args.index("--api")] = "--chat-template"
    args.insert(args.index("--chat-template") + 1, str(template))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "taverna"), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "--api textgen" in done.stderr and "template.jinja" in done.stderr
