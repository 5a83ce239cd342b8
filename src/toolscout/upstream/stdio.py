"""The stdio transport to an upstream: its process tree in a group of its own, its stdout bounded.

Why not the SDK's `stdio_client`: it buffers a line of stdout without limit (one endless line
from a broken server fills the gateway's memory), and it learns that the server died only from
end-of-file on stdout, which never comes while a grandchild (uvx -> python, npx -> node) still
holds the pipe. Here:

- the upstream starts in a new session, so its whole tree is one process group, and leaving the
  transport always kills that group (SIGTERM, then SIGKILL), even after the leader has exited;
- stdout is read line by line with a cap (`max_line_bytes`); a longer line, or a long run of lines
  that are not JSON-RPC, ends the session with a reason (`on_fault`) instead of growing memory;
- the leader's exit ends the session at once and kills the rest of its group.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

from toolscout.errors import StdoutFault
from toolscout.upstream.limits import DEFAULT_MAX_LINE_BYTES, Limits, human_size
from toolscout.upstream.oversized import OversizedLine, salvage

__all__ = ["MAX_JUNK_LINES", "LineReader", "end_all_process_groups", "stdio_transport"]

logger = logging.getLogger(__name__)

# Consecutive stdout lines that are not JSON-RPC before the upstream is judged broken. A few are
# common (a banner printed at start-up); thousands in a row are a flood.
MAX_JUNK_LINES = 1000
_READ_SIZE = 65536
# Of a line over the limit, the last bytes kept (where some serializers put the request id).
_TAIL_BYTES = 4096
# After stdin closes, how long a well-behaved server gets to exit on its own.
_EXIT_GRACE = 2.0
# After SIGTERM to the group, how long before SIGKILL.
_TERM_GRACE = 2.0
_WRITER_FLUSH = 0.5
# After the leader exits, how long its output may take to end before the session is ended anyway.
_LAST_WORDS = 0.5
# Polling interval for the leader's exit where no pidfd is available (not Linux).
_EXIT_POLL = 0.05


class LineReader:
    """Splits a byte stream into lines, never buffering more than `max_bytes` of one.

    A longer line is returned as an `OversizedLine` (its start, its last bytes, its size) once it
    ends: the middle is read and dropped. One that goes on past `skip_factor` times the limit is
    an endless line, not a big message: `StdoutFault`.
    """

    def __init__(self, stream: anyio.abc.ByteReceiveStream, max_bytes: int, *, skip_factor: int = 16) -> None:
        self._stream = stream
        self._max = max_bytes
        self._max_skipped = max_bytes * skip_factor
        self._buffer = bytearray()
        self._scanned = 0

    async def next_line(self) -> bytes | OversizedLine | None:
        """The next line without its newline; None at end of stream."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                return line
            if len(self._buffer) > self._max:
                return await self._skip_rest()
            self._scanned = len(self._buffer)
            chunk = await self._receive()
            if chunk is None:
                if self._buffer:
                    line, self._buffer = bytes(self._buffer), bytearray()
                    return line
                return None
            self._buffer += chunk

    async def _receive(self) -> bytes | None:
        try:
            return await self._stream.receive(_READ_SIZE)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return None

    async def _skip_rest(self) -> OversizedLine:
        """Keep the start of the line in the buffer, drop its middle, keep its last bytes."""
        head = bytes(self._buffer[: self._max])
        tail = bytes(self._buffer[-_TAIL_BYTES:])
        size = len(self._buffer)
        self._buffer.clear()
        while True:
            chunk = await self._receive()
            if chunk is None:
                return OversizedLine(head, tail, size)
            end = chunk.find(b"\n")
            if end >= 0:
                self._buffer += chunk[end + 1:]
                self._scanned = 0
                return OversizedLine(head, (tail + chunk[:end])[-_TAIL_BYTES:], size + end)
            size += len(chunk)
            tail = (tail + chunk)[-_TAIL_BYTES:]
            if size > self._max_skipped:
                raise StdoutFault(
                    f"wrote a line over {human_size(self._max_skipped)} on stdout, {self._max_skipped // self._max} "
                    f"times the {human_size(self._max)} limit on one message (max_line_bytes)"
                )


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        # Returned, not raised: the session hands it to the message handler, which logs it.
        return exc


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    stderr: TextIO,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_result_bytes: int = Limits().max_result_bytes,
    on_fault: Callable[[str], None] = lambda reason: None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the upstream and yield (read, write) streams for an MCP client session."""
    process = await anyio.open_process(
        [command, *args], env=dict(env), cwd=cwd, stderr=stderr, start_new_session=sys.platform != "win32"
    )
    _live_groups.add(process.pid)
    # Nothing may await between the spawn and the try below, or a cancellation would leak the child.
    pipes = _Pipes(process, max_line_bytes=max_line_bytes, max_result_bytes=max_result_bytes, on_fault=on_fault)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipes.read_stdout)
            tg.start_soon(pipes.write_stdin)
            tg.start_soon(pipes.watch_exit)
            try:
                yield pipes.read_stream, pipes.write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await _shutdown(process, pipes.write_stream, pipes.writer_done)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            # Backstop for a cancellation that came before the task group took over.
            await _kill_group(process)
            _live_groups.discard(process.pid)
            await pipes.aclose()
            _close_transport(process)


class _Pipes:
    """The streams between a session and the upstream process, and the three tasks that move
    messages along them and watch the process end."""

    def __init__(
        self, process: anyio.abc.Process, *, max_line_bytes: int, max_result_bytes: int, on_fault: Callable[[str], None]
    ) -> None:
        self.process = process
        self.max_line_bytes, self.max_result_bytes = max_line_bytes, max_result_bytes
        self.on_fault = on_fault
        self.read_writer, self.read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_stream, self.write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        self.writer_done, self.reader_done, self.exited = anyio.Event(), anyio.Event(), anyio.Event()

    def end_session(self, reason: str | None) -> None:
        if reason:
            self.on_fault(reason)
        self.read_writer.close()

    async def end_session_once_exit_is_known(self) -> None:
        # A pipe that closes usually means the process is exiting: wait a moment for how it
        # ended, so that the calls failing now can say it.
        with anyio.move_on_after(_LAST_WORDS):
            await self.exited.wait()
        self.end_session(None)

    async def read_stdout(self) -> None:
        assert self.process.stdout is not None
        reader, junk = LineReader(self.process.stdout, self.max_line_bytes), 0
        try:
            while (line := await reader.next_line()) is not None:
                if isinstance(line, OversizedLine):
                    await self._pass_oversized(line)
                    continue
                if not line.strip():
                    continue
                item = _parse(line)
                junk = junk + 1 if isinstance(item, Exception) else 0
                if junk >= MAX_JUNK_LINES:
                    raise StdoutFault(f"wrote {MAX_JUNK_LINES} lines in a row that are not JSON-RPC on stdout")
                await self.read_writer.send(item)
            await self.end_session_once_exit_is_known()
        except StdoutFault as exc:
            self.end_session(str(exc))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.reader_done.set()

    async def _pass_oversized(self, line: OversizedLine) -> None:
        salvaged = salvage(line, max_result_bytes=self.max_result_bytes)
        if salvaged is None:
            logger.warning("an upstream wrote a message of %s on stdout, over the %s limit "
                           "(max_line_bytes), that answers no call; dropped it",
                           human_size(line.size), human_size(self.max_line_bytes))
        else:
            await self.read_writer.send(salvaged)

    async def write_stdin(self) -> None:
        assert self.process.stdin is not None
        try:
            async with self.write_reader:
                async for message in self.write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await self.process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The upstream stopped reading: end the session rather than leave requests hanging.
            await self.end_session_once_exit_is_known()
        finally:
            self.writer_done.set()

    async def watch_exit(self) -> None:
        self.on_fault(f"the upstream process {await _wait_exit(self.process)}")
        self.exited.set()
        # The leader is gone. Its last words are read if stdout ends soon; a grandchild may hold
        # stdout open for ever, though, so the session ends here regardless.
        with anyio.move_on_after(_LAST_WORDS):
            await self.reader_done.wait()
        self.end_session(None)
        await _kill_group(self.process)

    async def aclose(self) -> None:
        for stream in (self.read_stream, self.read_writer, self.write_stream, self.write_reader):
            await stream.aclose()


async def _shutdown(process: anyio.abc.Process, write_stream: Any, writer_done: anyio.Event) -> None:
    """The MCP shutdown order: stop sending, close stdin, wait a little, then end the whole tree."""
    write_stream.close()
    with anyio.move_on_after(_WRITER_FLUSH):
        await writer_done.wait()
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(_EXIT_GRACE):
        await _wait_exit(process)
    # Always, even when the leader exited on its own: its children may not have.
    await _kill_group(process)
    if process.stdout is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()


async def _wait_exit(process: anyio.abc.Process) -> str:
    """Return once the leader has exited, saying how (not `process.wait()`, which also waits for
    pipe EOF, and the exit status is peeked at without reaping: the event loop reaps the child)."""
    pidfd = -1
    if hasattr(os, "pidfd_open"):
        with suppress(OSError):
            pidfd = os.pidfd_open(process.pid)
    if pidfd < 0:
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL)
        return _exit_words(process.returncode)
    try:
        await anyio.wait_readable(pidfd)
        try:
            status = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT)
        except (ChildProcessError, OSError):
            status = None  # already reaped by the event loop
        if status is None:
            # The event loop's child watcher reaped it first; its return code lands in a moment.
            with anyio.move_on_after(1):
                while process.returncode is None:
                    await anyio.sleep(_EXIT_POLL / 5)
            return _exit_words(process.returncode)
        return _exit_words(status.si_status if status.si_code == os.CLD_EXITED else -status.si_status)
    finally:
        os.close(pidfd)


def _exit_words(code: int | None) -> str:
    if code is None:
        return "exited"
    if code < 0:
        with suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


async def _kill_group(process: anyio.abc.Process) -> None:
    """SIGTERM every process of the upstream's group, SIGKILL what is left after a grace period."""
    if sys.platform == "win32":
        with suppress(ProcessLookupError, OSError):
            process.kill()
        return
    pgid = process.pid  # the leader's pid is its group's id (new session); valid after it exits
    if not _signal_group(pgid, signal.SIGTERM):
        return
    with anyio.move_on_after(_TERM_GRACE):
        while _signal_group(pgid, 0):
            _ = process.returncode  # lets the event loop reap a zombie leader
            await anyio.sleep(0.01)
        return
    _signal_group(pgid, signal.SIGKILL)


