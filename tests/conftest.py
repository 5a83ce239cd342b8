"""Fixtures every test runs with. Helpers tests import live in tests/support/ (a package)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.postgres import PostgresServer
from support.process_count import install as install_process_count


def pytest_configure(config: pytest.Config) -> None:
    install_process_count(config)  # off unless benchmarks/suite_processes.py asks for it


def _private_state(state: Path) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLSCOUT_PINS", str(state / "pins.json"))
        patch.setenv("TOOLSCOUT_STATE", str(state / "state.sqlite3"))
        patch.setenv("TOOLSCOUT_DATA_DIR", str(state / "data"))
        # The multilingual vote embeds every catalog a second time: only tests that ask for it
        # (their own settings, or this variable in their environment) pay for it.
        patch.setenv("TOOLSCOUT_MULTILINGUAL", "off")
        yield state


@pytest.fixture(scope="session", autouse=True)
def private_state(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Pins, learned examples and generated phrases go to a temporary folder, never the user's."""
    yield from _private_state(tmp_path_factory.mktemp("toolscout-state"))


@pytest.fixture(autouse=True)
def private_test_state(private_state: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Each test its own: tests reuse server names with other tool definitions, which pinning would
    (rightly) quarantine."""
    yield from _private_state(tmp_path_factory.mktemp("toolscout-test-state"))


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A real Postgres server (tests/support/postgres.py) shared by one test module."""
    with PostgresServer() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A state store location on each engine: a SQLite file, and a fresh database of the module's Postgres."""
    if request.param == "sqlite":
        return str(tmp_path / "state.sqlite3")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.database(f"t{abs(hash(request.node.nodeid)) % 10**9}")
