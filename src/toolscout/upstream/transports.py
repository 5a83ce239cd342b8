"""How toolscout reaches an upstream, by its registry entry: a stdio subprocess, streamable HTTP,
or the older HTTP+SSE. The one place the transports are built; `connection.py` runs the session
over whichever this gives."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from toolscout.registry.loading import ServerSpec, resolve_command, upstream_environment
from toolscout.upstream.http_watch import GoneWatch
from toolscout.upstream.self_reference import GATEWAY_MARKER
from toolscout.upstream.limits import Limits
from toolscout.upstream.stderr import StderrTail
from toolscout.upstream.stdio import stdio_transport

__all__ = ["http_client", "open_transport"]

# An HTTP upstream's client: the MCP transports' own defaults. Other operations are bounded at 30 s;
# a read may wait 5 minutes, since a server holds a response stream open between events. Redirects
# are not followed by the client: the transports follow them within the endpoint's origin only.
_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0


ResponseHook = Callable[[httpx2.Response], Awaitable[None]]


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


@asynccontextmanager
async def open_transport(
    spec: ServerSpec,
    *,
    tail: StderrTail | None,
    max_line_bytes: int,
    on_fault: Callable[[str], None],
    on_http_response: ResponseHook | None = None,
    max_result_bytes: int = Limits().max_result_bytes,
    auth: httpx2.Auth | None = None,
    on_gone: Callable[[str], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) to the upstream `spec` names. A stdio upstream writes its stderr
    to `tail`, its stdout lines are capped at `max_line_bytes`, and `on_fault(reason)` hears why
    the transport ended a session when it knows better than "closed". A streamable HTTP
    upstream's responses pass `on_http_response`, and `on_gone(reason)` hears that it went away
    in the middle of a response."""
    async with AsyncExitStack() as stack:
        if spec.transport == "stdio":
            assert tail is not None
            transport = stdio_transport(
                resolve_command(spec),
                spec.args,
                # The marker tells a toolscout started by any route that a gateway started it.
                env={**upstream_environment(spec), GATEWAY_MARKER: str(os.getpid())},
                cwd=spec.cwd,
                stderr=tail.writer(),
                max_line_bytes=max_line_bytes,
                max_result_bytes=max_result_bytes,
                on_fault=on_fault,
            )
            try:
                read, write = await stack.enter_async_context(transport)
            finally:
                # The child holds its own copy now (or was never spawned); ours would hide EOF.
                tail.release_writer()
        elif spec.transport == "http":
            http = await stack.enter_async_context(http_client(spec.headers, on_http_response, auth, on_gone))
            read, write = await stack.enter_async_context(streamable_http_client(spec.url or "", http_client=http))
        else:
            read, write = await stack.enter_async_context(
                sse_client(spec.url or "", headers=dict(spec.headers), auth=auth)
            )
        yield read, write
