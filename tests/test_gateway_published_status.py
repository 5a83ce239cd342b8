"""`toolscout tools` shows what a running `toolscout serve` knows of its upstreams: restarts and
give-ups that a one-shot connection of its own could never see; with a Postgres state store, what
the replicas of every host sharing it know."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from support.postgres import PostgresServer
from support.registries import failing_server, python_server, write_registry
from support.serve_process import serve_command, served_over_http
from support.waiting import wait_until

from toolscout.state import open_state
from toolscout.state.replicas import STALE_AFTER, ReplicaBoard
from toolscout.upstream.published import gateways_dir, running_gateways

pytestmark = pytest.mark.anyio


def _toolscout(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolscout.cli", *args]


async def test_toolscout_tools_shows_when_a_running_gateway_tries_a_failing_upstream_next(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "broken": failing_server("fatal: no database"),
        "weather": python_server("weather_server.py"),
    })
    serve = _toolscout("serve", "--registry", str(registry), "--model", "none", "--max-restarts", "1")
    with anyio.fail_after(90):
        # stdin stays open and silent: a host that has not said anything yet.
        async with await anyio.open_process(serve, stderr=subprocess.DEVNULL) as process:
            await wait_until(
                # The slow retries: the next attempt after the one fast restart (not the wait before it).
                lambda: any(
                    g.upstreams.get("broken", {}).get("next_attempt") and g.upstreams["broken"].get("restarts") == 1
                    and g.upstreams.get("weather", {}).get("state") == "up"
                    for g in running_gateways([registry])
                ),
                timeout=90, interval=0.1,
            )
            snapshot = await anyio.run_process(_toolscout("tools", "--registry", str(registry), "--json", "--refresh"))
            running = await anyio.run_process(_toolscout("tools", "--registry", str(registry), "--running"))
            assert process.stdin is not None
            await process.stdin.aclose()  # the host goes away: the gateway shuts down
            await process.wait()
    rows = {row["name"]: row for row in json.loads(snapshot.stdout)}
    # Its own one-shot attempt cannot know of the slow retries; the serving gateway's account can.
    assert "trying again" not in rows["broken"]["reason"]
    (served,) = rows["broken"]["serving"]
    assert served["pid"] == process.pid and not served["gave_up"] and served["restarts"] == 1
    assert "fatal: no database" in served["reason"]
    assert "2 failed attempts; trying again every 60 s" in served["reason"]
    assert served["next_attempt"] > 0
    assert rows["weather"]["serving"][0]["state"] == "up"
    text = running.stdout.decode()
    assert f"broken   serving gateway {process.pid} (stdio): down, restarted 1 time: " in text
    assert "(2 failed attempts; trying again every 60 s); next attempt at " in text
    assert f"weather  serving gateway {process.pid} (stdio): up, 3 tools" in text
    # Once it has exited, nothing of it is left to be shown.
    assert running_gateways([registry]) == []
    assert not (gateways_dir() / f"{process.pid}.json").exists()


async def test_status_files_of_dead_gateways_and_of_other_registries_are_not_shown(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    exited = await anyio.run_process([sys.executable, "-c", "import os; print(os.getpid())"])
    dead_pid = int(exited.stdout)
    directory = tmp_path / "gateways"
    directory.mkdir()

    def publish(pid: int, registry: Path) -> Path:
        path = directory / f"{pid}.json"
        row = {"name": "broken", "state": "down", "reason": "gave up", "tool_count": 0, "restarts": 5, "gave_up": True}
        path.write_text(json.dumps({"pid": pid, "transport": "stdio", "started_at": 0,
                                    "registries": [str(registry.resolve())], "upstreams": [row]}))
        return path

    stale = publish(dead_pid, ours)
    with anyio.fail_after(30):
        async with await anyio.open_process([sys.executable, "-c", "import sys; sys.stdin.read()"]) as elsewhere:
            publish(elsewhere.pid, theirs)
            (directory / "garbage.json").write_text("{not json")
            assert running_gateways([ours], directory=directory) == []
            assert [g.pid for g in running_gateways([theirs], directory=directory)] == [elsewhere.pid]
            assert elsewhere.stdin is not None
            await elsewhere.stdin.aclose()
    assert not stale.exists()  # removed: its gateway died without cleaning up


# --- replicas sharing a Postgres state store ---------------------------------------------------

def test_replicas_beat_on_the_board_and_those_gone_silent_expire(location: str) -> None:
    clock = [100.0]
    one = ReplicaBoard(open_state(location), clock=lambda: clock[0])
    two = ReplicaBoard(open_state(location), clock=lambda: clock[0])
    two.key = "elsewhere:42"  # another machine's replica
    one.beat({"registries": ["/r.json"], "started_at": 1.0, "upstreams": []})
    two.beat({"registries": ["/r.json"], "started_at": 2.0, "upstreams": []})
    assert [entry["started_at"] for entry in one.live(["/r.json"])] == [1.0, 2.0]
    assert one.live(["/other.json"]) == []
    clock[0] += STALE_AFTER + 1
    one.beat({"registries": ["/r.json"], "started_at": 1.0, "upstreams": []})
    # The silent one is no longer shown, and its record is gone.
    assert [entry["started_at"] for entry in two.live(["/r.json"])] == [1.0]
    with one.state.transaction("replicas") as records:
        assert [key for key, _ in records.items()] == [one.key]
    one.leave()
    assert two.live(["/r.json"]) == []


async def test_toolscout_tools_running_lists_the_replicas_of_every_host_sharing_postgres(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    """Two `serve --transport http` replicas over one Postgres, each with data directories of its
    own (as on two machines: neither sees the other's status file); `toolscout tools --running`
    run from a third lists both, and stops listing one killed with SIGKILL."""
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    url = postgres.database("running")

    def machine(name: str) -> dict[str, str]:
        return {**os.environ, "TOOLSCOUT_DATA_DIR": str(tmp_path / name), "TOOLSCOUT_STATE": url}

    serve = serve_command(registry, "--transport", "http", "--port", "0")
    tools = _toolscout("tools", "--registry", str(registry), "--running", "--json")

    async def listed() -> dict[int, dict]:
        done = await anyio.run_process(tools, env=machine("c"))
        (row,) = json.loads(done.stdout)
        return {seen["pid"]: seen for seen in row["serving"]}

    with anyio.fail_after(120):
        async with served_over_http(serve, machine("a")), await anyio.open_process(
            serve, env=machine("b"), stderr=subprocess.DEVNULL
        ) as killed:
            seen = await listed()
            while not (killed.pid in seen and len(seen) == 2 and all(s["state"] == "up" for s in seen.values())):
                await anyio.sleep(0.2)
                seen = await listed()
            assert {s["transport"] for s in seen.values()} == {"http"}
            assert all(s["host"] and s["tool_count"] == 3 for s in seen.values())
            killed.kill()
            await killed.wait()
            remaining = await listed()
    assert killed.pid not in remaining and len(remaining) == 1
