"""HTTP sessions belong to their client: named tokens from a token file, a session bound to the
credential that opened it, a per-client session cap that
closes the longest idle session of only the client at it, or else one holding only a GET stream
(refusing it only when every one serves a POST), and
session ids kept out of the log. Served by uvicorn in this process; real HTTP, real MCP sessions."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from support.registries import fast_search_settings, python_server, write_registry
from support.serve_process import serve_command, served_over_http
from support.waiting import wait_until

from toolscout.errors import ConfigError
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.clients import client_name, load_client_tokens
from toolscout.serving.http import SessionLimits, http_app
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-fedcba9876543210"
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _token_file(path: Path) -> Path:
    path.write_text(json.dumps({"clients": [
        {"name": "alice", "token": ALICE},
        {"name": "bob", "token_sha256": hashlib.sha256(BOB.encode()).hexdigest(), "comment": "the CI runner"},
    ]}))
    path.chmod(0o600)
    return path


@contextlib.asynccontextmanager
async def _serving(tmp_path: Path) -> AsyncIterator[tuple[str, Any]]:
    """The gateway over HTTP with alice and bob's tokens and two sessions each: its URL, and the
    SDK's session manager (read only, to wait for requests to be in flight)."""
    registry = write_registry(tmp_path / "servers.json", {
        "weather": python_server("weather_server.py"), "hostile": python_server("hostile_server.py")})
    clients = load_client_tokens(_token_file(tmp_path / "tokens.json"))
    async with anyio.create_task_group() as tg:
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            mcp_server = build_server(gateway)
            app = http_app(mcp_server, host="127.0.0.1", clients=clients, sessions=SessionLimits(per_client=2))
            sock = socket.create_server(("127.0.0.1", 0))
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
            tg.start_soon(server.serve, [sock])
            await wait_until(lambda: server.started, timeout=10, interval=0.01)
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", mcp_server.session_manager
            server.should_exit = True


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    with anyio.fail_after(60):
        async with _serving(tmp_path) as (url, _):
            yield url


async def _open(http: httpx.AsyncClient, url: str, token: str) -> httpx.Response:
    return await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": f"Bearer {token}"})


def _ping(session: str, token: str | None) -> dict[str, str]:
    """Headers of a request on `session`, with `token` (None: without one, as tokenless clients)."""
    credentials = {"authorization": f"Bearer {token}"} if token else {}
    return {**MCP_HEADERS, **credentials, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}


PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def test_a_session_can_be_used_and_ended_only_by_the_client_that_opened_it(served: str) -> None:
    with anyio.fail_after(30):
        async with httpx.AsyncClient() as http:
            opened = await _open(http, served, ALICE)
            session = opened.headers["mcp-session-id"]
            by_bob = await http.post(served, json=PING, headers=_ping(session, BOB))
            bob_streams = await http.get(served, headers=_ping(session, BOB))
            bob_deletes = await http.delete(served, headers=_ping(session, BOB))
            by_alice = await http.post(served, json=PING, headers=_ping(session, ALICE))
            alice_deletes = await http.delete(served, headers=_ping(session, ALICE))
            after = await http.post(served, json=PING, headers=_ping(session, ALICE))
    assert opened.status_code == 200
    # Another client's requests are answered as if the session did not exist.
    assert by_bob.status_code == bob_streams.status_code == bob_deletes.status_code == 404
    assert by_alice.status_code == 200 and alice_deletes.status_code == 200
    assert after.status_code == 404


async def test_a_client_at_its_session_limit_has_its_longest_idle_session_closed_for_a_new_one(served: str) -> None:
    with anyio.fail_after(30):
        async with httpx.AsyncClient() as http:
            first, second = await _open(http, served, ALICE), await _open(http, served, ALICE)
            await http.post(served, json=PING, headers=_ping(second.headers["mcp-session-id"], ALICE))
            bobs = await _open(http, served, BOB)
            third = await _open(http, served, ALICE)
            first_after = await http.post(served, json=PING, headers=_ping(first.headers["mcp-session-id"], ALICE))
            second_after = await http.post(served, json=PING, headers=_ping(second.headers["mcp-session-id"], ALICE))
            bobs_after = await http.post(served, json=PING, headers=_ping(bobs.headers["mcp-session-id"], BOB))
    assert first.status_code == second.status_code == bobs.status_code == 200
    assert third.status_code == 200
    # The longest idle of alice's sessions made room; her other one and bob's are untouched.
    assert first_after.status_code == 404
    assert second_after.status_code == 200 and bobs_after.status_code == 200


