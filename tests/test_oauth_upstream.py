"""OAuth 2.1 upstreams, against a real authorization server and protected MCP server built from the
SDK's server-side auth pieces (tests/upstreams/oauth_server.py): sign-in (CLI and in-process),
calls with the token, refresh, expiry, sign-out, pre-registered clients, and the token file."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from support.asgi import free_listener, serve_asgi
from support.registries import fast_search_settings, python_server
from support.waiting import wait_until
from upstreams import oauth_server

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.oauth.login import sign_in
from toolscout.oauth.tokens import TokenFile, tokens_dir
from toolscout.registry.loading import load_registries
from toolscout.registry.spec import ServerSpec
from toolscout.search import ToolSearch
from toolscout.upstream import State

pytestmark = pytest.mark.anyio


@dataclass
class Protected:
    url: str
    provider: oauth_server.TestAuthProvider


@pytest.fixture
async def crm() -> AsyncIterator[Protected]:
    async with anyio.create_task_group() as tg:
        sock = free_listener()
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        app, provider = oauth_server.build(base)
        _, server = await serve_asgi(app, tg, sock)
        yield Protected(f"{base}/mcp", provider)
        server.should_exit = True


def registry(tmp_path: Path, crm: Protected, **oauth: object) -> Path:
    entry: dict[str, object] = {"url": crm.url}
    if oauth:
        entry["oauth"] = oauth
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"crm": entry, "weather": python_server("weather_server.py")}}))
    return path


async def consent(url: str) -> None:
    """What a person's browser does: open the consent page and follow it back to the redirect."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as browser:
        response = await browser.get(url)
    assert "Signed in to crm" in response.text


