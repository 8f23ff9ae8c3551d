"""Install the test plugins as a real distribution with `taverna` entry points: a
`.dist-info` folder written where `importlib.metadata` looks (a folder put on `sys.path`)."""

from __future__ import annotations

from pathlib import Path

ENTRY_POINTS = {
    "mood": "tests.plugins.mood",
    "nosy": "tests.plugins.nosy",
    "broken": "tests.plugins.broken",
}
REPO = Path(__file__).resolve().parents[2]


def write_distribution(folder: Path, entry_points: dict[str, str] | None = None) -> Path:
    """Write `taverna_test_plugins-1.0.dist-info` into `folder`; put `folder` (and the
    repository, for the `tests` package) on the path to install it."""
    info = folder / "taverna_test_plugins-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: taverna-test-plugins\nVersion: 1.0\n", encoding="utf-8"
    )
    lines = [f"{name} = {target}" for name, target in (entry_points or ENTRY_POINTS).items()]
    (info / "entry_points.txt").write_text(
        "[taverna]\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
    return folder
