"""Fixtures every test runs with. Helpers tests import live in tests/support/ (a package)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def _private_state(state: Path) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLSCOUT_PINS", str(state / "pins.json"))
        patch.setenv("TOOLSCOUT_STATE", str(state / "state.sqlite3"))
        patch.setenv("TOOLSCOUT_DATA_DIR", str(state / "data"))
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
