"""The gateway's MCP server over streamable HTTP, guarded against the two usual attacks on it.

- DNS rebinding (a web page the user visits talks to the local server through a name that
  resolves to 127.0.0.1): every request's Host and Origin must be one the server answers to.
  That is the loopback names by default, the bound address when it is a specific one, and what
  `--allowed-host` / `--allowed-origin` add; it is on whatever address is bound.
- Anyone else on the network or machine calling it: with a token (`--auth-token` or
  TOOLSCOUT_AUTH_TOKEN) or a token file naming several clients (`--tokens`, serving/clients.py)
  every request must carry `Authorization: Bearer <token>`, compared in constant time; without it
  the answer is 401.
- One client starving the others: each session belongs to the client that opened it (another
  client's requests on it are answered as if it did not exist), a client holds at most
  `SessionLimits.per_client` sessions (a new one closes its longest idle one, or else the least
  recently used one holding only a GET stream; with a POST in flight on every one it is refused
  with 429, to that client only), and a session idle for `SessionLimits.idle_timeout` is
  closed. Session ids are never logged.

Beside /mcp it answers /healthz, /readyz and /metrics (`toolscout.serving.operations`), the
operator's dashboard under /ui (`toolscout.dashboard`: its own sign-in, for operator tokens only),
and gives every request an id that its log lines carry (`toolscout.serving.request_ids`).

The client's credentials stop here: upstream connections are made with the registry's own
headers only, never with anything from the client's request.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import math
import re
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from toolscout.errors import ConfigError
from toolscout.serving.clients import ClientTokens, authenticated_scope, client_name
from toolscout.serving.scoped import ProfileChooser, profile_paths

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

    from toolscout.gateway import Gateway
    from toolscout.serving.metrics import GatewayMetrics

__all__ = [
    "AUTH_TOKEN_VARIABLE",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "DEFAULT_SESSIONS_PER_CLIENT",
    "BearerAuth",
    "SessionCap",
    "SessionLimits",
    "hide_session_ids",
    "http_app",
    "security_settings",
    "serve_http",
]

logger = logging.getLogger(__name__)


class WebFace(Protocol):
    """What the HTTP face needs of a web face mounted beside /mcp (the operator's dashboard,
    `toolscout.dashboard.Dashboard`, which sits above serving and so is never imported here)."""

    def mount(self, app: ASGIApp, *, clients: ClientTokens | None, single_token: bool,
              security: TransportSecuritySettings) -> ASGIApp: ...

    def announce(self, base_url: str) -> None: ...

AUTH_TOKEN_VARIABLE = "TOOLSCOUT_AUTH_TOKEN"
# A client (an agent host) opens a session or two per conversation; a hundred open at once is a
# leak or an attack, and refusing that client leaves the others served.
DEFAULT_SESSIONS_PER_CLIENT = 100
# A session with no request for this long is closed (the SDK's default is 30 minutes).
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARDS = ("0.0.0.0", "::", "")


def _with_any_port(value: str) -> list[str]:
    """`value` as given, plus any port when it names none (`host` -> `host`, `host:*`)."""
    rest = value.split("//", 1)[-1]
    has_port = "]:" in rest if rest.startswith("[") else ":" in rest
    return [value] if has_port else [value, f"{value}:*"]


def _bracketed(host: str) -> str:
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def security_settings(
    host: str, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()
) -> TransportSecuritySettings:
    """Host and Origin values the server accepts when bound to `host`."""
    # The SDK is imported when serving, not with this module (`toolscout serve --help`, `search`).
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = [*_LOOPBACK_HOSTS]
    if host not in _WILDCARDS:
        hosts.append(_bracketed(host))
    hosts += allowed_hosts
    origins = [f"{scheme}://{name}" for name in hosts for scheme in ("http", "https")] + list(allowed_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[value for name in dict.fromkeys(hosts) for value in _with_any_port(name)],
        allowed_origins=[value for origin in dict.fromkeys(origins) for value in _with_any_port(origin)],
    )


@dataclass(frozen=True)
class SessionLimits:
    """How many HTTP sessions one client may hold, and how long an idle one lives."""

    per_client: int = DEFAULT_SESSIONS_PER_CLIENT
    idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT

    def __post_init__(self) -> None:
        if self.per_client < 1:
            raise ConfigError(f"the sessions per client must be at least 1, got {self.per_client}")
        if not self.idle_timeout > 0:
            raise ConfigError(f"the session idle timeout must be a positive number of seconds, got {self.idle_timeout:g}")


async def _refuse(send: Send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"error": message}).encode("utf-8")
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
    })
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware: HTTP requests need `Authorization: Bearer <token>` of a known client, and
    carry that client on from here (`clients.authenticated_scope`); others get 401."""

    def __init__(self, app: ASGIApp, clients: ClientTokens, open_paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self._clients = clients
        # Paths answered without the token (health probes send none).
        self._open_paths = open_paths

    def _client(self, scope: Scope) -> Any:
        values = [value for name, value in scope.get("headers", ()) if name == b"authorization"]
        if len(values) != 1:
            return None
        scheme, _, credentials = values[0].partition(b" ")
        return self._clients.identify(credentials.strip()) if scheme.lower() == b"bearer" else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self._open_paths:
            await self.app(scope, receive, send)
            return
        client = self._client(scope)
        if client is not None:
            await self.app(authenticated_scope(scope, client), receive, send)
            return
        await _refuse(
            send, 401, "unauthorized: send Authorization: Bearer <token> (the token toolscout serve was given)",
            [(b"www-authenticate", b'Bearer realm="toolscout"')],
        )


class SessionCap:
    """ASGI middleware: a client holding `limit` open sessions that opens another has one of them
    closed to make room (as the idle timeout would close it): the one idle the longest, or, with none
    idle, the least recently used one whose only request in flight is its GET stream. Only when every
    one of its sessions has a POST in flight is the new one refused (429). Either way every other
    client still opens theirs.

    Why closing rather than refusing: refusing lets a client lock itself out with sessions it
    forgot, and without tokens (every caller is one anonymous client) lets one local process lock
    everyone out with idle sessions. Closing one costs its owner only a new session (its next
    request gets 404 Session not found, which MCP clients answer by opening one).

    Why a GET stream alone does not hold a session: it costs its holder nothing to keep open, so a
    process holding `limit` of them would otherwise lock every other tokenless client out for as
    long as it likes (the idle timeout never fires while one is open). A GET stream is only the
    server's channel to an otherwise quiet client, and the least recently used one goes first, so
    a client in use keeps its session. Nobody can hold sessions off without keeping `limit` POSTs
    in flight at once.

    Requests that open no session (protocol 2026-07-28 and later, answered without one) never
    count against the cap and are never refused by it."""

    def __init__(self, app: ASGIApp, manager: Any, limit: int) -> None:
        self.app = app
        self._manager = manager
        self._limit = limit
        # When each session last had a request (monotonic), to choose among sessions holding only
        # a GET stream; pruned to live sessions whenever one is opened.
        self._last_used: dict[str, float] = {}

    def _sessions_of(self, client: str | None) -> dict[str, Any]:
        # The SDK keeps no count per owner; its two maps (session -> transport, session -> owner)
        # are read, never written.
        owners = self._manager._session_owners
        return {
            session: transport for session, transport in list(self._manager._server_instances.items())
            if (owners.get(session) or {}).get("client_id") == client
            and (transport.idle_scope is None or not transport.idle_scope.cancel_called)
        }

    def open_sessions(self, client: str | None) -> int:
        return len(self._sessions_of(client))

    def _close_one(self, sessions: dict[str, Any]) -> str | None:
        """Close the session of `sessions` whose owner misses it least; what it was doing, or None
        when every one has a POST in flight."""
        from mcp.server.streamable_http import GET_STREAM_KEY

        idle, streaming = [], []
        for session, transport in sessions.items():
            scope = transport.idle_scope
            if scope is None:
                continue
            in_flight = transport._requests_in_flight
            # The SDK sets the deadline when a session's last request ends (inf while one is served):
            # the earliest deadline is the session idle the longest.
            if in_flight == 0 and math.isfinite(scope.deadline):
                idle.append((scope.deadline, scope))
            elif in_flight == 1 and GET_STREAM_KEY in transport._request_streams:
                streaming.append((self._last_used.get(session, 0.0), scope))
        chosen, state = (idle, "idle") if idle else (streaming, "holding only a GET stream")
        if not chosen:
            return None
        min(chosen, key=lambda pair: pair[0])[1].cancel()  # ends the session as its idle timeout would
        return state

    def _note_use(self, scope: Scope) -> None:
        if scope["type"] != "http":
            return
        session = dict(scope.get("headers", ())).get(b"mcp-session-id", b"").decode("latin-1")
        if session in self._manager._server_instances:  # never a made-up id: the map stays bounded
            self._last_used[session] = anyio.current_time()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._note_use(scope)
        if _opens_a_session(scope):
            live = self._manager._server_instances
            self._last_used = {session: at for session, at in self._last_used.items() if session in live}
            client = client_name(scope)
            sessions = self._sessions_of(client)
            who = f"client '{client}'" if client else "this client"
            if len(sessions) >= self._limit and (state := self._close_one(sessions)):
                logger.info("closed the least recently used %s session of %s to open a new one "
                            "(the per-client limit is %d)", state, who, self._limit)
            elif len(sessions) >= self._limit:
                logger.warning("refusing a new session: %s has %d sessions, all busy (the per-client limit)",
                               who, self._limit)
                await _refuse(
                    send, 429,
                    f"{who} already holds {self._limit} open sessions, each with a request in flight, the most "
                    "one client may (--max-sessions-per-client); end sessions you no longer use (HTTP DELETE) "
                    "or wait for a request to finish",
                    [(b"retry-after", b"5")],
                )
                return
        await self.app(scope, receive, send)


def _opens_a_session(scope: Scope) -> bool:
    """Whether the SDK would open a session for this request: a POST without a session id, of a
    protocol that has sessions (the initialize handshake's; a later one's requests open none)."""
    from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    if scope["type"] != "http" or scope.get("method") != "POST":
        return False
    headers = dict(scope.get("headers", ()))
    if b"mcp-session-id" in headers:
        return False
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii"))
    return version is None or version.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS


# Session ids are bearer capabilities for the session: kept out of the log, whoever logs them.
_SESSION_ID = re.compile(r"\b[0-9a-fA-F]{32}\b")
_SESSION_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager", "mcp.server.sse")


class _HideSessionIds(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        hidden = _SESSION_ID.sub("<session id>", message)
        if hidden != message:
            record.msg, record.args = hidden, None
        return True


def hide_session_ids() -> None:
    """Keep session ids out of what the SDK's HTTP transports log (idempotent)."""
    for name in _SESSION_LOGGERS:
        sdk_logger = logging.getLogger(name)
        if not any(isinstance(f, _HideSessionIds) for f in sdk_logger.filters):
            sdk_logger.addFilter(_HideSessionIds())


def http_app(
    server: Any,
    *,
    host: str,
    auth_token: str | None = None,
    clients: ClientTokens | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    sessions: SessionLimits = SessionLimits(),
    gateway: Gateway | None = None,
    metrics: GatewayMetrics | None = None,
    profiles: ProfileChooser | None = None,
    dashboard: WebFace | None = None,
) -> ASGIApp:
    """The ASGI app serving `server` at /mcp with the checks above; with `gateway`, also the
    health routes (and /metrics with `metrics`); with `profiles`, also at /mcp/<profile>
    (`toolscout.serving.scoped.profile_paths`); with `dashboard`, also /ui. `auth_token` is one
    client named `default`, `clients` several (not both)."""
    from asgi_correlation_id import CorrelationIdMiddleware

    from toolscout.serving.request_ids import HEADER, usable_request_id
    from toolscout.serving.operations import METRICS_PATH, OPEN_PATHS, operation_routes

    if auth_token is not None and clients is not None:
        raise ConfigError("give either an auth token or a token file, not both")
    if auth_token is not None:
        clients = ClientTokens.single(auth_token)
    hide_session_ids()
    app: ASGIApp = server.streamable_http_app(
        host=host,
        transport_security=security_settings(host, allowed_hosts, allowed_origins),
        custom_starlette_routes=operation_routes(gateway, metrics) if gateway is not None else None,
        session_idle_timeout=sessions.idle_timeout,
        # Bounded per client instead (SessionCap): a global cap lets one client lock out the rest.
        max_sessions=None,
    )
    app = SessionCap(app, server.session_manager, sessions.per_client)
    if profiles is not None:
        # Inside the token check: a token may choose the profile, and one bound to a profile sees no
        # more than it (no /metrics of every server).
        app = profile_paths(app, profiles, operator_paths={METRICS_PATH})
    if clients is not None:
        app = BearerAuth(app, clients, open_paths=OPEN_PATHS)
    if dashboard is not None:
        # Beside the token check: the dashboard takes a browser's session cookie too, and operators only.
        app = dashboard.mount(app, clients=clients, single_token=auth_token is not None,
                              security=security_settings(host, allowed_hosts, allowed_origins))
    return CorrelationIdMiddleware(app, header_name=HEADER, validator=usable_request_id)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def serve_http(
    server: Any,
    *,
    host: str,
    port: int,
    auth_token: str | None = None,
    clients: ClientTokens | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    sessions: SessionLimits = SessionLimits(),
    gateway: Gateway | None = None,
    metrics: GatewayMetrics | None = None,
    stop: anyio.Event | None = None,
    profiles: ProfileChooser | None = None,
    dashboard: WebFace | None = None,
) -> None:
    """Serve until cancelled, or until `stop` is set (then gracefully); logs the address (port 0
    picks a free one). Signals are the caller's: uvicorn's own handling would re-raise them at the
    end and kill the process before the gateway's shutdown."""
    import uvicorn

    app = http_app(
        server, host=host, auth_token=auth_token, clients=clients, allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins, sessions=sessions, gateway=gateway, metrics=metrics,
        profiles=profiles, dashboard=dashboard,
    )
    guarded = auth_token is not None or clients is not None
    sock = _listen(host, port, guarded=guarded, allowed_hosts=allowed_hosts, clients=clients, dashboard=dashboard)

    class Uvicorn(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # A listen stream (protocol 2026-07-28) is a response that never ends by itself, and
            # uvicorn waits for open responses before it stops: end them first, gracefully, so
            # their clients know the stream was closed on purpose.
            _close_listen_streams(server)
            await super().shutdown(sockets)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    web = Uvicorn(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        if stop is not None:
            async def stop_when_asked() -> None:
                await stop.wait()
                web.should_exit = True

            tg.start_soon(stop_when_asked)
        await web.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def _listen(
    host: str,
    port: int,
    *,
    guarded: bool,
    allowed_hosts: Sequence[str],
    clients: ClientTokens | None,
    dashboard: WebFace | None,
) -> socket.socket:
    """The bound socket; warns of an open or name-limited bind and logs (and announces to the
    dashboard) the address it serves at."""
    # Bound here rather than by uvicorn so that port 0 works and the real address can be logged.
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    if not _is_loopback(host):
        if not guarded:
            logger.warning("listening on %s without an auth token: anyone who can reach it can run tools; "
                           "pass --auth-token or set %s", host, AUTH_TOKEN_VARIABLE)
        if not allowed_hosts:
            logger.warning("only loopback names%s are accepted in the Host header; add the names clients "
                           "use with --allowed-host", "" if host in _WILDCARDS else f" and {host}")
    if dashboard is not None:
        dashboard.announce(f"http://{'127.0.0.1' if host in _WILDCARDS else shown}:{bound_port}")
    logger.info("serving MCP over streamable HTTP at http://%s:%d/mcp%s", shown, bound_port,
                f" (bearer token required; clients: {', '.join(clients.names())})" if clients is not None
                else " (bearer token required)" if guarded else "")
    return sock


def _close_listen_streams(server: Any) -> None:
    from mcp.server.subscriptions import ListenHandler

    entry = server.get_request_handler("subscriptions/listen")
    if entry is not None and isinstance(entry.handler, ListenHandler):
        entry.handler.close()
