"""Shared test fixtures: where SillyTavern's sample files are, a store on every backend, and
a stub model server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from taverna.store.sql import SqlStore
from taverna.store.testing import backends, temporary_store
from tests.stubs.model_server import StubServer, start_stub

REPO = Path(__file__).resolve().parents[1]

# Property tests check what holds, not how fast: a busy machine must not fail an example
# for taking longer than hypothesis's default 200 ms (speed is measured in bench/).
settings.register_profile("taverna", deadline=None)
settings.load_profile("taverna")


def shared_dir() -> Path:
    """The shared folder beside the repository (`../shared`), or $TAVERNA_SHARED."""
    env = os.environ.get("TAVERNA_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def present(path: Path, missing: str) -> Path:
    """`path` if it is a folder; else the test is skipped, saying `missing`."""
    if not path.is_dir():
        pytest.skip(missing)
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    return present(shared_dir(), "the shared fixtures folder is not present")


@pytest.fixture(scope="session")
def st_fixtures(shared: Path) -> Path:
    return present(shared / "fixtures" / "sillytavern", "SillyTavern fixtures are not present")


@pytest.fixture(scope="session")
def oracle_cases(shared: Path) -> Path:
    return present(shared / "oracle" / "cases", "oracle cases are not present")


@pytest.fixture(params=backends())
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStore]:
    """A new store on SQLite and, when TAVERNA_TEST_DATABASE_URL is set, on PostgreSQL."""
    with temporary_store(request.param, tmp_path) as opened:
        yield opened


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "stub_model(key=None, models=('stub-model',)): the key and models of the module's `stub`",
    )


@pytest.fixture(scope="module")
def stub(request: pytest.FixtureRequest) -> Iterator[StubServer]:
    """A stub model server on 127.0.0.1, one for the whole module (see tests/stubs).

    It asks for no key and lists `stub-model` unless the module says otherwise with
    `pytestmark = pytest.mark.stub_model(key=..., models=(...))`.
    """
    marker = request.node.get_closest_marker("stub_model")
    with start_stub(**(marker.kwargs if marker else {})) as server:
        yield server
