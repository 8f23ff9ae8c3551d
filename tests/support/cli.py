"""Running `taverna` commands in-process, as a person types them."""

from __future__ import annotations

from typer.testing import CliRunner

from taverna.cli.main import _register, app

_register()
runner = CliRunner()


def run(*args: str) -> str:
    """Run one command; it must succeed. What it printed."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output