# The process groups of every stdio upstream started and not yet known to be gone: what a gateway
# that must exit now (a second signal, a shutdown past its bound) ends without the event loop.
_live_groups: set[int] = set()


def end_all_process_groups(grace: float) -> None:
    """SIGTERM every upstream's process group, SIGKILL what is left after `grace` seconds.

    Synchronous and safe from any thread: it is the last thing a gateway does when it cannot wait
    for the ordered shutdown (MCP's: stdin closed, a grace period, then the group).
    """
    if sys.platform == "win32":
        return  # the event loop's shutdown kills them; there are no process groups to reach
    groups = [pgid for pgid in list(_live_groups) if _signal_group(pgid, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    while groups and time.monotonic() < deadline:
        time.sleep(0.02)
        groups = [pgid for pgid in groups if _group_left(pgid)]
    for pgid in groups:
        _signal_group(pgid, signal.SIGKILL)


def _group_left(pgid: int) -> bool:
    """Whether any process of the group is left, reaping the leader if it is our exited child."""
    with suppress(ChildProcessError, OSError):
        os.waitpid(pgid, os.WNOHANG)
    return _signal_group(pgid, 0)


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False once no process of the group is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # zombies or members we may not signal: the group still exists
    return True


def _close_transport(process: anyio.abc.Process) -> None:
    # The asyncio subprocess transport otherwise warns at garbage collection.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with suppress(PermissionError):
            close()
