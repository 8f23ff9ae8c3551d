"""The console script's first step: `taverna version` answers before the command-line
framework loads (it alone costs several times an empty interpreter's start)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    if sys.argv[1:] in (["version"], ["--version"]):
        from taverna import __version__

        print(__version__)
        return
    # No pydantic plugin is used; looking for them reads every installed package's metadata.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from taverna.cli.main import main as run

    run()
