"""An HTTP gateway started under `nohup` from a terminal outlives that terminal hanging up (a closed
window, a dropped ssh connection); one started without nohup stops on the hang-up, as asked.

The terminal is a real pseudo-terminal: a shell runs in a session of its own with it as controlling
terminal and starts both gateways in the background; closing the terminal's master side hangs it up,
so the kernel sends SIGHUP to the shell, and to the gateways (its foreground process group) as the
shell dies.
"""

from __future__ import annotations

import os
import pty
import re
import shlex
import signal
import sys
from contextlib import suppress
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.processes import alive
from support.registries import python_server, write_registry
from support.serve_process import serve_command
from support.waiting import wait_until

pytestmark = pytest.mark.anyio

_URL = re.compile(r"streamable HTTP at (http://\S+/mcp)")


def _start_in_a_terminal(script: str) -> tuple[int, int]:
    """Run `sh -c script` in a new session whose controlling terminal is a new pty: (pid, master fd)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    pid, master = pty.fork()
    if pid == 0:  # the child: a terminal's fresh signal state, then exec
        # Ignored and blocked signals survive exec: whatever this test process was left with (an
        # ignored SIGHUP above all) must not reach the shell, as it never would from a terminal.
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        os.execvpe("sh", ["sh", "-c", script], env)
    return pid, master


def _url_in(log: Path) -> str | None:
    found = _URL.search(log.read_text(errors="replace")) if log.exists() else None
    return found.group(1) if found else None


async def test_a_gateway_under_nohup_survives_its_terminal_hanging_up_and_one_without_stops(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"demo": python_server("weather_server.py")})
    command = " ".join(shlex.quote(part) for part in serve_command(registry, "--transport", "http", "--port", "0"))
    kept, plain = tmp_path / "nohup.log", tmp_path / "plain.log"
    script = (f"nohup {command} >{kept} 2>&1 & echo $! >{tmp_path / 'nohup.pid'}; "
              f"{command} >{plain} 2>&1 & echo $! >{tmp_path / 'plain.pid'}; wait")
    shell, master = _start_in_a_terminal(script)
    pids: list[int] = []
    try:
        # Bounds for a loaded machine: two gateways start, one stops gracefully (its upstream too).
        with anyio.fail_after(240):
            await wait_until(lambda: _url_in(kept) and _url_in(plain), timeout=120)
            pids = [int((tmp_path / f"{name}.pid").read_text()) for name in ("nohup", "plain")]
            os.close(master)  # the terminal hangs up
            master = -1
            await wait_until(lambda: not alive(pids[1]), timeout=90)
            assert "received SIGHUP" in plain.read_text()
            async with Client(streamable_http_client(_url_in(kept))) as client:
                found = await client.call_tool("search_tools", {"query": "weather forecast"})
            assert not found.is_error
            assert alive(pids[0])
    finally:
        if master >= 0:
            os.close(master)
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        with suppress(ChildProcessError):
            os.waitpid(shell, 0)
        with suppress(TimeoutError):
            await wait_until(lambda: not any(alive(pid) for pid in pids), timeout=15)
    assert "SIGHUP" not in kept.read_text()
