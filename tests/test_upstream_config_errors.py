"""Upstream failures that say what to fix: configuration errors fail at once, are not retried, and
name the cause and the setting; what an upstream sends back in an error is capped and carries no
path of this machine.

The HTTP upstream is the weather test server behind a real bearer-token check, served by uvicorn
on a free port of 127.0.0.1.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from support.gateway_session import gateway_session, in_process_of, text_of
from support.registries import fast_search_settings, python_server, write_registry
from upstreams import weather_server

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.spec import ServerSpec
from toolscout.search import ToolSearch
from toolscout.upstream import State
from toolscout.upstream.error_text import MAX_ERROR_CHARS, upstream_error_text
from toolscout.upstream.failures import is_configuration_error

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token-of-the-test"


class BearerCheck:
    """ASGI middleware: 401 without the right bearer token, 403 for a token that may read nothing."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            status = None if auth == f"Bearer {TOKEN}" else 403 if auth == "Bearer read-nothing" else 401
            if status is not None:
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
async def guarded_url() -> AsyncIterator[str]:
    sock = socket.create_server(("127.0.0.1", 0))
    app = BearerCheck(weather_server.server.streamable_http_app())
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        server.should_exit = True


async def _statuses(specs: list[ServerSpec], *, not_retried: tuple[str, ...]) -> dict[str, Any]:
    """Statuses once every upstream settled; `not_retried` must be given up on at once although
    restarts are allowed (the supervisor stops for a configuration error)."""
    options = GatewayOptions(start_timeout=10, max_restarts=3)
    async with Gateway(specs, ToolSearch(fast_search_settings()), options) as gateway:
        await gateway.ready(15)
        for name in not_retried:
            await gateway.wait_finished(name)
        statuses = {s.name: s for s in gateway.statuses()}
    return statuses


async def test_http_credentials_and_endpoints_are_configuration_errors_that_name_the_setting(guarded_url: str) -> None:
    specs = [
        ServerSpec(name="good", transport="http", url=f"{guarded_url}/mcp", headers={"Authorization": f"Bearer {TOKEN}"},
                   source="servers.json"),
        ServerSpec(name="github", transport="http", url=f"{guarded_url}/mcp", headers={"Authorization": "Bearer wrong"},
                   source="servers.json"),
        ServerSpec(name="anonymous", transport="http", url=f"{guarded_url}/mcp", source="servers.json"),
        ServerSpec(name="readonly", transport="http", url=f"{guarded_url}/mcp",
                   headers={"Authorization": "Bearer read-nothing"}, source="servers.json"),
    ]
    with anyio.fail_after(40):
        statuses = await _statuses(specs, not_retried=("github", "anonymous", "readonly"))
    assert statuses["good"].state is State.UP
    github = statuses["github"]
    assert github.state is State.DOWN and github.configuration_error and github.restarts == 0
    assert "rejected the credentials (HTTP 401): check headers.Authorization of server 'github' in servers.json" in github.reason
    assert "not retried" in github.reason
    assert "add headers.Authorization" in statuses["anonymous"].reason
    assert "refused access (HTTP 403)" in statuses["readonly"].reason


async def test_a_wrong_path_is_a_404_naming_the_url_setting(guarded_url: str) -> None:
    # Past the token check, the MCP app itself has nothing at /nothing-here.
    spec = ServerSpec(name="wrong", transport="http", url=f"{guarded_url}/nothing-here",
                      headers={"Authorization": f"Bearer {TOKEN}"}, source="servers.json")
    with anyio.fail_after(30):
        status = (await _statuses([spec], not_retried=("wrong",)))["wrong"]
    assert status.configuration_error and status.restarts == 0
    assert f"has no MCP endpoint at {guarded_url}/nothing-here (HTTP 404): check 'url' of server 'wrong'" in status.reason


async def test_a_missing_command_and_a_malformed_url_fail_at_once_and_the_agent_is_not_told_to_retry(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "notes": python_server("notes_server.py"),
        "ghost": {"command": "no-such-program-toolscout-test"},
        "typo": {"url": "localhost:8080/mcp"},
    })
    with anyio.fail_after(40):
        async with gateway_session(registry, max_restarts=3) as (gateway, client):
            for name in ("ghost", "typo"):
                await gateway.wait_finished(name)  # restarts are allowed, yet not tried
            statuses = {s.name: s for s in gateway.statuses()}
            result = await client.call_tool("execute_tool", {"name": "ghost__anything"})
    ghost, typo = statuses["ghost"], statuses["typo"]
    assert ghost.configuration_error and ghost.restarts == 0
    assert "command 'no-such-program-toolscout-test' not found" in ghost.reason
    assert typo.configuration_error and "'url' 'localhost:8080/mcp' is not an http:// or https:// URL" in typo.reason
    assert result.is_error
    text = text_of(result)
    assert "not found" in text and "A person must change toolscout's configuration" in text
    assert "Try again later" not in text


