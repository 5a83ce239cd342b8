"""The command-line options `serve`, `search`, `tools` and `approve` share, and the one place that
reads them.

Each command adds the option groups it takes (`add_registry_options`, `add_search_options`, ...);
`command_options(args, ...)` reads them once into a frozen `toolscout.app.AppConfig`, and
everything after works from that: argparse -> config -> app (`toolscout.app`). New engine options
are added in `add_search_options` and read in `toolscout.app.search_settings`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolscout.upstream import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, Limits
from toolscout.upstream.limits import human_size

if TYPE_CHECKING:
    # The engine and the SDK are imported when a command runs, not when the parser is built.
    from toolscout.app import AppConfig
    from toolscout.serving.options import ServingOptions
    from toolscout.registry.sources import RegistrySource

__all__ = [
    "add_call_limit_options",
    "add_fusion_option",
    "add_learning_options",
    "add_registry_options",
    "add_reranker_option",
    "add_search_options",
    "add_security_options",
    "add_state_option",
    "byte_size",
    "command_options",
    "fail",
    "registry_source",
]



def add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry", action="append", type=registry_source, metavar="FILE|URL",
        help="registry of upstream servers: a JSON file ('default' names the bundled one), or an https URL of "
             "a registry document or an MCP Registry API listing; repeat to merge several, e.g. --registry "
             "default --registry node.json (default: the bundled one)",
    )
    parser.add_argument(
        "--start-timeout", type=float, default=DEFAULT_START_TIMEOUT, metavar="SECONDS",
        help=f"how long each upstream may take to start (default {DEFAULT_START_TIMEOUT:g})",
    )



# The name `--registry` takes for the bundled registry (a file of that name: ./default).
_BUNDLED_REGISTRY = "default"


def add_call_limit_options(parser: argparse.ArgumentParser) -> None:
    """Bounds on the calls a serving gateway proxies (only `serve` makes calls)."""
    parser.add_argument(
        "--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT, metavar="SECONDS",
        help=f"default per-call timeout; a registry entry's \"timeout\" overrides it (default {DEFAULT_CALL_TIMEOUT:g})",
    )
    defaults = Limits()
    for flag, default, what in (
        ("--max-argument-bytes", defaults.max_argument_bytes, "largest arguments of one call, as JSON"),
        ("--max-result-bytes", defaults.max_result_bytes, "largest result passed to the agent; more is cut with a note"),
        ("--max-line-bytes", defaults.max_line_bytes, "longest message line a stdio upstream may write"),
    ):
        parser.add_argument(
            flag, type=byte_size, default=default, metavar="SIZE",
            help=f"{what} (default {human_size(default)}; e.g. 512K, 4M)",
        )
    parser.add_argument(
        "--max-concurrent-calls", type=int, default=defaults.max_concurrent_calls, metavar="N",
        help=f"calls in flight per upstream; more wait their turn within the call timeout (default {defaults.max_concurrent_calls})",
    )


def registry_source(text: str) -> RegistrySource:
    """A --registry value (argparse type): `default` for the bundled registry, a URL (checked to
    be https or loopback http), or a file path."""
    from toolscout.errors import ConfigError
    from toolscout.registry.sources import RegistryFile, RegistryUrl, bundled_registry
    from toolscout.registry.urls import is_registry_url, require_secure_url

    if text == _BUNDLED_REGISTRY:
        return bundled_registry()
    if not is_registry_url(text):
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]{1,}://", text):
            raise argparse.ArgumentTypeError(
                f"'{text}' is a URL toolscout cannot fetch: give an https:// registry URL (http:// only to "
                "this machine), a file's path, or 'default' for the bundled registry"
            )
        return RegistryFile(Path(text))
    try:
        return RegistryUrl(require_secure_url(text, "registry URL"))
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def byte_size(text: str) -> int:
    """'4096', '512K', '4M', '1MiB' -> bytes (argparse type)."""
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(value[-1:], 1)
    try:
        size = int(float(value[:-1] if scale > 1 else value) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size; write e.g. 65536, 512K or 4M") from None
    if size < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1 byte")
    return size


def add_search_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="embedding model: 'bundled' (default, shipped inside toolscout), an installed package or a folder; 'none' disables dense")
    parser.add_argument(
        "--weights", metavar="WEIGHTS",
        help="fusion weights: 'dense=1,tfidf=0.5' (signals not named are off) or a weights.json from `toolscout tune`",
    )
    add_reranker_option(parser)
    add_fusion_option(parser)


def add_reranker_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reranker", metavar="MODEL",
        help="cross-encoder that rescores the first tools: 'bundled' (the trained one of the optional package "
        "toolscout-reranker: pip install ./packages/toolscout-reranker), an "
        "installed package or a folder (a sentence-transformers CrossEncoder is exported once); default 'none' (off)",
    )


def add_fusion_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fusion", choices=("learned", "rrf"),
        help="'learned' (default): the ranker shipped beside the model orders the candidates per request and its "
        "order joins weighted RRF as one more vote, where it can run; 'rrf': weighted RRF alone (docs/search-engine.md)",
    )
    parser.add_argument(
        "--multilingual", choices=("auto", "on", "off"),
        help="a second, multilingual model votes on requests not in English: 'auto' (default) where the multilingual "
        "extra is installed (pip install 'toolscout[multilingual]'), 'on' (an error without it), 'off' (docs/search-engine.md)",
    )


def add_security_options(parser: argparse.ArgumentParser) -> None:
    add_state_option(parser)
    parser.add_argument(
        "--strict-pins", action="store_true",
        help="new tools, too, stay unavailable until approved with `toolscout approve` (default: trusted on first use)",
    )
    parser.add_argument(
        "--allow-flagged", action="store_true",
        help="keep tools the poisoning scan flags available (default: withheld; see `toolscout tools --flagged`)",
    )
    parser.add_argument(
        "--intent-reader", action="store_true",
        help="add the learned reader of orders to the poisoning scan's phrase rules: catches more reworded "
             "orders, but flags about 0.3%% of honest tools (docs/security.md; default: rules only)",
    )


def add_state_option(parser: argparse.ArgumentParser) -> None:
    """--state (--pins, its earlier name, still works)."""
    parser.add_argument(
        "--state", "--pins", dest="state", metavar="LOCATION",
        help="state store of pins, approvals and what toolscout learns: a SQLite file, or postgresql://... "
             "shared by replicas "
             "(default: $TOOLSCOUT_STATE, else state.sqlite3 in the user state directory)",
    )


def add_learning_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--overlay", action="append", type=Path, default=[], metavar="FILE",
        help="overlay file of phrases per tool (may repeat; NAME.overlay.json next to a registry is read too)",
    )
    parser.add_argument(
        "--examples", action="append", type=Path, default=[], metavar="FILE",
        help="example requests, JSON Lines {\"query\": ..., \"tools\": [ids]} (may repeat)",
    )


def command_options(
    args: argparse.Namespace,
    *,
    search: bool = False,
    security: bool = False,
    learning: bool = False,
    calls: bool = False,
    max_restarts: int = 0,
    record: bool = False,
    expand: bool = False,
    serving: ServingOptions | None = None,
    retry_interval: float | None = None,
) -> AppConfig:
    """The configuration of a command that added the registry options and, as its flags say, the
    search, security, learning and call-limit ones (`add_search_options`, ...); a command without
    search options searches without embeddings, one without call-limit options keeps the default
    limits. `max_restarts`: 0 for a one-off snapshot, never restarted; `retry_interval`: None for
    one that never tries a failed upstream again. `record`, `expand`: what `serve` learns while it
    runs; `serving`: how it is reached."""
    # Imported when a command runs, not when the parser is built (the engine comes with it).
    from toolscout.app import AppConfig, PinOptions
    from toolscout.learning.options import LearningOptions
    from toolscout.serving.options import ServingOptions
    from toolscout.gateway import GatewayOptions

    limits = Limits(
        max_argument_bytes=args.max_argument_bytes,
        max_result_bytes=args.max_result_bytes,
        max_concurrent_calls=args.max_concurrent_calls,
        max_line_bytes=args.max_line_bytes,
    ) if calls else Limits()
    call_timeout = args.call_timeout if calls else DEFAULT_CALL_TIMEOUT
    return AppConfig(
        gateway=GatewayOptions(
            start_timeout=args.start_timeout, call_timeout=call_timeout, max_restarts=max_restarts,
            retry_interval=retry_interval, limits=limits,
        ),
        registries=tuple(args.registry or ()),
        model=args.model if search else "none",
        weights=args.weights if search else None,
        reranker=args.reranker if search else "none",
        fusion=args.fusion if search else None,
        multilingual=args.multilingual if search else None,
        pins=PinOptions(args.state, args.strict_pins) if security else None,
        allow_flagged=args.allow_flagged if security else True,
        intent_reader=args.intent_reader if security else False,
        learning=LearningOptions(
            tuple(args.overlay), tuple(args.examples), record=record, expand=expand
        ) if learning else None,
        serving=serving or ServingOptions(),
    )


def fail(command: str, message: str) -> int:
    print(f"toolscout {command}: error: {message}", file=sys.stderr)
    return 2
