"""`toolscout serve`: run the gateway as an MCP server (stdio by default, or streamable HTTP).

Nothing but MCP messages may go to stdout on stdio: logs and progress go to stderr.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import anyio

from toolscout.commands._code_mode import add_code_mode_options, code_mode_limits
from toolscout.commands._gateway import (
    add_call_limit_options,
    add_learning_options,
    add_registry_options,
    add_search_options,
    add_security_options,
    command_options,
    fail,
)
from toolscout.errors import ConfigError
from toolscout.registry.rates import CONFIRM_MODES
from toolscout.serving.audit import DEFAULT_RETENTION_DAYS
from toolscout.serving.clients import TOKENS_FILE_VARIABLE, load_client_tokens
from toolscout.serving.http import (
    AUTH_TOKEN_VARIABLE,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SESSIONS_PER_CLIENT,
    SessionLimits,
)
from toolscout.serving.options import ServingOptions
from toolscout.upstream.defaults import DEFAULT_MAX_RESTARTS, DEFAULT_READY_WAIT, DEFAULT_RETRY_INTERVAL
from toolscout.upstream.self_reference import nested_refusal, started_by_gateway

__all__ = ["add_serve_options", "register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the gateway as an MCP server",
        description="Run toolscout as one MCP server for an agent's host: start every upstream of the registry, "
        "index their tools and offer search_tools and execute_tool over stdio (default) or streamable HTTP "
        "(with the operator's dashboard at /ui).",
    )
    add_serve_options(parser)
    parser.set_defaults(handler=run)


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    """Every option of `serve` (`toolscout ui` takes them too)."""
    add_registry_options(parser)
    add_call_limit_options(parser)
    add_search_options(parser)
    add_security_options(parser)
    add_learning_options(parser)
    parser.add_argument(
        "--no-learn", action="store_true",
        help="record nothing about use (by default a search followed by a successful call is kept locally as an example)",
    )
    parser.add_argument(
        "--expand", action="store_true",
        help="when the client supports sampling, have its model write phrases for each tool, in the background",
    )
    _add_http_options(parser)
    parser.add_argument(
        "--otel", action="store_true",
        help="export OpenTelemetry traces of search_tools and execute_tool over OTLP/HTTP "
             "($OTEL_EXPORTER_OTLP_ENDPOINT; needs toolscout[otel])",
    )
    parser.add_argument(
        "--profile", metavar="NAME",
        help="serve only this profile's servers and tools (profiles are named in a registry file's \"profiles\"); "
             "over HTTP, /mcp/NAME serves each profile whatever this says",
    )
    _add_restart_options(parser)
    add_code_mode_options(parser)
    _add_call_policy_options(parser)
    parser.set_defaults(open_dashboard=False)  # `toolscout ui` opens it


def _add_http_options(parser: argparse.ArgumentParser) -> None:
    """The transport, and how streamable HTTP is bound and guarded."""
    parser.add_argument(
        "--transport", choices=("stdio", "http"), default="stdio",
        help="stdio (default): the MCP host starts toolscout and speaks MCP over its stdin/stdout (Claude Desktop, "
             "Cursor, ...); http: serve streamable HTTP at http://HOST:PORT/mcp for clients that connect by URL",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765; 0 picks a free one)")
    parser.add_argument(
        "--auth-token", default=os.environ.get(AUTH_TOKEN_VARIABLE) or None, metavar="TOKEN",
        help=f"HTTP: require 'Authorization: Bearer TOKEN' on every request (default: ${AUTH_TOKEN_VARIABLE}, else none)",
    )
    parser.add_argument(
        "--tokens", type=Path, default=os.environ.get(TOKENS_FILE_VARIABLE) or None, metavar="FILE",
        help=f"HTTP: a token file naming each client and its bearer token (default: ${TOKENS_FILE_VARIABLE}; "
             "format in docs/security.md); sessions belong to the client that opened them",
    )
    parser.add_argument(
        "--max-sessions-per-client", type=int, default=DEFAULT_SESSIONS_PER_CLIENT, metavar="N",
        help=f"HTTP: a client holds at most N open sessions; a new one closes its longest idle one (429 when all are busy) "
             f"(default {DEFAULT_SESSIONS_PER_CLIENT})",
    )
    parser.add_argument(
        "--session-idle-timeout", type=float, default=DEFAULT_SESSION_IDLE_TIMEOUT, metavar="SECONDS",
        help=f"HTTP: close a session that has had no request for this long (default {DEFAULT_SESSION_IDLE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--allowed-host", action="append", default=[], metavar="HOST[:PORT]",
        help="HTTP: also accept this Host header (loopback names always are); repeat for more",
    )
    parser.add_argument(
        "--allowed-origin", action="append", default=[], metavar="ORIGIN",
        help="HTTP: also accept requests from this browser Origin, e.g. https://app.example.com; repeat for more",
    )


def _add_call_policy_options(parser: argparse.ArgumentParser) -> None:
    """Confirmation before calls, and the audit trail (rate limits are set in the token file and registry)."""
    parser.add_argument(
        "--confirm", choices=CONFIRM_MODES, default="none",
        help="ask the user (MCP elicitation) before running a tool: destructive (tools marked destructiveHint or "
             "named for deleting, resetting, ...), all, or none (default); a registry entry's \"confirm\" "
             "overrides it per server or tool (docs/security.md)",
    )
    parser.add_argument(
        "--audit-days", type=float, default=DEFAULT_RETENTION_DAYS, metavar="DAYS",
        help=f"keep each call in the audit trail (`toolscout audit`) this many days (default {DEFAULT_RETENTION_DAYS:g})",
    )
    parser.add_argument(
        "--audit-arguments", action="store_true",
        help="keep the arguments' values in the audit trail, the registries' secrets replaced by *** "
             "(default: their names and a hash only)",
    )
    parser.add_argument(
        "--no-audit", action="store_true",
        help="write the audit trail as log lines only, not to the state store",
    )


def _add_restart_options(parser: argparse.ArgumentParser) -> None:
    """How upstreams are restarted, and how long serving waits for them."""
    parser.add_argument(
        "--max-restarts", type=int, default=DEFAULT_MAX_RESTARTS, metavar="N",
        help=f"after N failed restarts in a row, try an upstream only every --retry-interval (default {DEFAULT_MAX_RESTARTS}; "
             "see `toolscout tools`)",
    )
    parser.add_argument(
        "--retry-interval", type=float, default=DEFAULT_RETRY_INTERVAL, metavar="SECONDS",
        help=f"then try it again this often, and at once when a search or call needs it (default {DEFAULT_RETRY_INTERVAL:g}; "
             "0: give up instead)",
    )
    parser.add_argument(
        "--ready-wait", type=float, default=DEFAULT_READY_WAIT, metavar="SECONDS",
        help=f"wait this long for upstreams before serving (default {DEFAULT_READY_WAIT:g}); not at all when the catalog "
             "an earlier run stored answers for them",
    )


def run(args: argparse.Namespace) -> int:
    parent = started_by_gateway()
    if parent is not None:
        # Started as an upstream of a gateway: serving would start its upstreams, itself among them.
        return fail("serve", nested_refusal(parent))
    if args.max_restarts < 0:
        return fail("serve", f"--max-restarts must be 0 or more, got {args.max_restarts}")
    if args.retry_interval < 0:
        return fail("serve", f"--retry-interval must be 0 (give up) or more seconds, got {args.retry_interval:g}")
    from toolscout.app import App

    try:
        serving = _serving_options(args)
    except ConfigError as exc:
        return fail("serve", str(exc))
    config = command_options(
        args, search=True, security=True, learning=True, calls=True, max_restarts=args.max_restarts,
        retry_interval=args.retry_interval or None, record=not args.no_learn, expand=args.expand, serving=serving,
    )

    async def serve() -> None:
        from toolscout.serving.shutdown import Shutdown
        from toolscout.upstream.published import status_file

        shutdown = Shutdown(status_file(), serving.transport)
        unusable: ConfigError | None = None
        async with anyio.create_task_group() as signals:
            # Followed until the process ends, the gateway's own shutdown included (toolscout.serving.shutdown).
            signals.start_soon(shutdown.follow_signals)
            try:
                async with App(config) as app:
                    shutdown.end_upstreams_now = app.gateway.end_upstreams_now
                    await app.serve(shutdown)
                    shutdown.begin("the client went away" if serving.transport == "stdio" else "the HTTP server stopped")
            except ConfigError as exc:
                unusable = exc  # raised past the task group, which would wrap it in a group
            finally:
                signals.cancel_scope.cancel()
        shutdown.finished()
        if unusable is not None:
            raise unusable

    try:
        if args.otel:
            from toolscout.serving.tracing import configure_tracing

            configure_tracing()
        anyio.run(serve)
    except ConfigError as exc:
        return fail("serve", str(exc))
    except KeyboardInterrupt:
        return 130
    return 0


def _serving_options(args: argparse.Namespace) -> ServingOptions:
    """How `serve` is reached, from its arguments; ConfigError if the client tokens cannot be used."""
    clients = load_client_tokens(args.tokens) if args.tokens else None
    if clients is not None and args.auth_token:
        raise ConfigError(f"give either --tokens or --auth-token (${AUTH_TOKEN_VARIABLE}), not both")
    if args.audit_days <= 0:
        raise ConfigError(f"--audit-days must be a positive number of days, got {args.audit_days:g} (--no-audit turns it off)")
    sessions = SessionLimits(args.max_sessions_per_client, args.session_idle_timeout)
    return ServingOptions(
        transport=args.transport, host=args.host, port=args.port, auth_token=args.auth_token, clients=clients,
        allowed_hosts=tuple(args.allowed_host), allowed_origins=tuple(args.allowed_origin), ready_wait=args.ready_wait,
        sessions=sessions,
        profile=args.profile, open_dashboard=args.open_dashboard, code_mode=code_mode_limits(args),
        confirm=args.confirm, audit_days=None if args.no_audit else args.audit_days, audit_arguments=args.audit_arguments,
    )
