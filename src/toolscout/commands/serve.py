"""`toolscout serve`: run the gateway as an MCP server (stdio by default, or streamable HTTP).

Nothing but MCP messages may go to stdout on stdio: logs and progress go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
from typing import Any

import anyio

from toolscout.commands._gateway import (
    CommandOptions,
    GatewayHooks,
    add_call_limit_options,
    add_learning_options,
    add_registry_options,
    add_search_options,
    add_security_options,
    command_options,
    fail,
    gateway_hooks,
    load_specs,
    open_gateway,
)
from toolscout.errors import ConfigError
from toolscout.serving.http import AUTH_TOKEN_VARIABLE, serve_http
from toolscout.upstream.defaults import DEFAULT_MAX_RESTARTS

__all__ = ["register", "run"]

logger = logging.getLogger(__name__)

# How long a client's first `initialize` may wait for upstreams, so that the instructions it gets
# describe them; later ones still join (clients are told with tools/list_changed).
DEFAULT_READY_WAIT = 10.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the gateway as an MCP server",
        description="Run toolscout as one MCP server for an agent's host: start every upstream of the registry, "
        "index their tools and offer search_tools and execute_tool over stdio (default) or streamable HTTP.",
    )
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
        "--allowed-host", action="append", default=[], metavar="HOST[:PORT]",
        help="HTTP: also accept this Host header (loopback names always are); repeat for more",
    )
    parser.add_argument(
        "--allowed-origin", action="append", default=[], metavar="ORIGIN",
        help="HTTP: also accept requests from this browser Origin, e.g. https://app.example.com; repeat for more",
    )
    parser.add_argument(
        "--max-restarts", type=int, default=DEFAULT_MAX_RESTARTS, metavar="N",
        help=f"give up on an upstream after N failed restarts in a row (default {DEFAULT_MAX_RESTARTS}; see `toolscout tools`)",
    )
    parser.add_argument(
        "--ready-wait", type=float, default=DEFAULT_READY_WAIT, metavar="SECONDS",
        help=f"wait this long for upstreams before serving (default {DEFAULT_READY_WAIT:g})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.max_restarts < 0:
        return fail("serve", f"--max-restarts must be 0 or more, got {args.max_restarts}")
    options = command_options(args, search=True, security=True, learning=True, calls=True, max_restarts=args.max_restarts)
    try:
        specs = load_specs(options)
        hooks = gateway_hooks(options, record=not args.no_learn, expand=args.expand)
    except ConfigError as exc:
        return fail("serve", str(exc))
    try:
        anyio.run(_serve, args, options, specs, hooks)
    except ConfigError as exc:
        return fail("serve", str(exc))
    except KeyboardInterrupt:
        return 130
    finally:
        hooks.close()
    return 0


async def _serve(args: argparse.Namespace, options: CommandOptions, specs: list, hooks: GatewayHooks) -> None:
    from toolscout.commands._seen import keep_current
    from toolscout.learning import UsageTracker
    from toolscout.serving.learning_hooks import Learning, SamplingExpansion
    from toolscout.serving.server import build_server
    from toolscout.upstream.published import publish_statuses

    sources = hooks.sources
    async with open_gateway(options, specs, hooks=hooks) as gateway:
        # So that `toolscout search` and `toolscout tools` answer from what this gateway sees.
        gateway.add_listener(keep_current(gateway, options, specs))
        tracker = UsageTracker(sources.usage, enabled=not args.no_learn) if sources else None
        expansion = SamplingExpansion(gateway, sources.cache) if args.expand and sources and sources.cache else None
        async with Learning(gateway, tracker=tracker, expansion=expansion) as learning, anyio.create_task_group() as tg:
            if hooks.pins is not None:
                tg.start_soon(hooks.pins.follow_approvals, gateway.rescreen)
            # So that `toolscout tools` can show restarts and give-ups only this process knows of.
            tg.start_soon(publish_statuses, lambda: gateway.statuses(screened=False), options.registry_paths(), args.transport)
            server = build_server(gateway, observers=learning.observers)
            learning.install(server)
            await _run_server(args, gateway, server)
            tg.cancel_scope.cancel()


async def _run_server(args: argparse.Namespace, gateway: Any, server: Any) -> None:
    if not await gateway.ready(args.ready_wait):
        logger.info("serving while some upstreams are still starting; they join when ready")
    if args.transport == "stdio":
        from mcp.server.stdio import stdio_server

        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, gateway)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
    else:
        await serve_http(
            server, host=args.host, port=args.port, auth_token=args.auth_token,
            allowed_hosts=args.allowed_host, allowed_origins=args.allowed_origin,
        )


async def _stop_on_signal(gateway: Any) -> None:
    """On SIGTERM/SIGINT, shut the upstreams down properly, then exit.

    (A host normally closes our stdin first, which ends serving the ordinary way.) The SDK reads
    stdin in a worker thread that nothing can interrupt, so cancelling would wait for the next
    line forever: after the upstreams are stopped, the process exits at once.
    """
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for received in signals:
            logger.info("received %s; stopping upstreams", signal.Signals(received).name)
            await gateway.stop_upstreams()
            logging.shutdown()
            os._exit(128 + received)
