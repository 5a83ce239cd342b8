"""What `serve`, `search` and `tools` share: registry and search options, and opening a gateway.

`search_settings(args)` is the one seam where command-line options become SearchSettings; new
engine options are added in `add_search_options` and read there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolscout.upstream import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT

if TYPE_CHECKING:
    # The engine and the SDK are imported when a command runs, not when the parser is built.
    from toolscout.config import ServerSpec
    from toolscout.gateway import Gateway
    from toolscout.settings import SearchSettings


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry", action="append", type=Path, metavar="FILE",
        help="registry of upstream servers (JSON); repeat to merge several (default: the bundled one)",
    )
    parser.add_argument(
        "--start-timeout", type=float, default=DEFAULT_START_TIMEOUT, metavar="SECONDS",
        help=f"how long each upstream may take to start (default {DEFAULT_START_TIMEOUT:g})",
    )
    parser.add_argument(
        "--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT, metavar="SECONDS",
        help=f"default per-call timeout; a registry entry's \"timeout\" overrides it (default {DEFAULT_CALL_TIMEOUT:g})",
    )


def add_search_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="embedding model: installed package or folder; 'none' disables dense")


def search_settings(args: argparse.Namespace) -> SearchSettings:
    from toolscout.settings import SearchSettings

    return SearchSettings(model=args.model) if args.model else SearchSettings()


def load_specs(args: argparse.Namespace) -> list[ServerSpec]:
    """The registries named on the command line, or the bundled default; ConfigError if unusable."""
    from toolscout.config import default_registry_path, load_registries

    return load_registries(args.registry or [default_registry_path()])


def open_gateway(args: argparse.Namespace, specs: list[ServerSpec], *, max_restarts: int | None = None) -> Gateway:
    from toolscout.gateway import Gateway
    from toolscout.search import ToolSearch
    from toolscout.upstream.pool import DEFAULT_MAX_RESTARTS

    return Gateway(
        specs,
        ToolSearch(search_settings(args)),
        start_timeout=args.start_timeout,
        call_timeout=args.call_timeout,
        max_restarts=DEFAULT_MAX_RESTARTS if max_restarts is None else max_restarts,
    )


def fail(command: str, message: str) -> int:
    print(f"toolscout {command}: error: {message}", file=sys.stderr)
    return 2
