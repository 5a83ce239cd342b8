"""Upstreams started from a host's minimal environment still trust the system's certificates.

Hosts (Claude Desktop, the SDK's stdio client) start toolscout with little more than PATH and HOME;
behind TLS inspection, `uvx` then fails with "invalid peer certificate: UnknownIssuer" unless told
to use the system's trust store, and Node.js unless given the system's CA bundle. They never
inherit the gateway's own credentials, though: only an allowlist of its variables, plus their entry's env.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from support.registries import python_server, write_registry
from support.gateway_session import gateway_session, text_of

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.registry.spec import ServerSpec
from toolscout.upstream.launch import system_ca_bundle, upstream_environment
from toolscout.search import SearchSettings, ToolSearch
from toolscout.upstream import State

UVX = Path(sys.executable).parent / "uvx"


@pytest.fixture
def minimal_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a desktop host leaves toolscout: PATH and HOME."""
    for name in list(os.environ):
        if name not in ("PATH", "HOME"):
            monkeypatch.delenv(name)


def spec(**env: str) -> ServerSpec:
    return ServerSpec(name="s", transport="stdio", command="srv", env=env)


def test_upstreams_default_to_the_system_certificates(minimal_environment: None) -> None:
    env = upstream_environment(spec())
    assert env["UV_SYSTEM_CERTS"] == "1" and env["UV_NATIVE_TLS"] == "1"
    assert env["NODE_EXTRA_CA_CERTS"] == system_ca_bundle()
    assert "NODE_OPTIONS" not in env  # Node 20 refuses --use-system-ca and would not start at all


def test_the_users_environment_and_the_entry_decide_over_the_defaults(
    minimal_environment: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = upstream_environment(spec(UV_SYSTEM_CERTS="false", NODE_EXTRA_CA_CERTS="/etc/corp/ca.pem"))
    monkeypatch.setenv("UV_NATIVE_TLS", "0")
    inherited = upstream_environment(spec())
    assert entry["UV_SYSTEM_CERTS"] == "false" and "UV_NATIVE_TLS" not in entry
    assert entry["NODE_EXTRA_CA_CERTS"] == "/etc/corp/ca.pem"
    assert inherited["UV_NATIVE_TLS"] == "0" and "UV_SYSTEM_CERTS" not in inherited


@pytest.mark.skipif(not UVX.exists(), reason="uvx is not installed next to this interpreter")
def test_a_uvx_server_starts_from_a_minimal_environment(minimal_environment: None, tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "time": {"command": "uvx", "args": ["mcp-server-time==2026.10.19", "--local-timezone", "UTC"]},
    })

    async def start() -> tuple[State, str | None]:
        engine = ToolSearch(SearchSettings.lexical_only())
        async with Gateway(load_registries([registry]), engine, GatewayOptions(start_timeout=90, max_restarts=0)) as gateway:
            await gateway.ready(100)
            status = gateway.statuses()[0]
            return status.state, status.reason

    state, reason = anyio.run(start)
    assert state is State.UP, reason


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_node_reaches_the_npm_registry_from_a_minimal_environment(minimal_environment: None) -> None:
    script = "fetch('https://registry.npmjs.org/').then(r => console.log(r.status), e => console.log(e.cause?.code ?? e))"
    done = subprocess.run(["node", "-e", script], env=upstream_environment(spec()), capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "200", done.stdout + done.stderr


def test_the_node_registrys_filesystem_server_gets_a_dedicated_folder_not_the_home_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node = Path(__file__).parent.parent / "registry" / "node.json"
    monkeypatch.delenv("TOOLSCOUT_FILES", raising=False)
    default = next(s for s in load_registries([node]) if s.name == "filesystem")
    monkeypatch.setenv("TOOLSCOUT_FILES", "/srv/shared")
    chosen = next(s for s in load_registries([node]) if s.name == "filesystem")
    assert default.args[-1] == "~/toolscout-files"
    assert chosen.args[-1] == "/srv/shared"


def test_a_stdio_upstream_gets_its_entrys_env_but_not_the_gateways_own_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-gateway-only")
    entry = python_server("hostile_server.py", env={"NOTES_API_TOKEN": "entry-token-61c2"})
    registry = write_registry(tmp_path / "servers.json", {"hostile": entry})

    async def read(*names: str) -> list[str]:
        with anyio.fail_after(30):
            async with gateway_session(registry, max_restarts=0) as (_, client):
                calls = [{"name": "hostile__env_value", "arguments": {"name": name}} for name in names]
                return [text_of(await client.call_tool("execute_tool", call)) for call in calls]

    # The entry's value reaches the upstream; what the upstream returns of it is redacted to the
    # agent, and `***` stands only for a registry secret's exact value.
    assert anyio.run(read, "OPENAI_API_KEY", "NOTES_API_TOKEN") == ["<unset>", "***"]
