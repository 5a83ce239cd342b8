"""Shared test helpers: the search settings tests use, and registries of test upstream servers.

The upstream servers in tests/upstreams/ are real MCP servers run as stdio subprocesses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolscout.search import SearchSettings

UPSTREAMS = Path(__file__).parent / "upstreams"


def fast_search_settings() -> SearchSettings:
    """What gateway tests search with: keyword signals only, no embedding model to load."""
    return SearchSettings.lexical_only()


def python_server(script: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A registry entry running one of tests/upstreams/ with this interpreter."""
    return {"command": sys.executable, "args": [str(UPSTREAMS / script), *args], **extra}


def failing_server(message: str, code: int = 3) -> dict[str, Any]:
    """A registry entry whose process writes `message` to stderr and exits before any MCP."""
    script = f"import sys; sys.stderr.write({message!r} + '\\n'); sys.exit({code})"
    return {"command": sys.executable, "args": ["-c", script]}


def time_server() -> dict[str, Any]:
    """The third-party mcp-server-time from PyPI (a dev dependency)."""
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def write_registry(path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    return path


def _private_state(state: Path) -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLSCOUT_PINS", str(state / "pins.json"))
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