async def statuses_and_call(path: Path) -> tuple[dict[str, State], dict[str, str | None], str | None]:
    """Start a gateway over `path`; the states, reasons, and the answer of crm's tool (if up)."""
    with anyio.fail_after(60):
        async with Gateway(load_registries([path]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(30)
            statuses = gateway.statuses()
            states = {s.name: s.state for s in statuses}
            reasons = {s.name: s.reason for s in statuses}
            answer = None
            if states["crm"] is State.UP:
                hit = (await gateway.search("find a customer account", limit=1, servers=["crm"])).hits[0]
                result = await gateway.call(hit.tool, {"name": "Acme"})
                answer = result.content[0].text  # type: ignore[union-attr]
            weather = (await gateway.search("weather forecast", limit=1, servers=["weather"])).hits[0]
            assert not (await gateway.call(weather.tool, {"city": "Oslo", "days": 1})).is_error
    return states, reasons, answer


def crm_spec(path: Path) -> ServerSpec:
    return next(spec for spec in load_registries([path]) if spec.name == "crm")


async def test_sign_in_call_refresh_and_expiry(tmp_path: Path, crm: Protected, caplog: pytest.LogCaptureFixture) -> None:
    path = registry(tmp_path, crm)
    caplog.set_level(logging.DEBUG)

    # Not signed in: crm is down with the exact command; weather serves.
    states, reasons, _ = await statuses_and_call(path)
    assert states == {"crm": State.DOWN, "weather": State.UP}
    assert f"server 'crm' needs you to sign in (OAuth); run `toolscout login crm --registry {path}`" in (reasons["crm"] or "")

    # Sign in: discovery, dynamic client registration, PKCE, consent, token exchange.
    with anyio.fail_after(60):
        assert await sign_in(crm_spec(path), open_url=consent) == 1
    tokens = TokenFile("crm", crm.url)
    assert tokens.path.parent == tokens_dir() and tokens.path.stat().st_mode & 0o777 == 0o600
    first = (await tokens.get_tokens())
    assert first is not None and first.scope == oauth_server.SCOPE

    states, _, answer = await statuses_and_call(path)
    assert states["crm"] is State.UP and answer == "Acme: owner Dana, status active"
    assert first.access_token in crm.provider.seen_tokens

    # The access token expired (as a restart later would find it): refreshed, not a new sign-in.
    stored = json.loads(tokens.path.read_text())
    tokens.path.write_text(json.dumps({**stored, "expires_at": 1.0}))
    crm.provider.expire_access_tokens()
    states, _, answer = await statuses_and_call(path)
    assert states["crm"] is State.UP and answer and crm.provider.refreshes == 1
    second = await tokens.get_tokens()
    assert second is not None and second.access_token != first.access_token

    # The server refuses the access token before its stated expiry: refreshed all the same.
    crm.provider.expire_access_tokens()
    with anyio.fail_after(60):
        async with Gateway(load_registries([path]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(30)
            await wait_until(lambda: gateway.status_of("crm").state is State.UP, timeout=30)
    assert crm.provider.refreshes == 2

    # The refresh token is revoked too: a new sign-in is needed, and said so; weather still serves.
    tokens.path.write_text(json.dumps({**json.loads(tokens.path.read_text()), "expires_at": 1.0}))
    crm.provider.expire_access_tokens()
    crm.provider.revoke_refresh_tokens()
    states, reasons, _ = await statuses_and_call(path)
    assert states == {"crm": State.DOWN, "weather": State.UP}
    assert f"the sign-in to server 'crm' has expired or was revoked; run `toolscout login crm --registry {path}`" in (reasons["crm"] or "")

    # No token ever reached a log line.
    for token in (first.access_token, first.refresh_token, second.access_token, second.refresh_token):
        assert token and token not in caplog.text


async def test_login_and_logout_commands(tmp_path: Path, crm: Protected) -> None:
    path = registry(tmp_path, crm)
    command = [sys.executable, "-m", "toolscout.cli", "login", "crm", "--registry", str(path), "--no-browser"]
    with anyio.fail_after(90):
        async with await anyio.open_process(command, env={**os.environ}) as process:
            assert process.stderr is not None and process.stdout is not None
            seen = ""
            async for chunk in process.stderr:
                seen += chunk.decode()
                if match := re.search(r"\n\n    (http://\S+)\n", seen):
                    break
            await consent(match.group(1))
            output = b"".join([chunk async for chunk in process.stdout]).decode()
            await process.wait()
    assert process.returncode == 0, seen
    assert output == "Signed in to 'crm': it lists 1 tool.\n"
    assert TokenFile("crm", crm.url).signed_in()

    logout = await anyio.run_process([sys.executable, "-m", "toolscout.cli", "logout", "crm", "--registry", str(path)])
    assert logout.stdout.decode() == "Signed out of 'crm': its tokens are deleted.\n"
    assert not TokenFile("crm", crm.url).path.exists()

    unknown = await anyio.run_process([sys.executable, "-m", "toolscout.cli", "login", "crm2", "--registry", str(path)], check=False)
    assert unknown.returncode == 2
    assert "no server 'crm2' in the registry (servers that sign in with OAuth: crm)" in unknown.stderr.decode()


async def test_a_token_file_other_users_can_read_is_refused_and_nothing_else_breaks(tmp_path: Path, crm: Protected) -> None:
    path = registry(tmp_path, crm)
    with anyio.fail_after(60):
        await sign_in(crm_spec(path), open_url=consent)
    token_file = TokenFile("crm", crm.url).path
    token_file.chmod(0o644)
    states, reasons, _ = await statuses_and_call(path)
    assert states == {"crm": State.DOWN, "weather": State.UP}
    assert f"which other users can read (mode 644); it is not used. Fix it with `chmod 600 {token_file}`" in (reasons["crm"] or "")


async def test_a_pre_registered_client_signs_in_without_registering(
    tmp_path: Path, crm: Protected, monkeypatch: pytest.MonkeyPatch
) -> None:
    with free_listener() as sock:
        redirect = f"http://127.0.0.1:{sock.getsockname()[1]}/callback"
    crm.provider.preregister("toolscout-desktop", "s3cret-value", redirect)
    monkeypatch.setenv("CRM_CLIENT_SECRET", "s3cret-value")
    path = registry(tmp_path, crm, clientId="toolscout-desktop", clientSecret="${CRM_CLIENT_SECRET}",
                    redirectUri=redirect, scopes=[oauth_server.SCOPE])
    with anyio.fail_after(60):
        assert await sign_in(crm_spec(path), open_url=consent) == 1
    assert crm.provider.registrations == 0
    states, _, answer = await statuses_and_call(path)
    assert states["crm"] is State.UP and answer


async def test_a_token_goes_only_to_the_server_it_was_issued_for(tmp_path: Path, crm: Protected) -> None:
    async with anyio.create_task_group() as tg:
        sock = free_listener()
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        app, other_provider = oauth_server.build(base)
        _, other = await serve_asgi(app, tg, sock)
        path = registry(tmp_path, crm)
        with anyio.fail_after(60):
            await sign_in(crm_spec(path), open_url=consent)
        servers = json.loads(path.read_text())
        servers["mcpServers"]["other"] = {"url": f"{base}/mcp"}
        path.write_text(json.dumps(servers))
        with anyio.fail_after(60):
            async with Gateway(load_registries([path]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
                await gateway.ready(30)
                states = {s.name: s.state for s in gateway.statuses()}
        other.should_exit = True
    assert states == {"crm": State.UP, "weather": State.UP, "other": State.DOWN}
    assert other_provider.presented == []


async def test_a_running_gateway_connects_once_the_person_has_signed_in(tmp_path: Path, crm: Protected) -> None:
    path = registry(tmp_path, crm)
    with anyio.fail_after(90):
        async with Gateway(load_registries([path]), ToolSearch(fast_search_settings()), GatewayOptions()) as gateway:
            await gateway.ready(30)
            crm_status = lambda: next(s for s in gateway.statuses() if s.name == "crm")  # noqa: E731
            assert crm_status().state is State.DOWN
            registrations = crm.provider.registrations
            await sign_in(crm_spec(path), open_url=consent)
            await wait_until(lambda: crm_status().state is State.UP, timeout=30)
            # Waiting for the sign-in cost the authorization server nothing: no retries, no registrations.
            assert crm.provider.registrations == registrations + 1 and crm_status().restarts == 0


async def test_an_sse_server_signs_in_the_same_way(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tg:
        sock = free_listener()
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        app, _ = oauth_server.build(base, sse=True)
        _, server = await serve_asgi(app, tg, sock)
        path = tmp_path / "servers.json"
        path.write_text(json.dumps({"mcpServers": {"crm": {"url": f"{base}/sse", "type": "sse"},
                                                   "weather": python_server("weather_server.py")}}))
        with anyio.fail_after(60):
            assert await sign_in(crm_spec(path), open_url=consent) == 1
        states, _, answer = await statuses_and_call(path)
        server.should_exit = True
    assert states["crm"] is State.UP and answer == "Acme: owner Dana, status active"


async def test_a_client_id_metadata_document_is_used_where_the_server_accepts_one(tmp_path: Path, crm: Protected) -> None:
    document_url = "https://toolscout.example/oauth/client.json"
    with free_listener() as sock:
        redirect = f"http://127.0.0.1:{sock.getsockname()[1]}/callback"
    crm.provider.metadata_documents = {document_url: {"redirect_uris": [redirect], "client_name": "toolscout", "scope": oauth_server.SCOPE}}
    path = registry(tmp_path, crm, clientMetadataUrl=document_url, redirectUri=redirect)
    with anyio.fail_after(60):
        assert await sign_in(crm_spec(path), open_url=consent) == 1
    assert crm.provider.registrations == 0
    client = await TokenFile("crm", crm.url).get_client_info()
    assert client is not None and client.client_id == document_url
    states, _, answer = await statuses_and_call(path)
    assert states["crm"] is State.UP and answer


async def test_a_call_to_a_server_nobody_signed_in_to_names_the_login_command_at_once(tmp_path: Path, crm: Protected) -> None:
    from support.gateway_session import gateway_session, text_of

    path = registry(tmp_path, crm)
    async with gateway_session(path) as (gateway, client):
        # Far below the start timeout (30 s) a call used to wait through for a sign-in that never came.
        with anyio.fail_after(10):
            result = await client.call_tool("execute_tool", {"name": "crm__find_account", "arguments": {"name": "Acme"}})
    text = text_of(result)
    assert result.is_error
    assert (f"upstream 'crm': not available (waiting for a sign-in): server 'crm' needs you to sign in (OAuth); "
            f"run `toolscout login crm --registry {path}`") in text
    assert "Try again later" not in text
