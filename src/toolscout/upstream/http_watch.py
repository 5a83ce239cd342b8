"""Noticing at once that an HTTP upstream went away in the middle of a response.

When a server process dies, its connections close at once. The SDK's streamable HTTP client takes
a broken response stream for a network hiccup, though: it waits a second (or what the server
asked), tries to resume with Last-Event-ID, and again, before the call in flight fails. Only the
responses to requests (POST) are watched. A server
that no longer accepts connections will not resume anything, so when a stream breaks the server's
port is tried at once: refused, and `on_gone(reason)` ends the session (calls in flight fail now,
saying so); accepted, and the SDK resumes as it would have.

    client = httpx2.AsyncClient(transport=GoneWatch(httpx2.AsyncHTTPTransport(), on_gone))
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import httpx2

__all__ = ["GoneWatch"]

# How long the check may take: a server on another host answers a connect within this, or is
# left to the SDK's own resumption.
_PROBE_TIMEOUT = 1.0


class GoneWatch(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, on_gone: Callable[[str], None]) -> None:
        self._inner = inner
        self._on_gone = on_gone

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        # Only the response to a request (POST) has a call waiting on it; an idle GET stream that
        # breaks is left to the SDK (a server restarting is reconnected at the next call).
        if request.method == "POST" and isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _Watched(stream, lambda: self._check(request.url))
        return response

    async def _check(self, url: httpx2.URL) -> None:
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            with anyio.fail_after(_PROBE_TIMEOUT):
                connection = await anyio.connect_tcp(url.host, port)
        except OSError as exc:
            self._on_gone(f"the upstream closed the connection during a response and no longer accepts "
                          f"connections on {url.host}:{port} ({exc.strerror or exc})")
        except TimeoutError:
            return
        else:
            await connection.aclose()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Watched(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, on_break: Callable[[], object]) -> None:
        self._inner = inner
        self._on_break = on_break

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except (httpx2.RemoteProtocolError, httpx2.ReadError):
            await self._on_break()  # type: ignore[misc]
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()
