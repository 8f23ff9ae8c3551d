"""The console script's first step: the commands scripts run once per file answer before
the command-line framework loads (it alone costs several times an empty interpreter's start).

`taverna version` and `taverna inspect [--json] FILE` are run directly; any other command
line (help, other options, other commands) goes through typer as usual.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Sequence

# glibc's mallopt parameter for the most arenas a process's threads allocate from.
_M_ARENA_MAX = -8
SERVER_ARENAS = 2


def _quick_inspect(args: Sequence[str]) -> tuple[str, bool] | None:
    """`(file, as_json)` when `args` is exactly `inspect [--json] FILE` in any order."""
    if not args or args[0] != "inspect":
        return None
    rest = list(args[1:])
    as_json = "--json" in rest
    if as_json:
        rest.remove("--json")
    if len(rest) != 1 or rest[0].startswith("-"):
        return None
    return rest[0], as_json


def few_arenas() -> None:
    """Let a server's threads share `SERVER_ARENAS` allocator arenas.

    glibc gives each new thread an arena of its own, up to eight per core, and memory
    freed in one arena serves only that arena: a server answering on dozens of threads
    creeps up as it runs (bench/load.py's 30-minute soak of two workers: +9% and +11%
    with the default, +8% and +8% with two). Runs before any thread starts, and leaves a
    MALLOC_ARENA_MAX the operator set alone. Only where glibc is the allocator.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, SERVER_ARENAS)


def more_open_files() -> None:
    """Raise a server's limit of open files to the most the system allows it.

    Each stream a page follows holds a socket, and with several workers each follower
    another to Redis: the usual limit of 1,024 would refuse connections at a few hundred
    streams. Unix only; a limit the operator lowered on purpose (a hard one) is kept."""
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or hard > soft:
            wanted = 65_536 if hard == resource.RLIM_INFINITY else hard
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["serve"]:
        few_arenas()
        more_open_files()
    if args in (["version"], ["--version"]):
        from taverna import __version__

        print(__version__)
        return
    # No pydantic plugin is used; looking for them reads every installed package's metadata.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    quick = _quick_inspect(args)
    if quick is not None:
        from pathlib import Path

        from taverna.cli.inspecting import inspect_file
        from taverna.errors import TavernaError

        try:
            inspect_file(Path(quick[0]), as_json=quick[1])
        except TavernaError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        except BrokenPipeError:
            # the reader stopped early (`| head`): no traceback, and none at exit either
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(1) from None
        return
    from taverna.cli.main import main as run

    run()