async def _streaming(http: httpx.AsyncClient, url: str, session: str, token: str, held: list[httpx.Response]) -> None:
    """Open `session`'s GET stream, left open until the test ends (or the gateway closes it)."""
    request = http.build_request("GET", url, headers=_ping(session, token))
    held.append(await http.send(request, stream=True))


async def _stream_ended(response: httpx.Response) -> bool:
    """Whether the gateway ends this open GET stream (read to its end, bounded by the caller)."""
    async for _ in response.aiter_bytes():
        pass
    return True


async def test_a_session_holding_only_a_get_stream_makes_room_for_a_new_one(served: str) -> None:
    held: list[httpx.Response] = []
    with anyio.fail_after(30):
        async with httpx.AsyncClient(timeout=None) as http:
            sessions = [(await _open(http, served, ALICE)).headers["mcp-session-id"] for _ in range(2)]
            for session in sessions:
                await _streaming(http, served, session, ALICE, held)
            # The second session is used after the first: the first is the one to go.
            await http.post(served, json=PING, headers=_ping(sessions[1], ALICE))
            third = await _open(http, served, ALICE)
            bobs = await _open(http, served, BOB)
            first_ended = await _stream_ended(held[0])
            first_after = await http.post(served, json=PING, headers=_ping(sessions[0], ALICE))
            second_after = await http.post(served, json=PING, headers=_ping(sessions[1], ALICE))
            for response in held:
                await response.aclose()
    assert all(response.status_code == 200 for response in held)
    assert third.status_code == bobs.status_code == 200
    assert first_ended and first_after.status_code == 404
    assert second_after.status_code == 200


async def _post_in_flight(url: str, session: str, token: str) -> None:
    """A POST on `session` served until cancelled: a call of a tool that takes a minute."""
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "execute_tool", "arguments": {"name": "hostile__hold", "arguments": {"seconds": 60}}}}
    async with httpx.AsyncClient(timeout=None) as http:
        await http.post(url, json=call, headers=_ping(session, token))


def _posts_in_flight(manager: Any) -> int:
    return sum(transport._requests_in_flight for transport in list(manager._server_instances.values()))


async def test_a_client_whose_sessions_all_serve_a_post_is_refused_a_new_one_but_not_sessionless_requests(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with _serving(tmp_path) as (served, manager), httpx.AsyncClient(timeout=None) as http, anyio.create_task_group() as tg:
            for _ in range(2):
                session = (await _open(http, served, ALICE)).headers["mcp-session-id"]
                await http.post(served, json=INITIALIZED, headers=_ping(session, ALICE))
                tg.start_soon(_post_in_flight, served, session, ALICE)
            await wait_until(lambda: _posts_in_flight(manager) == 2, timeout=10, interval=0.01)
            refused = await _open(http, served, ALICE)
            bobs = await _open(http, served, BOB)
            # A 2026-07-28 client opens no session: the cap is not its concern.
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {ALICE}"}) as mcp_http:
                async with Client(streamable_http_client(served, http_client=mcp_http), mode="2026-07-28") as client:
                    found = await client.call_tool("search_tools", {"query": "weather"})
            tg.cancel_scope.cancel()
    assert refused.status_code == 429
    assert "client 'alice' already holds 2 open sessions, each with a request in flight" in refused.json()["error"]
    assert bobs.status_code == 200
    assert not found.is_error


async def test_without_tokens_a_flood_of_idle_sessions_locks_nobody_out(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    command = serve_command(registry, "--transport", "http", "--port", "0")
    env = {key: value for key, value in os.environ.items() if key not in ("TOOLSCOUT_AUTH_TOKEN", "TOOLSCOUT_TOKENS_FILE")}
    with anyio.fail_after(120):
        async with served_over_http(command, env=env) as url:
            async with httpx.AsyncClient() as http:
                # One local process opens 150 sessions (the default cap is 100) and leaves them idle.
                flood = [await http.post(url, json=INITIALIZE, headers=MCP_HEADERS) for _ in range(150)]
            # Everyone else still gets served, with a session and without one.
            async with Client(streamable_http_client(url), mode="legacy") as client:
                with_session = await client.call_tool("search_tools", {"query": "weather"})
            async with Client(streamable_http_client(url), mode="2026-07-28") as client:
                sessionless = await client.call_tool("search_tools", {"query": "weather"})
    assert [response.status_code for response in flood] == [200] * 150
    assert not with_session.is_error and not sessionless.is_error


async def test_without_tokens_one_process_holding_get_streams_on_every_session_locks_nobody_out(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    command = serve_command(registry, "--transport", "http", "--port", "0")
    env = {key: value for key, value in os.environ.items() if key not in ("TOOLSCOUT_AUTH_TOKEN", "TOOLSCOUT_TOKENS_FILE")}
    held: list[httpx.Response] = []
    with anyio.fail_after(120):
        async with served_over_http(command, env=env) as url:
            async with httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_connections=None)) as http:
                # One local process fills the default cap (100) with sessions, each holding a GET stream.
                for _ in range(100):
                    session = (await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)).headers["mcp-session-id"]
                    await http.post(url, json=INITIALIZED, headers=_ping(session, None))
                    held.append(await http.send(http.build_request("GET", url, headers=_ping(session, None)), stream=True))
                streams_open = sum(response.status_code == 200 for response in held)
                # Another client still starts a session and searches.
                async with Client(streamable_http_client(url), mode="legacy") as client:
                    found = await client.call_tool("search_tools", {"query": "weather"})
                for response in held:
                    await response.aclose()
    assert streams_open == 100
    assert not found.is_error


