"""`toolscout serve`: run the gateway as an MCP server (stdio by default, or streamable HTTP).

Nothing but MCP messages may go to stdout on stdio: logs and progress go to stderr.
"""

from __future__ import annotations

import argparse
import logging

import anyio

from toolscout.commands._gateway import (
    add_registry_options,
    add_search_options,
    fail,
    load_specs,
    open_gateway,
)
from toolscout.errors import ConfigError

logger = logging.getLogger(__name__)

# How long a client's first `initialize` may wait for upstreams, so that the instructions it gets
# describe them; later ones still join (clients are told with tools/list_changed).
DEFAULT_READY_WAIT = 10.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="run the gateway as an MCP server")
    add_registry_options(parser)
    add_search_options(parser)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument(
        "--ready-wait", type=float, default=DEFAULT_READY_WAIT, metavar="SECONDS",
        help=f"wait this long for upstreams before serving (default {DEFAULT_READY_WAIT:g})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        specs = load_specs(args)
    except ConfigError as exc:
        return fail("serve", str(exc))
    try:
        anyio.run(_serve, args, specs)
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(args: argparse.Namespace, specs: list) -> None:
    from toolscout.server import build_server

    async with open_gateway(args, specs) as gateway:
        server = build_server(gateway)
        if not await gateway.ready(args.ready_wait):
            logger.info("serving while some upstreams are still starting; they join when ready")
        if args.transport == "stdio":
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        else:
            import uvicorn

            app = server.streamable_http_app(host=args.host)
            logger.info("serving MCP over HTTP at http://%s:%d/mcp", args.host, args.port)
            config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", lifespan="on")
            await uvicorn.Server(config).serve()
