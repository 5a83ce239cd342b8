"""However `toolscout serve` is stopped, no upstream process outlives it and no status file is left
claiming a running gateway: SIGTERM and SIGINT over stdio and HTTP, the host closing stdin (with a
real SDK host, which sends SIGTERM 2 s after closing stdin and SIGKILL 2 s after that), and the
parent process dying (stdio only: an HTTP gateway is a service that outlives the shell that
started it, and stops on its stdin closing only when that is a host's pipe).

The upstream's helper process ignores SIGTERM, so only the whole shutdown (SIGKILL to its process
group) ends it: a wedged upstream.
"""

from __future__ import annotations

import os
import re
import shlex
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
from mcp.client.streamable_http import streamable_http_client
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


@pytest.mark.parametrize(("signum", "stdin"), [
    (signal.SIGTERM, subprocess.DEVNULL), (signal.SIGINT, subprocess.DEVNULL),
    # A host's pipe, still open: watched for its end, which must not hold up the exit.
    (signal.SIGTERM, subprocess.PIPE),
])
async def test_a_signal_to_an_http_gateway_runs_the_whole_shutdown(tmp_path: Path, signum: int, stdin: int) -> None:
    registry, pidfile = _wedged_registry(tmp_path)
    command = serve_command(registry, "--transport", "http", "--port", "0")
    with anyio.fail_after(90):
        async with await anyio.open_process(command, stdin=stdin, stderr=subprocess.PIPE) as process:
            await served_url(process)
            helper = await _helper(pidfile)
            await wait_until(lambda: len(_status_files()) == 1, timeout=30)
            process.send_signal(signum)
            code = await process.wait()
            survivors = await _left_behind([helper])
    assert code == 0
    assert survivors == []
    assert _status_files() == []


async def test_a_stdio_gateway_whose_parent_dies_stops_and_leaves_nothing_behind(tmp_path: Path) -> None:
    registry, pidfile = _wedged_registry(tmp_path)
    command = serve_command(registry)
    # A parent that starts the gateway and dies without a word (as a crashed host would); the
    # gateway's stdin is this test's pipe, which stays open: only the parent's death tells.
    launcher = (
        "import subprocess, sys; "
        f"p = subprocess.Popen({command!r}, stdin=sys.stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        "print(p.pid, flush=True); subprocess.run(['sleep', '3600'])"
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


async def test_an_http_gateway_started_under_nohup_by_a_shell_that_exits_keeps_serving(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"demo": python_server("weather_server.py")})
    log = tmp_path / "serve.log"
    command = " ".join(shlex.quote(part) for part in serve_command(registry, "--transport", "http", "--port", "0"))
    # As a user would: the shell starts the gateway in the background and exits (its stdin is then
    # /dev/null, its parent the shell, which is gone at once).
    shell = subprocess.run(["sh", "-c", f"nohup {command} >{shlex.quote(str(log))} 2>&1 & echo $! $$"],
                           env=_env(), capture_output=True, text=True, check=True)
    gateway, shell_pid = (int(pid) for pid in shell.stdout.split())
    try:
        with anyio.fail_after(90):
            await wait_until(lambda: "streamable HTTP at" in log.read_text(), timeout=60)
            url = re.search(r"streamable HTTP at (http://\S+/mcp)", log.read_text()).group(1)
            assert psutil.Process(gateway).ppid() != shell_pid
            # The parent is gone; the gateway keeps answering, session after session.
            for _ in range(3):
                async with Client(streamable_http_client(url)) as client:
                    found = await client.call_tool("search_tools", {"query": "weather forecast"})
            assert alive(gateway)
    finally:
        if alive(gateway):
            os.kill(gateway, signal.SIGTERM)
            with suppress(TimeoutError):
                await wait_until(lambda: not alive(gateway), timeout=15)
    assert not found.is_error
    text = log.read_text()
    assert "has gone" not in text and "received SIGTERM" in text  # only the test's own SIGTERM stopped it
    assert text.count("stopping upstreams") == 1


async def test_an_http_gateway_whose_host_closes_its_stdin_pipe_stops(tmp_path: Path) -> None:
    registry, pidfile = _wedged_registry(tmp_path)
    command = serve_command(registry, "--transport", "http", "--port", "0")
    with anyio.fail_after(90):
        async with await anyio.open_process(command, stderr=subprocess.PIPE) as process:
            await served_url(process)
            helper = await _helper(pidfile)
            await wait_until(lambda: len(_status_files()) == 1, timeout=30)
            assert process.stdin is not None
            await process.stdin.aclose()  # the host that started it over a pipe has gone
            code = await process.wait()
            survivors = await _left_behind([helper])
    assert code == 0
    assert survivors == []
    assert _status_files() == []


@pytest.mark.parametrize(("transport", "code"), [("stdio", 128 + signal.SIGTERM), ("http", 0)])
def test_the_shutdown_bound_exits_with_the_code_of_the_way_it_was_stopped(tmp_path: Path, transport: str, code: int) -> None:
    # An ordered shutdown that never ends (a loop stuck in sleep): the 5 s bound ends the process.
    script = (
        "import time, sys; from pathlib import Path; from toolscout.serving.shutdown import Shutdown; "
        f"s = Shutdown(Path({str(tmp_path / 'status.json')!r}), {transport!r}); "
        f"s.begin('received SIGTERM', {code}); time.sleep(60)"
    )
    finished = subprocess.run([sys.executable, "-c", script], env=_env(), timeout=60, capture_output=True, text=True)
    assert finished.returncode == code, finished.stderr
    assert "still stopping after 5 s" in finished.stderr or finished.stderr == ""
