"""`toolscout serve` run as a real subprocess over HTTP, for the tests that need the command itself."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio


def serve_command(registry: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolscout.cli", "serve", "--registry", str(registry), "--model", "none", *extra]


@asynccontextmanager
async def served_over_http(command: list[str], env: Mapping[str, str] | None = None) -> AsyncIterator[str]:
    """Start `command` (a `serve --transport http --port 0`), yield the URL it serves; always stop it."""
    async with await anyio.open_process(command, env=dict(env) if env is not None else None) as process:
        try:
            yield await _served_url(process)
        finally:
            process.terminate()  # so that it stops its upstreams; killed if that takes too long
            with anyio.move_on_after(15):
                await process.wait()
            if process.returncode is None:
                process.kill()


async def _served_url(process: Any) -> str:
    """Read the server's stderr until it logs the address it listens on."""
    seen = ""
    assert process.stderr is not None
    async for chunk in process.stderr:
        seen += chunk.decode(errors="replace")
        if match := re.search(r"streamable HTTP at (http://\S+/mcp)", seen):
            return match.group(1)
    raise AssertionError(f"toolscout serve exited without serving:\n{seen}")