async def test_an_upstream_echoing_a_megabyte_error_reaches_the_agent_capped_without_local_paths(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"hostile": python_server("hostile_server.py")})
    big = "x" * 1_000_000
    with anyio.fail_after(60):
        async with gateway_session(registry, in_process=in_process_of(registry)) as (_gateway, client):
            results = [
                await client.call_tool("execute_tool", {"name": f"hostile__{tool}", "arguments": {"text": big}})
                for tool in ("fail_echoing", "reject_echoing")
            ]
    home = str(Path.home())
    for result in results:
        assert result.is_error
        text = text_of(result)
        assert len(text) < MAX_ERROR_CHARS + 600, len(text)
        assert "cut to the first" in text
        assert home not in text and ".cache/uv" not in text
        assert "…/site-packages/tool.py" in text
        assert "Try again later" not in text  # the upstream answered: the same call fails the same way


async def test_terminal_escapes_in_an_upstreams_errors_and_results_reach_the_agent_as_codes(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"hostile": python_server("hostile_server.py")})
    with anyio.fail_after(60):
        async with gateway_session(registry, in_process=in_process_of(registry)) as (_gateway, client):
            results = {
                tool: await client.call_tool("execute_tool", {"name": f"hostile__{tool}", "arguments": {}})
                for tool in ("fail_with_escapes", "reject_with_escapes", "answer_with_escapes")
            }
            prompt = await client.get_prompt("hostile__prompt_with_escapes", {})
            note = await client.read_resource("toolscout://hostile/notes://escapes")
    # A prompt's text and a resource's, relayed for the client, are held to the same rule.
    relayed = {"prompt": prompt.messages[0].content.text, "resource": note.contents[0].text}
    for tool, result in results.items():
        text = text_of(result)
        assert result.is_error is (tool != "answer_with_escapes"), text
        relayed[tool] = text
    for text in relayed.values():
        # No ESC, BEL or C1 control reaches the agent raw; each is shown as its code.
        assert not any(char in text for char in "\x1b\x07\x9b"), repr(text)
        assert "printer offline \\u001b]52;c;cm0gLXJmIH4K\\u0007\\u001b]0;PWNED\\u0007\\u001b[2J" in text
        assert "check cable" in text and "\\u009b2J" in text


def test_error_text_keeps_a_short_message_and_the_package_part_of_paths() -> None:
    assert upstream_error_text("no note with id 3") == "no note with id 3"
    shortened = upstream_error_text('File "/opt/x/lib/python3.12/site-packages/pkg/m.py", line 1')
    assert shortened == 'File "…/site-packages/pkg/m.py", line 1'
    assert upstream_error_text(f"{Path.home()}/notes/a.txt missing") == "~/notes/a.txt missing"
    assert upstream_error_text("line one\n\tline two\r\n") == "line one\n\tline two\r\n"
    assert upstream_error_text("bell\x07 back\rover") == "bell\\u0007 back\\u000dover"


async def test_transient_failures_stay_retryable() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    spec = ServerSpec(name="gone", transport="http", url=f"http://127.0.0.1:{port}/mcp")
    async with Gateway([spec], ToolSearch(fast_search_settings()), GatewayOptions(start_timeout=10, max_restarts=0)) as gw:
        await gw.ready(15)
        (status,) = gw.statuses()
    assert status.state is State.DOWN and not status.configuration_error
    assert not is_configuration_error(ConnectionRefusedError("refused"))
    assert is_configuration_error(FileNotFoundError(2, "No such file", "uvx"))


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A key and a certificate for 127.0.0.1 that no CA signed."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = folder / "key.pem", folder / "cert.pem"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


async def test_a_certificate_that_does_not_verify_is_a_configuration_error(tmp_path: Path) -> None:
    key_file, cert_file = _self_signed(tmp_path)
    sock = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(weather_server.server.streamable_http_app(), log_level="warning", lifespan="on",
                            ssl_keyfile=str(key_file), ssl_certfile=str(cert_file))
    server = uvicorn.Server(config)
    url = f"https://127.0.0.1:{sock.getsockname()[1]}/mcp"
    spec = ServerSpec(name="selfsigned", transport="http", url=url, source="servers.json")
    with anyio.fail_after(40):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            status = (await _statuses([spec], not_retried=("selfsigned",)))["selfsigned"]
            server.should_exit = True
    assert status.configuration_error
    assert f"the TLS certificate of {url} did not verify" in status.reason
    assert "check 'url' of server 'selfsigned' in servers.json" in status.reason


async def test_an_sse_upstream_that_rejects_the_credentials_is_a_configuration_error() -> None:
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(BearerCheck(weather_server.server.sse_app()), log_level="warning", lifespan="on"))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/sse"
    spec = ServerSpec(name="legacy", transport="sse", url=url, headers={"Authorization": "Bearer wrong"}, source="servers.json")
    with anyio.fail_after(40):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            status = (await _statuses([spec], not_retried=("legacy",)))["legacy"]
            server.should_exit = True
    assert "rejected the credentials (HTTP 401): check headers.Authorization of server 'legacy'" in status.reason