async def test_session_ids_are_never_logged(served: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(30):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {ALICE}"}) as http:
            async with Client(streamable_http_client(served, http_client=http), mode="legacy") as client:
                await client.call_tool("search_tools", {"query": "weather"})
        async with httpx.AsyncClient() as http:
            opened = await _open(http, served, ALICE)
            ids = [opened.headers["mcp-session-id"]]
            await http.post(served, json=PING, headers=_ping(ids[0], BOB))  # refused: logged by the SDK
            await http.delete(served, headers=_ping(ids[0], ALICE))
    # The server side's records (the test's own HTTP client logs the headers it receives).
    server_side = ("mcp.server", "toolscout", "uvicorn", "starlette")
    logged = "\n".join(record.getMessage() for record in caplog.records if record.name.startswith(server_side))
    assert "session" in logged.lower()
    for session_id in ids:
        assert session_id not in logged


async def test_handlers_learn_which_client_sent_a_request(tmp_path: Path) -> None:
    from toolscout.serving.clients import authenticated_scope

    (alice, bob) = load_client_tokens(_token_file(tmp_path / "tokens.json")).clients
    assert client_name(authenticated_scope({"type": "http"}, bob)) == "bob"
    assert bob.options == {"comment": "the CI runner"} and alice.options == {}
    assert client_name({"type": "http"}) is None


@pytest.mark.parametrize(("clients", "problem"), [
    ([], "needs a non-empty list 'clients'"),
    ([{"name": "a b", "token": ALICE}], "'name' must be 1-64 letters"),
    ([{"name": "a", "token": ALICE}, {"name": "a", "token": BOB}], "the name 'a' is used twice"),
    ([{"name": "a", "token": ALICE}, {"name": "b", "token": ALICE}], "the same token as another client"),
    ([{"name": "a", "token": "short"}], "at least 16 characters"),
    ([{"name": "a"}], "exactly one of 'token' and 'token_sha256'"),
    ([{"name": "a", "token_sha256": "abc"}], "64 hexadecimal digits"),
])
def test_a_bad_token_file_is_refused_saying_what_is_wrong(tmp_path: Path, clients: list, problem: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"clients": clients}))
    path.chmod(0o600)
    with pytest.raises(ConfigError, match=problem):
        load_client_tokens(path)


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = _token_file(tmp_path / "tokens.json")
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_client_tokens(path)


async def test_serve_takes_its_clients_from_the_token_file(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    tokens = _token_file(tmp_path / "tokens.json")
    command = serve_command(registry, "--transport", "http", "--port", "0", "--max-sessions-per-client", "1")
    env = {key: value for key, value in os.environ.items() if key != "TOOLSCOUT_AUTH_TOKEN"}
    with anyio.fail_after(60):
        async with served_over_http(command, env={**env, "TOOLSCOUT_TOKENS_FILE": str(tokens)}) as url:
            async with httpx.AsyncClient() as http:
                unknown = await _open(http, url, "not-a-known-token-000000")
                alice = await _open(http, url, ALICE)
                bob = await _open(http, url, BOB)
                alice_again = await _open(http, url, ALICE)
                alice_first = await http.post(url, json=PING, headers=_ping(alice.headers["mcp-session-id"], ALICE))
                bob_still = await http.post(url, json=PING, headers=_ping(bob.headers["mcp-session-id"], BOB))
    assert unknown.status_code == 401
    assert alice.status_code == 200 and alice_again.status_code == 200 and bob.status_code == 200
    # At her cap of one, alice's new session replaced her idle one; bob's is his own.
    assert alice_first.status_code == 404 and bob_still.status_code == 200
