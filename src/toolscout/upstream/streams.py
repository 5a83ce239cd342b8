"""Noticing that an upstream's side of a session has ended, whatever the transport.

The SDK's client session answers pending requests with "connection closed" when its read stream
ends, but tells nobody else. Wrapping the transport's read stream lets the connection learn it at
once (a stdio server exited, an HTTP session vanished) and mark the upstream down.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio

__all__ = ["EndWatchingStream"]


class EndWatchingStream:
    """A read stream that sets `ended` when the stream it wraps reaches its end or is closed."""

    def __init__(self, stream: Any, ended: anyio.Event) -> None:
        self._stream = stream
        self._ended = ended

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> EndWatchingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._ended.set()
        await self._stream.aclose()

    async def __aenter__(self) -> EndWatchingStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        # e.g. `last_context`, which the SDK's dispatcher reads off context-aware streams.
        return getattr(self._stream, name)
