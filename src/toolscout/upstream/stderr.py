"""Capture of a stdio upstream's stderr.

A server that exits at start-up usually says why on stderr (a missing package, a TLS failure of
uvx, a bad argument), while the MCP client only sees "connection closed". The child writes into a
pipe we drain continuously: the last lines are kept for error messages and every line goes to our
log at debug level, so a chatty upstream neither fills a pipe nor a disk.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable
from typing import TextIO

import anyio

__all__ = ["StderrTail"]

logger = logging.getLogger(__name__)

_READ_SIZE = 65536
# A single line longer than this is cut: the tail is for humans, not for a log flood.
_MAX_LINE = 2000


class StderrTail:
    """A pipe for one child's stderr, drained by `pump()`; `tail()` returns its last lines."""

    def __init__(self, server: str, *, redact: Callable[[str], str] = str, max_lines: int = 20) -> None:
        self.server = server
        # Upstreams may echo their environment (tokens included) on stderr.
        self._redact = redact
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._partial = ""
        self._read_fd, write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        self._writer: TextIO | None = os.fdopen(write_fd, "w")
        self.closed = anyio.Event()

    def writer(self) -> TextIO:
        """The write end to hand to the child process as its stderr."""
        assert self._writer is not None, "the write end was already released"
        return self._writer

    def release_writer(self) -> None:
        """Close our copy of the write end once the child holds its own, so EOF can arrive."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def tail(self) -> str:
        lines = list(self._lines)
        if self._partial.strip():
            lines.append(self._partial[:_MAX_LINE])
        return self._redact("\n".join(lines))

    async def pump(self) -> None:
        """Read until every holder of the write end has closed it (the process tree exited)."""
        try:
            while True:
                await anyio.wait_readable(self._read_fd)
                try:
                    chunk = os.read(self._read_fd, _READ_SIZE)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                self._absorb(chunk.decode("utf-8", errors="replace"))
        finally:
            self.close()

    def close(self) -> None:
        """Release both ends of the pipe (idempotent; also for a pump that never ran)."""
        self.release_writer()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1
        self.closed.set()

    def _absorb(self, text: str) -> None:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()[: _MAX_LINE * 4]
        for line in lines:
            line = line.rstrip("\r")[:_MAX_LINE]
            if line.strip():
                self._lines.append(line)
                logger.debug("[%s stderr] %s", self.server, self._redact(line))
