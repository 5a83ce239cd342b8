"""How toolscout reaches an upstream, as a value: a stdio subprocess, streamable HTTP, the older
HTTP+SSE, or a server in this process (tests). The one place the transports are built; the
session (`connection.py`) and the sign-in (`toolscout.oauth.login`) run over whichever this gives.

    transport = open_transport(spec, auth=auth)      # one value per kind of entry
    async with transport.connect() as (read, write):
        ...                                          # or Client(transport.connect(), ...)

Each value is made afresh for each connection and holds what that connection needs; `connect()`
opens it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from toolscout.registry.spec import ServerSpec
from toolscout.upstream.http_watch import GoneWatch
from toolscout.upstream.launch import resolve_command, upstream_environment
from toolscout.upstream.limits import Limits
from toolscout.upstream.self_reference import GATEWAY_MARKER
from toolscout.upstream.stderr import StderrTail
from toolscout.upstream.stdio import stdio_transport

__all__ = ["InMemory", "Sse", "Stdio", "StreamableHttp", "Transport", "http_client", "open_transport"]

# An HTTP upstream's client: the MCP transports' own defaults. Other operations are bounded at 30 s;
# a read may wait 5 minutes, since a server holds a response stream open between events. Redirects
# are not followed by the client: the transports follow them within the endpoint's origin only.
_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0


ResponseHook = Callable[[httpx2.Response], Awaitable[None]]
Streams = tuple[Any, Any]


class Transport(Protocol):
    """A way to one upstream; `connect()` gives the (read, write) streams a session runs over."""

    def connect(self) -> AbstractAsyncContextManager[Streams]: ...


def http_client(
    headers: Mapping[str, str], on_response: ResponseHook | None = None, auth: httpx2.Auth | None = None,
    on_gone: Callable[[str], None] | None = None,
) -> httpx2.AsyncClient:
    """The client an HTTP upstream is reached through (to be entered as a context manager);
    `on_response` sees every response (the SDK reports an HTTP error status as a generic error);
    `auth`: its OAuth sign-in, if any (`toolscout.oauth.provider`); `on_gone(reason)` hears that
    the server went away in the middle of a response (`toolscout.upstream.http_watch`)."""
    return httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT),
        event_hooks={"response": [on_response]} if on_response is not None else None,
        auth=auth,
        transport=GoneWatch(httpx2.AsyncHTTPTransport(), on_gone) if on_gone is not None else None,
    )


@dataclass(frozen=True)
class Stdio:
    """A local upstream run as a subprocess of ours. Its stderr goes to `tail`, its stdout lines are
    capped at `max_line_bytes`, and `on_fault(reason)` hears why the transport ended a session when
    it knows better than "closed"."""

    spec: ServerSpec
    tail: StderrTail
    on_fault: Callable[[str], None]
    max_line_bytes: int = Limits().max_line_bytes
    max_result_bytes: int = Limits().max_result_bytes

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        transport = stdio_transport(
            resolve_command(self.spec),
            self.spec.args,
            # The marker tells a toolscout started by any route that a gateway started it.
            env={**upstream_environment(self.spec), GATEWAY_MARKER: str(os.getpid())},
            cwd=self.spec.cwd,
            stderr=self.tail.writer(),
            max_line_bytes=self.max_line_bytes,
            max_result_bytes=self.max_result_bytes,
            on_fault=self.on_fault,
        )
        async with AsyncExitStack() as stack:
            try:
                streams = await stack.enter_async_context(transport)
            finally:
                # The child holds its own copy now (or was never spawned); ours would hide EOF.
                self.tail.release_writer()
            yield streams


@dataclass(frozen=True)
class StreamableHttp:
    """A remote upstream over streamable HTTP; its responses pass `on_response`, and `on_gone`
    hears that it went away in the middle of one."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    on_response: ResponseHook | None = None
    auth: httpx2.Auth | None = None
    on_gone: Callable[[str], None] | None = None

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        async with http_client(self.headers, self.on_response, self.auth, self.on_gone) as http, \
                streamable_http_client(self.url, http_client=http) as (read, write):
            yield read, write


@dataclass(frozen=True)
class Sse:
    """A remote upstream over the older HTTP+SSE transport."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: httpx2.Auth | None = None

    def connect(self) -> AbstractAsyncContextManager[Streams]:
        return sse_client(self.url, headers=dict(self.headers), auth=self.auth)


@dataclass(frozen=True)
class InMemory:
    """An MCP server object of this process (tests: an upstream with no process or port)."""

    server: Any

    def connect(self) -> AbstractAsyncContextManager[Streams]:
        # The SDK's own in-memory transport (what `Client(server)` uses), not exported by name.
        from mcp.client._memory import InMemoryTransport

        return InMemoryTransport(self.server)


def open_transport(
    spec: ServerSpec,
    *,
    tail: StderrTail | None = None,
    on_fault: Callable[[str], None] = lambda reason: None,
    limits: Limits = Limits(),
    on_http_response: ResponseHook | None = None,
    auth: httpx2.Auth | None = None,
    on_gone: Callable[[str], None] | None = None,
) -> Transport:
    """The transport to the upstream `spec` names (a stdio entry needs the `tail` its stderr goes to)."""
    if spec.transport == "stdio":
        assert tail is not None, "a stdio upstream needs the tail its stderr goes to"
        return Stdio(spec, tail, on_fault, limits.max_line_bytes, limits.max_result_bytes)
    if spec.transport == "http":
        return StreamableHttp(spec.url or "", spec.headers, on_http_response, auth, on_gone)
    return Sse(spec.url or "", spec.headers, auth)
