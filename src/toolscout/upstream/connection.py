"""One upstream MCP server's lifecycle: connect, serve, go down with the reason recorded.

`Upstream.run()` is a single connection attempt: it connects (bounded by the start timeout),
lists what the upstream offers (`listing.py`), then serves until the upstream goes away or
`stop()` is called, and returns with the upstream marked down and the reason recorded. It never
raises on an upstream's failure, so a supervisor can simply call it again to restart (see
`pool.py`). Clients' requests go through `upstream.session` (`session.py`), which sends them over
the session connected at the time.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Protocol

import anyio
import httpx2
import mcp_types as types
from mcp import Client

from toolscout import __version__
from toolscout.errors import SignInRequired, UpstreamConfigurationError, UpstreamError
from toolscout.registry.spec import ServerSpec
from toolscout.secrets import Redaction
from toolscout.upstream.defaults import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT
from toolscout.upstream.error_text import upstream_error_text
from toolscout.upstream.failures import CONFIGURATION_NOTE, StartFailure, classify_start_failure
from toolscout.upstream.launch import resolve_command
from toolscout.upstream.limits import Limits
from toolscout.upstream.listing import Listing, Subscriptions
from toolscout.upstream.offerings import UpstreamOffer
from toolscout.upstream.self_reference import local_gateway, refused_as_nested, self_reference
from toolscout.upstream.session import NoticeFn, UpstreamSession
from toolscout.upstream.status import SKIPPED, State, UpstreamStatus, describe_failure, summarize
from toolscout.upstream.stderr import StderrTail
from toolscout.upstream.streams import EndWatchingStream
from toolscout.upstream.transports import Transport, open_transport
from toolscout.wording import plural

__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_PING_TIMEOUT", "DEFAULT_START_TIMEOUT", "Upstream"]

logger = logging.getLogger(__name__)


class SignIn(Protocol):
    """The OAuth sign-in of a remote upstream (`toolscout.oauth.provider.ToolscoutOAuth`): an
    httpx2.Auth whose tokens are kept in a file (`storage.path`), which `toolscout login` rewrites."""

    storage: Any

    def auth_flow(self, request: httpx2.Request) -> Any: ...


# The sign-in of an entry, made again for each connection so that it reads the stored tokens afresh.
SignInFor = Callable[[ServerSpec], "SignIn | None"]

# After a stdio upstream stops, how long to wait for the last lines of its stderr.
_STDERR_GRACE = 2.0
# After a call times out, how long the upstream has to answer a ping. One that does not is wedged
# (alive, but no longer reading or answering) and is restarted like one that crashed.
DEFAULT_PING_TIMEOUT = 5.0
# How often an upstream waiting for a sign-in looks whether its token file changed.
_SIGN_IN_POLL = 2.0

# The last lines of a stdio upstream's stderr kept in its reason (which an agent may read).
_MAX_STDERR_IN_REASON = 2000


def _is_sign_in_required(exc: BaseException) -> bool:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return isinstance(exc, SignInRequired)


class Upstream:
    """One upstream server; the pool owns one per registry entry."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        limits: Limits = Limits(),
        on_change: Callable[[], None] = lambda: None,
        on_notice: NoticeFn = lambda server, notification: None,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
        transport: Transport | None = None,
        sign_in: SignInFor = lambda spec: None,
    ) -> None:
        """`transport`: how to reach it, for an upstream no registry entry can describe (an MCP
        server of this process, `transports.InMemory`); else the entry's (`open_transport`).
        `sign_in`: the OAuth sign-in of a remote entry, if it has one (`toolscout.oauth.provider`)."""
        self.spec = spec
        self._given_transport = transport
        self._sign_in_for = sign_in
        self._redaction = Redaction(spec.secrets)
        self._auth = sign_in(spec)  # made again for each connection (`_transport`)
        self.start_timeout = start_timeout
        self.limits = limits
        # Why the transport ended the current session, when it knows better than "closed".
        self._fault: str | None = None
        # Set when the session ended because the upstream lost it: the supervisor reconnects at once.
        self.reconnect_now = False
        # Set when the upstream needs a person to sign in (OAuth): retrying is pointless until then.
        self.needs_sign_in = False
        self._stamp_at_start: int | None = None
        self._on_change = on_change
        self._state_changed = anyio.Event()
        self._state = State.STARTING
        self.reason: str | None = None
        # True once a start failed for a configuration error: starting again cannot help
        # (`toolscout.upstream.failures`); the supervisor does not retry it.
        self.configuration_error = False
        # The last HTTP error status this upstream answered while starting (the SDK reports it
        # as a generic error; the status says whether the URL or the credentials are wrong).
        self._http_error_status: int | None = None
        self._instructions: str | None = None
        self._info: types.Implementation | None = None
        self._stop = anyio.Event()
        self._session_scope: anyio.CancelScope | None = None
        self.session, self.listing = self._parts(spec.timeout or call_timeout, ping_timeout, on_notice)
        self._was_up, self._up_at = False, 0.0
        self.restarts = 0  # counted by the supervisor
        # Why the session before the latest restart ended (shown while it is up again).
        self.last_restart_reason: str | None = None
        self.gave_up = False
        # What ended the latest attempt, if it raised (the supervisor asks whether it is worth retrying).
        self.failure: BaseException | None = None
        # When the supervisor tries again (seconds since the epoch) while it waits to, else None.
        self.next_attempt: float | None = None
        # Set when a search or call needs this upstream while it is down: the supervisor's wait ends.
        self.wanted = anyio.Event()
        # Set once the first attempt has either connected or failed.
        self.settled = anyio.Event()
        # Set by the supervisor when it will not run this upstream again.
        self.finished = anyio.Event()

    def _parts(self, call_timeout: float, ping_timeout: float, on_notice: NoticeFn) -> tuple[UpstreamSession, Listing]:
        """Its session (clients' requests, over whichever session is connected) and its listing
        (what it offers, listed at connection and after each change it announces)."""
        subscriptions = Subscriptions()
        session = UpstreamSession(
            self.spec.name, transport=self.spec.transport, redaction=self._redaction, limits=self.limits,
            call_timeout=call_timeout, ping_timeout=ping_timeout, subscriptions=subscriptions,
            connection=self, on_notice=on_notice,
        )
        listing = Listing(
            self.spec.name, redaction=self._redaction, call_timeout=call_timeout, subscriptions=subscriptions,
            on_change=self._on_change, on_updated=lambda notification: on_notice(self.spec.name, notification),
        )
        return session, listing

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def tools(self) -> tuple[types.Tool, ...]:
        return self.listing.tools

    @property
    def offer(self) -> UpstreamOffer:
        return self.listing.offer

    @property
    def call_timeout(self) -> float:
        return self.session.call_timeout

    @property
    def fault(self) -> str | None:
        """Why the transport ended the current session, when it knows better than "closed"."""
        return self._fault

    def unavailable(self) -> UpstreamError | None:
        """The error of a request that finds it not up (`UpstreamSession.request`), else None."""
        if self.state is State.UP:
            return None
        if self.configuration_error:
            return UpstreamConfigurationError(self.name, f"not available ({self.reason})")
        return UpstreamError(self.name, f"not available ({self.reason or 'not connected right now'})")

    def lost(self, why: str, *, reconnect: bool) -> None:
        """The session asks for its end (`why`); `reconnect`: the supervisor connects again at once."""
        self._fault = why
        if reconnect:
            self.reconnect_now = True

    @property
    def state(self) -> State:
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        self._state = state
        changed, self._state_changed = self._state_changed, anyio.Event()
        changed.set()

    async def changed(self) -> None:
        """Wait until the state changes (starting, up, down) or the supervisor stops running it."""
        async with anyio.create_task_group() as tg:
            async def on_finished() -> None:
                await self.finished.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(on_finished)
            await self._state_changed.wait()
            tg.cancel_scope.cancel()

    def status(self) -> UpstreamStatus:
        return UpstreamStatus(
            name=self.name,
            transport=self.spec.transport,
            state=self.state,
            reason=self.reason,
            tool_count=len(self.tools) if self.state is State.UP else 0,
            summary=summarize(self._instructions, self._info, self.tools),
            restarts=self.restarts,
            gave_up=self.gave_up,
            last_restart_reason=self.last_restart_reason,
            configuration_error=self.configuration_error,
            next_attempt=self.next_attempt,
            needs_sign_in=self.needs_sign_in,
        )

    def want(self) -> None:
        """A search or call needs this upstream: if it is waiting to be tried again, try now."""
        if self.state is State.DOWN:
            self.wanted.set()

    @property
    def stopped(self) -> bool:
        """Told to stop for good (the gateway closes, or its registry entry changed or went)."""
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        if self._session_scope is not None:
            self._session_scope.cancel()

    async def run(self) -> float | None:
        """One connection attempt, served until it ends; records why it ended.

        Returns how many seconds the upstream stayed up, or None if it never came up (the
        supervisor's backoff depends on it).
        """
        if self.spec.error:
            self.configuration_error = True
            self._mark_down(self.spec.error)
            return None
        skipped = self._self_reference()
        if skipped is not None:
            self._mark_configuration_error(StartFailure(skipped, configuration=True))
            return None
        self.state, self.reason, self._was_up, self._fault = State.STARTING, None, False, None
        self.reconnect_now, self._http_error_status = False, None
        self.failure, self.next_attempt = None, None
        self.needs_sign_in = False
        self._stamp_at_start = self._sign_in_stamp()
        tail = StderrTail(self.name, redact=self._redaction.text) if self.spec.transport == "stdio" else None
        failure: StartFailure | None = None
        async with anyio.create_task_group() as tg:
            if tail is not None:
                tg.start_soon(tail.pump)
            try:
                reason = await self._connect_and_serve(tail)
            except Exception as exc:  # noqa: BLE001 - any failure of one upstream is contained here
                self.failure = exc
                # A missing sign-in is checked first: its HTTP 401 is not a wrong entry, and the
                # supervisor waits for `toolscout login` instead of retrying.
                self.needs_sign_in = _is_sign_in_required(exc)
                if self._was_up:
                    reason = describe_failure(exc)
                elif self.needs_sign_in:
                    reason = f"failed to start: {describe_failure(exc)}"
                else:
                    failure = classify_start_failure(exc, self.spec, http_status=self._http_error_status)
                    reason = f"failed to start: {upstream_error_text(failure.reason)}"
            if tail is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_STDERR_GRACE):
                    await tail.closed.wait()
                stderr = tail.tail()
                nested = None if self._was_up else refused_as_nested(self.spec, stderr)
                if nested is not None:
                    failure = StartFailure(nested, configuration=True)
                elif reason and stderr:
                    reason = f"{reason}; stderr: {stderr[-_MAX_STDERR_IN_REASON:]}"
            tg.cancel_scope.cancel()
        if tail is not None:
            tail.close()
        if failure is not None and failure.configuration:
            self._mark_configuration_error(failure)
            return None
        self._mark_down(reason)
        return anyio.current_time() - self._up_at if self._was_up else None

    def _self_reference(self) -> str | None:
        """Why this stdio entry is skipped because it starts toolscout itself, or None."""
        if self.spec.transport != "stdio":
            return None
        try:
            program = resolve_command(self.spec)
        except Exception:  # noqa: BLE001 - a missing command is reported by the start attempt
            return None
        return self_reference(self.spec, program)

    def _mark_configuration_error(self, failure: StartFailure) -> None:
        """Down for good: no start attempt can succeed until the entry changes."""
        self.configuration_error = True
        skipped = failure.reason.startswith(SKIPPED)  # never started: nothing "failed to start"
        reason = failure.reason if skipped else f"failed to start: {failure.reason}"
        self._mark_down(f"{reason} ({CONFIGURATION_NOTE})")

    async def _record_http_status(self, response: httpx2.Response) -> None:
        if response.status_code >= 400 and self.state is State.STARTING:
            self._http_error_status = response.status_code

    def _sign_in_stamp(self) -> int | None:
        """When the stored sign-in last changed (None: there is none, or no OAuth)."""
        try:
            return self._auth.storage.path.stat().st_mtime_ns if self._auth is not None else None
        except OSError:
            return None

    async def wait_for_sign_in(self, stop: anyio.Event) -> None:
        """Return once the stored sign-in changed since the last attempt began (`toolscout login`
        ran, or a refused token was marked for refreshing), or `stop` is set."""
        while self._sign_in_stamp() == self._stamp_at_start and not stop.is_set():
            with anyio.move_on_after(_SIGN_IN_POLL):
                await stop.wait()

    def give_up(self, attempts: int) -> None:
        """Called by the supervisor: no more restarts; the status says so."""
        self.reason = f"{self.reason} (gave up after {plural(attempts, 'failed attempt')})"
        self.gave_up = True
        logger.error("upstream '%s': %s", self.name, self.reason)

    def retry_later(self, attempts: int, interval: float) -> None:
        """Called by the supervisor once the fast restarts are spent: it keeps trying every `interval`."""
        self.reason = f"{self.reason} ({plural(attempts, 'failed attempt')}; trying again every {interval:g} s)"
        logger.warning("upstream '%s': %s", self.name, self.reason)

    async def _connect_and_serve(self, tail: StderrTail | None) -> str | None:
        ended, connected = anyio.Event(), anyio.Event()
        # One scope spans the whole session, so the start watchdog and stop() can end it from
        # outside without breaking the nesting of the SDK's own task groups.
        session_scope = anyio.CancelScope()
        self._session_scope = session_scope
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._start_watchdog, session_scope, connected)
            with session_scope:
                async with AsyncExitStack() as stack:
                    # "auto": the newest protocol the upstream speaks (2026-07-28, else the handshake).
                    client = Client(
                        self._transport(tail, ended),
                        mode="auto",
                        cache=None,
                        message_handler=self._on_message,
                        # Declared so that upstreams may ask; relayed to the client whose call it is.
                        sampling_callback=self.session.relay_sampling,
                        elicitation_callback=self.session.relay_elicitation,
                        client_info=types.Implementation(name="toolscout", version=__version__),
                    )
                    await stack.enter_async_context(client)
                    self._instructions = client.instructions
                    self._info = client.server_info
                    skipped = local_gateway(self.spec, self._info.name if self._info else None)
                    if skipped is not None:
                        raise UpstreamConfigurationError(self.name, skipped)
                    await self.listing.list_first(client)
                    connected.set()
                    await self._serve(client, ended)
            tg.cancel_scope.cancel()
        if self._stop.is_set():
            return None
        if not connected.is_set() and not self._fault:
            return f"did not start within {self.start_timeout:g} s"
        return self._fault or "the upstream closed the connection (it exited or crashed)"

    async def _start_watchdog(self, session_scope: anyio.CancelScope, connected: anyio.Event) -> None:
        with anyio.move_on_after(self.start_timeout):
            await connected.wait()
        if not connected.is_set():
            session_scope.cancel()

    async def _serve(self, client: Client, ended: anyio.Event) -> None:
        self.session.attach(client, ended)
        self.state, self._was_up, self._up_at = State.UP, True, anyio.current_time()
        self.settled.set()
        logger.info("upstream '%s' connected: %s", self.name, plural(len(self.tools), "tool"))
        self._on_change()
        try:
            async with anyio.create_task_group() as tg:
                self.session.attach(client, ended, tg)
                self.listing.follow(tg, client)
                tg.start_soon(self.session.restore_log_level, client)
                await ended.wait()
                tg.cancel_scope.cancel()
        finally:
            self.session.attach(None, None)

    async def _on_message(self, message: Any) -> None:
        # Runs inside the session's receive path: never await a request here, only signal.
        if not self.listing.on_message(message):
            self.session.on_message(message)

    @asynccontextmanager
    async def _transport(self, tail: StderrTail | None, ended: anyio.Event) -> AsyncIterator[Any]:
        # The OAuth sign-in of a remote upstream, made again for each connection so that it reads
        # the stored tokens afresh (a `toolscout login` since the last attempt).
        self._auth = self._sign_in_for(self.spec)
        transport = self._given_transport or open_transport(
            self.spec, tail=tail, on_fault=self._on_fault, limits=self.limits,
            on_http_response=self._record_http_status, auth=self._auth, on_gone=self._on_gone,
        )
        async with transport.connect() as (read, write):
            yield EndWatchingStream(read, ended), write

    def _on_fault(self, reason: str) -> None:
        if self._fault is None:
            self._fault = reason

    def _on_gone(self, reason: str) -> None:
        """The HTTP upstream went away mid-response: end its session now, so the calls in flight
        fail at once with `reason` rather than after the SDK's attempts to resume."""
        if self.state is State.UP and self.session.client is not None:
            self._on_fault(reason)
            self.session.end()

    def _mark_down(self, reason: str | None) -> None:
        was_up = self.state is State.UP
        self.state = State.DOWN
        self.reason = self._redaction.text(reason or "stopped")
        self.settled.set()
        if reason and not self._stop.is_set():
            logger.warning("upstream '%s' is down: %s", self.name, self.reason)
        if was_up and not self._stop.is_set():
            self._on_change()
