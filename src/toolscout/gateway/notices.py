"""What upstreams announce for clients (log messages, updated resources), handed to listeners
from a task of its own: the pool reports a notice without waiting, and a slow listener delays
only the notices after it, never an upstream's session."""

from __future__ import annotations

import logging
from typing import Any

import anyio

from toolscout.gateway.listeners import NoticeListener, tell_all

__all__ = ["Notices"]

logger = logging.getLogger(__name__)

# Notices waiting for their listeners; beyond this (a flood of log messages) new ones are dropped.
_PENDING_NOTICES = 256


class Notices:
    def __init__(self) -> None:
        self._listeners: list[NoticeListener] = []
        self._in, self._out = anyio.create_memory_object_stream[tuple[str, Any]](_PENDING_NOTICES)

    def add_listener(self, listener: NoticeListener) -> None:
        self._listeners.append(listener)

    def put(self, server: str, notification: Any) -> None:
        """Queue `notification` of `server` for the listeners; dropped when they are far behind."""
        try:
            self._in.send_nowait((server, notification))
        except anyio.WouldBlock:
            logger.debug("notices are behind; dropped one from upstream '%s'", server)

    async def deliver(self) -> None:
        """Hand each queued notice to every listener, for as long as the task runs."""
        async for server, notification in self._out:
            await tell_all(self._listeners, server, notification, what="notice")
