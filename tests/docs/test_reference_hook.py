"""The documentation's reference is written from the code, and a page naming a command,
an option, a server.toml key or a source path the code no longer has fails the strict build
(the hook in docs/_hooks/reference.py warns; `mkdocs build --strict` turns that into a failure)."""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "docs/_hooks/reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_every_command_and_option_is_in_the_reference(hook: ModuleType) -> None:
    text = hook.commands_markdown()
    for path, command in hook._commands(hook._cli()):
        assert f"### `taverna {' '.join(path)}`" in text
        for param in command.params:
            for option in getattr(param, "opts", ()):
                if option.startswith("--"):
                    assert f"`{option}" in text, (path, option)


def test_every_server_toml_key_is_in_the_reference(hook: ModuleType, caplog) -> None:
    from taverna.server.config import Limits, ServerConfig

    text = hook.server_config_markdown()
    keys = [k for k in ServerConfig.model_fields if k != "limits"] + list(Limits.model_fields)
    for key in keys:
        assert re.search(rf"^\| `{key}` \|", text, re.M), key
    assert warnings_of(caplog) == []


def test_stale_commands_and_options_are_warned_of(hook: ModuleType, caplog) -> None:
    hook.check_commands(
        "`taverna serve --port 8000 --no-such-option` and `taverna frobnicate FILE`\n"
        "```sh\n.venv/bin/taverna chats show ID --tree --bogus\n```\n"
        "`taverna connection add NAME --api local --set n_ctx=4096` `taverna COMMAND --help`",
        "page.md",
    )
    assert warnings_of(caplog) == [
        "page.md: `taverna serve` has no option --no-such-option",
        "page.md: `taverna frobnicate FILE`: no such command 'frobnicate'",
        "page.md: `taverna chats show` has no option --bogus",
    ]


def test_a_stale_server_toml_key_is_warned_of(hook: ModuleType, caplog) -> None:
    hook.check_toml('```toml\nallowed_hosts = ["a"]\n[limits]\nbody_mib = 4\n```', "ok.md")
    assert warnings_of(caplog) == []
    hook.check_toml("```toml\n[limits]\nbody_mb = 4\n```", "stale.md")
    (message,) = warnings_of(caplog)
    assert message.startswith("stale.md: a TOML block is not a valid server.toml")
    assert "body_mb" in message


def test_a_missing_source_path_is_warned_of(hook: ModuleType, caplog) -> None:
    hook.check_paths(
        "`engine/lorebook/` `formats/coercion.py` `bench/turn.py` `engine/no_such_module.py`",
        "page.md",
    )
    assert warnings_of(caplog) == [
        "page.md: `engine/no_such_module.py` names a path the repository does not have"
    ]


def test_benchmarks_are_described_from_their_scripts(hook: ModuleType, caplog) -> None:
    text = hook.benchmarks_markdown()
    for script in (ROOT / "bench").glob("*.py"):
        if script.name != "run_all.py" and not script.name.startswith("_"):
            assert f".venv/bin/python bench/{script.name}" in text
    assert warnings_of(caplog) == []
