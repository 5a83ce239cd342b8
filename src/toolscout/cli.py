"""Command line entry point: `toolscout <command>`.

Each command lives in its own module under `toolscout.commands` exposing
`register(subparsers)`; this module only wires them up and configures logging (stderr only:
stdout of `toolscout serve` is the MCP protocol channel).

Much of what a command prints, and many log lines, quote upstreams: tool descriptions, server
summaries, stderr lines, error messages. An upstream may put terminal escapes in them (OSC 52
writes the clipboard in some terminals) or invisible text, so every log line and everything a
command other than `serve` writes to stdout passes through `terminal_safe`, which shows each such
character as a code (JSON stays valid: the codes are JSON escapes).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Any

from toolscout import __version__
from toolscout.serving.request_ids import RequestIdFilter

__all__ = ["COMMAND_MODULES", "QUIET_COMMANDS", "build_parser", "configure_logging", "main"]

# Order is the order `toolscout --help` lists them in.
COMMAND_MODULES = ("serve", "ui", "search", "tools", "approve", "audit", "restore_state", "install", "login", "eval", "tune", "examples", "expansions", "train_model", "train_reranker")
# Command words whose module is not named after them.
_COMMAND_MODULE_OF = {
    **{name.replace("_", "-"): name for name in COMMAND_MODULES},
    "logout": "login",
    "uninstall": "install",
}
# Commands a person runs to read an answer: their log shows warnings only, unless -v.
QUIET_COMMANDS = frozenset({"search", "tools"})


def _add_logging_options(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument("-v", "--verbose", action="count", default=default,
                        help="more logging on stderr (-vv: debug, libraries included)")
    parser.add_argument("-q", "--quiet", action="store_true", default=default, help="only errors on stderr")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with `command` (a command name) of that one only: running a
    command then imports its own module alone, so `toolscout serve` never loads the evaluation and
    training code the other commands' options are read from."""
    parser = argparse.ArgumentParser(
        prog="toolscout",
        description="MCP gateway: many upstream MCP servers behind search_tools and execute_tool.",
    )
    parser.add_argument("--version", action="version", version=f"toolscout {__version__}")
    _add_logging_options(parser, default=None)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    module_name = _COMMAND_MODULE_OF.get(command or "")
    for name in COMMAND_MODULES if module_name is None else (module_name,):
        try:
            module = importlib.import_module(f"toolscout.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"toolscout.commands.{name}":
                raise
            continue
        module.register(subparsers)
    # -v and -q work after the command too; given there, they win over the same before it.
    for subparser in subparsers.choices.values():
        _add_logging_options(subparser, default=argparse.SUPPRESS)
    return parser


# Libraries chatty at INFO whose detail helps only when debugging (-vv shows it).
NOISY_LOGGERS = ("mcp", "httpx", "httpx2", "httpcore", "httpcore2", "uvicorn.access", "sentence_transformers", "bm25s")


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


class _TerminalSafeFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        from toolscout.security.hidden import terminal_safe

        return terminal_safe(super().format(record))


class _TerminalSafeOutput:
    """A text stream that shows escapes and invisible characters as codes before writing them."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from toolscout.security.hidden import terminal_safe

        self._stream.write(terminal_safe(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def configure_logging(verbose: int, quiet: bool, *, quiet_by_default: bool = False) -> None:
    """Logging on stderr: INFO (WARNING with `quiet_by_default`), more with -v, DEBUG with -vv,
    errors only with -q."""
    if quiet:
        level = logging.ERROR
    elif verbose > 1:
        level = logging.DEBUG
    else:
        level = logging.WARNING if quiet_by_default and not verbose else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TerminalSafeFormatter("%(asctime)s %(levelname)s %(name)s%(request)s: %(message)s"))
    handler.addFilter(RequestIdFilter())
    handler.setLevel(level)
    if verbose < 2:
        handler.addFilter(_QuietLibraries())
    logging.basicConfig(level=level, handlers=[handler])


def _command_in(argv: list[str]) -> str | None:
    """The command word of a command line (the first word not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_in(argv))
    args = parser.parse_args(argv)
    configure_logging(args.verbose or 0, bool(args.quiet), quiet_by_default=args.command in QUIET_COMMANDS)
    if args.command != "serve":
        sys.stdout = _TerminalSafeOutput(sys.stdout)
    try:
        return int(args.handler(args) or 0)
    finally:
        if isinstance(sys.stdout, _TerminalSafeOutput):
            sys.stdout = sys.stdout._stream


if __name__ == "__main__":
    sys.exit(main())
