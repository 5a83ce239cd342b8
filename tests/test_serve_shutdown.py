"""However `toolscout serve` is stopped, no upstream process outlives it and no status file is left
claiming a running gateway: SIGTERM and SIGINT over stdio and HTTP, the host closing stdin (with a
real SDK host, which sends SIGTERM 2 s after closing stdin and SIGKILL 2 s after that), and the
parent process dying.

The upstream's helper process ignores SIGTERM, so only the whole shutdown (SIGKILL to its process
group) ends it: a wedged upstream.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import anyio
import psutil
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp import Client
from support.processes import alive
from support.registries import python_server, write_registry
from support.serve_process import serve_command, served_url
from support.waiting import wait_until

pytestmark = pytest.mark.anyio


def _wedged_registry(tmp_path: Path) -> tuple[Path, Path]:
    pidfile = tmp_path / "helpers.txt"
    entry = python_server("spawning_server.py", str(pidfile), "--ignore-sigterm")
    return write_registry(tmp_path / "servers.json", {"stubborn": entry}), pidfile


def _status_files() -> list[Path]:
    return list((Path(os.environ["TOOLSCOUT_DATA_DIR"]) / "gateways").glob("*.json"))


async def _helper(pidfile: Path) -> int:
    await wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=60)
    return int(pidfile.read_text().split()[0])


async def _left_behind(pids: list[int]) -> list[int]:
    """The pids still alive 15 s after the gateway was told to stop (killed here if so)."""
    with suppress(TimeoutError):
        await wait_until(lambda: not any(alive(pid) for pid in pids), timeout=15)
    survivors = [pid for pid in pids if alive(pid)]
    for pid in survivors:  # not left running when the test fails
        psutil.Process(pid).kill()
    return survivors


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


async def test_a_real_sdk_host_closing_stdin_then_sending_sigterm_leaves_nothing_behind(tmp_path: Path) -> None:
    registry, pidfile = _wedged_registry(tmp_path)
    command = serve_command(registry)
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env())
    with anyio.fail_after(90):
        async with Client(stdio_client(params), mode="legacy") as client:
            tools = await client.list_tools()
            helper = await _helper(pidfile)
            (status,) = _status_files()
            gateway = int(status.stem)
        # The host has closed stdin, sent SIGTERM 2 s later and SIGKILL 2 s after that.
        survivors = await _left_behind([helper, gateway])
    assert {tool.name for tool in tools.tools} == {"search_tools", "execute_tool"}
    assert survivors == []
    assert _status_files() == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_to_a_stdio_gateway_leaves_nothing_behind(tmp_path: Path, signum: int) -> None:
    registry, pidfile = _wedged_registry(tmp_path)
    with anyio.fail_after(90):
        # stdin stays open and silent: a host that is still there.
        async with await anyio.open_process(serve_command(registry), stderr=subprocess.DEVNULL) as process:
            helper = await _helper(pidfile)
            await wait_until(lambda: len(_status_files()) == 1, timeout=30)
            process.send_signal(signum)
            code = await process.wait()
            survivors = await _left_behind([helper])
    assert code == 128 + signum
    assert survivors == []
    assert _status_files() == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_to_an_http_gateway_runs_the_whole_shutdown(tmp_path: Path, signum: int) -> None:
    registry, pidfile = _wedged_registry(tmp_path)
    command = serve_command(registry, "--transport", "http", "--port", "0")
    with anyio.fail_after(90):
        async with await anyio.open_process(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
            await served_url(process)
            helper = await _helper(pidfile)
            await wait_until(lambda: len(_status_files()) == 1, timeout=30)
            process.send_signal(signum)
            code = await process.wait()
            survivors = await _left_behind([helper])
    assert code == 0
    assert survivors == []
    assert _status_files() == []


async def test_a_gateway_whose_parent_dies_stops_and_leaves_nothing_behind(tmp_path: Path) -> None:
    registry, pidfile = _wedged_registry(tmp_path)
    command = serve_command(registry, "--transport", "http", "--port", "0")
    # A parent that starts the gateway and dies without a word (as a crashed host would).
    launcher = (
        "import subprocess, sys; "
        f"p = subprocess.Popen({command!r}, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "print(p.pid, flush=True); sys.stdin.read()"
    )
    with anyio.fail_after(90):
        async with await anyio.open_process([sys.executable, "-c", launcher]) as parent:
            assert parent.stdout is not None
            gateway = int((await parent.stdout.receive()).decode().split()[0])
            helper = await _helper(pidfile)
            await wait_until(lambda: len(_status_files()) == 1, timeout=30)
            parent.kill()
            await parent.wait()
            survivors = await _left_behind([helper, gateway])
    assert survivors == []
    assert _status_files() == []
