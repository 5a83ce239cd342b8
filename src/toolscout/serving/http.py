"""The gateway's MCP server over streamable HTTP, guarded against the two usual attacks on it.

- DNS rebinding (a web page the user visits talks to the local server through a name that
  resolves to 127.0.0.1): every request's Host and Origin must be one the server answers to.
  That is the loopback names by default, the bound address when it is a specific one, and what
  `--allowed-host` / `--allowed-origin` add; it is on whatever address is bound.
- Anyone else on the network or machine calling it: with a token (`--auth-token` or
  TOOLSCOUT_AUTH_TOKEN) every request must carry `Authorization: Bearer <token>`, compared in
  constant time; without it the answer is 401.

Beside /mcp it answers /healthz, /readyz and /metrics (`toolscout.serving.operations`), and
gives every request an id that its log lines carry (`toolscout.request_ids`).

The client's credentials stop here: upstream connections are made with the registry's own
headers only, never with anything from the client's request.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolscout.errors import ConfigError
from toolscout.serving.scoped import ProfileChooser, profile_paths

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Receive, Scope, Send

    from toolscout.gateway import Gateway
    from toolscout.serving.metrics import GatewayMetrics

__all__ = ["AUTH_TOKEN_VARIABLE", "BearerAuth", "http_app", "security_settings", "serve_http"]

logger = logging.getLogger(__name__)

AUTH_TOKEN_VARIABLE = "TOOLSCOUT_AUTH_TOKEN"
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


class BearerAuth:
    """ASGI middleware: HTTP requests need `Authorization: Bearer <token>`; others get 401."""

    def __init__(self, app: ASGIApp, token: str, open_paths: frozenset[str] = frozenset()) -> None:
        if not token.strip():
            raise ConfigError("the auth token is empty; pass a non-empty --auth-token or unset it")
        self.app = app
        self._token = token.encode("utf-8")
        # Paths answered without the token (health probes send none).
        self._open_paths = open_paths

    def _authorized(self, scope: Scope) -> bool:
        values = [value for name, value in scope.get("headers", ()) if name == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, credentials = values[0].partition(b" ")
        # compare_digest takes as long whatever the token's prefix: no timing oracle.
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self._open_paths or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = b'{"error": "unauthorized: send Authorization: Bearer <token> (the token toolscout serve was given)"}'
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="toolscout"'),
            ],
        })
        await send({"type": "http.response.body", "body": body})


def http_app(
    server: Any,
    *,
    host: str,
    auth_token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    gateway: Gateway | None = None,
    metrics: GatewayMetrics | None = None,
    profiles: ProfileChooser | None = None,
) -> ASGIApp:
    """The ASGI app serving `server` at /mcp with the checks above; with `gateway`, also the
    health routes (and /metrics with `metrics`); with `profiles`, also at /mcp/<profile>
    (`toolscout.serving.scoped.profile_paths`)."""
    from asgi_correlation_id import CorrelationIdMiddleware

    from toolscout.request_ids import HEADER, usable_request_id
    from toolscout.serving.operations import OPEN_PATHS, operation_routes

    app: ASGIApp = server.streamable_http_app(
        host=host,
        transport_security=security_settings(host, allowed_hosts, allowed_origins),
        custom_starlette_routes=operation_routes(gateway, metrics) if gateway is not None else None,
    )
    if profiles is not None:
        app = profile_paths(app, profiles)
    if auth_token:
        app = BearerAuth(app, auth_token, open_paths=OPEN_PATHS)
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
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    gateway: Gateway | None = None,
    metrics: GatewayMetrics | None = None,
    profiles: ProfileChooser | None = None,
) -> None:
    """Serve until cancelled; logs the address (port 0 picks a free one)."""
    import uvicorn

    app = http_app(
        server, host=host, auth_token=auth_token, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins,
        gateway=gateway, metrics=metrics, profiles=profiles,
    )
    # Bound here rather than by uvicorn so that port 0 works and the real address can be logged.
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    if not _is_loopback(host):
        if not auth_token:
            logger.warning("listening on %s without an auth token: anyone who can reach it can run tools; "
                           "pass --auth-token or set %s", host, AUTH_TOKEN_VARIABLE)
        if not allowed_hosts:
            logger.warning("only loopback names%s are accepted in the Host header; add the names clients "
                           "use with --allowed-host", "" if host in _WILDCARDS else f" and {host}")
    logger.info("serving MCP over streamable HTTP at http://%s:%d/mcp%s", shown, bound_port,
                " (bearer token required)" if auth_token else "")

    class Uvicorn(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # A listen stream (protocol 2026-07-28) is a response that never ends by itself, and
            # uvicorn waits for open responses before it stops: end them first, gracefully, so
            # their clients know the stream was closed on purpose.
            _close_listen_streams(server)
            await super().shutdown(sockets)

    await Uvicorn(uvicorn.Config(app, log_level="warning", lifespan="on")).serve(sockets=[sock])


def _close_listen_streams(server: Any) -> None:
    from mcp.server.subscriptions import ListenHandler

    entry = server.get_request_handler("subscriptions/listen")
    if entry is not None and isinstance(entry.handler, ListenHandler):
        entry.handler.close()
