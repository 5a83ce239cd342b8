"""Command line entry point: `toolscout <command>`.

Each command lives in its own module under `toolscout.commands` exposing
`register(subparsers)`; this module only wires them up and configures logging (stderr only:
stdout of `toolscout serve` is the MCP protocol channel).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from toolscout import __version__
from toolscout.request_ids import RequestIdFilter

__all__ = ["COMMAND_MODULES", "build_parser", "configure_logging", "main"]

# Order is the order `toolscout --help` lists them in.
COMMAND_MODULES = ("serve", "search", "tools", "approve", "login", "eval", "tune", "examples", "expansions", "train_model", "train_reranker")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolscout",
        description="MCP gateway: many upstream MCP servers behind search_tools and execute_tool.",
    )
    parser.add_argument("--version", action="version", version=f"toolscout {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging on stderr")
    parser.add_argument("-q", "--quiet", action="store_true", help="only errors on stderr")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"toolscout.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"toolscout.commands.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


# Libraries chatty at INFO whose detail helps only when debugging (-vv shows it).
NOISY_LOGGERS = ("mcp", "httpx", "httpcore", "uvicorn.access", "sentence_transformers", "bm25s")


class _QuietLibraries(logging.Filter):
    """Drops noisy libraries' records below WARNING.

    A filter on the handler, not a logger level, because some libraries (bm25s) set their own
    logger to DEBUG when imported, which happens lazily after logging is configured.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        return not any(
            record.name == name or record.name.startswith(f"{name}.") for name in NOISY_LOGGERS
        )


def configure_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else logging.DEBUG if verbose > 1 else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s%(request)s: %(message)s"))
    handler.addFilter(RequestIdFilter())
    handler.setLevel(level)
    if verbose < 2:
        handler.addFilter(_QuietLibraries())
    logging.basicConfig(level=level, handlers=[handler])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose, args.quiet)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
