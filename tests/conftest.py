"""Shared test fixtures: where SillyTavern's sample files are, and the test database URL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The shared folder beside the repository (`../shared`), or $TAVERNA_SHARED."""
    env = os.environ.get("TAVERNA_SHARED")
    return Path(env) if env else REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    path = shared_dir()
    if not path.is_dir():
        pytest.skip("the shared fixtures folder is not present")
    return path


@pytest.fixture(scope="session")
def st_fixtures(shared: Path) -> Path:
    path = shared / "fixtures" / "sillytavern"
    if not path.is_dir():
        pytest.skip("SillyTavern fixtures are not present")
    return path


@pytest.fixture(scope="session")
def oracle_cases(shared: Path) -> Path:
    path = shared / "oracle" / "cases"
    if not path.is_dir():
        pytest.skip("oracle cases are not present")
    return path
