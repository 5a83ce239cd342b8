"""What `serve`, `search` and `tools` share: registry, search, security and learning options, and
opening a gateway.

`command_options(args, ...)` is the one place that reads a command's arguments: it builds a frozen
`CommandOptions` (with the `GatewayOptions` the gateway runs with) once, and everything after works
from that. `search_settings(options)` is the one seam where those become SearchSettings; new engine
options are added in `add_search_options` and read there. `gateway_hooks(options)` is the one seam
where security and learning options become the gateway's screens and enricher; it reads and
validates their files before anything connects, so a mistake is a clear error at start.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from toolscout.upstream import DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, Limits
from toolscout.upstream.limits import human_size

if TYPE_CHECKING:
    # The engine and the SDK are imported when a command runs, not when the parser is built.
    from toolscout.gateway import CatalogIndexer, Gateway, GatewayOptions, SummaryScreen, ToolScreen
    from toolscout.registry.loading import ServerSpec
    from toolscout.search import ToolSearch
    from toolscout.search.settings import SearchSettings
    from toolscout.security.screens import PinScreen
    from toolscout.learning.sources import LearningSources

__all__ = [
    "CommandOptions",
    "GatewayHooks",
    "LearningOptions",
    "PinOptions",
    "add_call_limit_options",
    "add_learning_options",
    "add_registry_options",
    "add_search_options",
    "add_security_options",
    "byte_size",
    "catalog_indexer",
    "command_options",
    "fail",
    "gateway_hooks",
    "load_specs",
    "open_gateway",
    "search_engine",
    "search_settings",
]

logger = logging.getLogger(__name__)
_Store = TypeVar("_Store")


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry", action="append", type=Path, metavar="FILE",
        help="registry of upstream servers (JSON); repeat to merge several (default: the bundled one)",
    )
    parser.add_argument(
        "--start-timeout", type=float, default=DEFAULT_START_TIMEOUT, metavar="SECONDS",
        help=f"how long each upstream may take to start (default {DEFAULT_START_TIMEOUT:g})",
    )



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


def add_security_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pins", type=Path, metavar="FILE",
        help="pin state file of approved tool definitions (default: $TOOLSCOUT_PINS or the user state directory)",
    )
    parser.add_argument(
        "--strict-pins", action="store_true",
        help="new tools, too, stay unavailable until approved with `toolscout approve` (default: trusted on first use)",
    )
    parser.add_argument(
        "--allow-flagged", action="store_true",
        help="keep tools the poisoning scan flags available (default: withheld; see `toolscout tools --flagged`)",
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


@dataclass(frozen=True)
class PinOptions:
    """--pins and --strict-pins."""

    # None: $TOOLSCOUT_PINS or the user state directory.
    path: Path | None = None
    strict: bool = False


@dataclass(frozen=True)
class LearningOptions:
    """--overlay and --examples (overlays next to each registry are read as well)."""

    overlays: tuple[Path, ...] = ()
    examples: tuple[Path, ...] = ()


@dataclass(frozen=True)
class CommandOptions:
    """What a command opens its gateway with, read from its arguments once (`command_options`)."""

    gateway: GatewayOptions
    # The registries named on the command line; none: the bundled one.
    registries: tuple[Path, ...] = ()
    model: str | None = None
    weights: str | None = None
    # None: this command screens nothing by pins.
    pins: PinOptions | None = None
    # False: the poisoning scan withholds the tools it flags.
    allow_flagged: bool = True
    # None: this command reads no learning sources.
    learning: LearningOptions | None = None

    def registry_paths(self) -> list[Path]:
        from toolscout.registry.loading import default_registry_path

        return list(self.registries) or [default_registry_path()]


def command_options(
    args: argparse.Namespace,
    *,
    search: bool = False,
    security: bool = False,
    learning: bool = False,
    calls: bool = False,
    max_restarts: int = 0,
) -> CommandOptions:
    """The options of a command that added the registry options and, as its flags say, the search,
    security, learning and call-limit ones (`add_search_options`, ...); a command without search
    options searches without embeddings, one without call-limit options keeps the default limits.
    `max_restarts`: 0 for a one-off snapshot, never restarted."""
    # Imported when a command runs, not when the parser is built (the engine comes with it).
    from toolscout.gateway import GatewayOptions

    limits = Limits(
        max_argument_bytes=args.max_argument_bytes,
        max_result_bytes=args.max_result_bytes,
        max_concurrent_calls=args.max_concurrent_calls,
        max_line_bytes=args.max_line_bytes,
    ) if calls else Limits()
    call_timeout = args.call_timeout if calls else DEFAULT_CALL_TIMEOUT
    return CommandOptions(
        gateway=GatewayOptions(
            start_timeout=args.start_timeout, call_timeout=call_timeout, max_restarts=max_restarts, limits=limits
        ),
        registries=tuple(args.registry or ()),
        model=args.model if search else "none",
        weights=args.weights if search else None,
        pins=PinOptions(args.pins, args.strict_pins) if security else None,
        allow_flagged=args.allow_flagged if security else True,
        learning=LearningOptions(tuple(args.overlay), tuple(args.examples)) if learning else None,
    )


@dataclass
class GatewayHooks:
    """The security screens and learning sources a command's gateway runs with."""

    screens: list[ToolScreen] = field(default_factory=list)
    summary_screen: SummaryScreen | None = None
    sources: LearningSources | None = None
    # Follows the pin state file while serving, so approvals take effect without a restart.
    pins: PinScreen | None = None

    def close(self) -> None:
        if self.sources is not None:
            self.sources.close()


def gateway_hooks(options: CommandOptions, *, record: bool = False, expand: bool = False) -> GatewayHooks:
    """Screens and learning sources from the command's options; ConfigError if a file is unusable.

    `record`: usage will be recorded (the store is created); `expand`: phrases will be generated (the
    cache is created). Otherwise existing stores are read when they exist and never created.
    """
    from toolscout.security.pinning import PinStore
    from toolscout.security.screens import PinScreen, PoisoningScreen

    hooks = GatewayHooks()
    if options.pins is not None:
        store = PinStore(options.pins.path, strict=options.pins.strict)
        store.pending()  # reads the state file now: an unreadable one stops the command here
        hooks.pins = PinScreen(store)
        hooks.screens.append(hooks.pins)
    if not options.allow_flagged:
        poisoning = PoisoningScreen()
        hooks.screens.append(poisoning)
        hooks.summary_screen = poisoning.summary_reason
    if options.learning is not None:
        hooks.sources = _learning_sources(options, options.learning, record=record, expand=expand)
    return hooks


def _learning_sources(
    options: CommandOptions, learning: LearningOptions, *, record: bool, expand: bool
) -> LearningSources:
    from toolscout.learning import ExpansionCache, UsageStore, discover_overlays
    from toolscout.learning.expansion_cache import default_expansions_path
    from toolscout.learning.usage import default_usage_path
    from toolscout.learning.sources import LearningSources

    overlays = [*discover_overlays(options.registry_paths()), *learning.overlays]
    usage = _open_store(UsageStore, "learning from use") if record or default_usage_path().exists() else None
    cache = _open_store(ExpansionCache, "generated phrases") if expand or default_expansions_path().exists() else None
    try:
        return LearningSources.load(overlays, list(learning.examples), usage=usage, cache=cache)
    except BaseException:
        for store in (usage, cache):
            if store is not None:
                store.close()
        raise


def _open_store(kind: type[_Store], what: str) -> _Store | None:
    """A learning store at its default place, or None (logged): learning never stops the gateway."""
    from toolscout.errors import ConfigError

    try:
        return kind()
    except ConfigError as exc:
        logger.warning("%s is off: %s", what, exc)
        return None


def search_settings(options: CommandOptions) -> SearchSettings:
    """The engine defaults with --model and --weights; ConfigError if an option is unusable."""
    from toolscout.errors import ConfigError
    from toolscout.search.settings import SearchSettings, apply_weights_option

    settings = SearchSettings(model=options.model) if options.model else SearchSettings()
    if options.weights:
        try:
            settings = apply_weights_option(settings, options.weights)
        except ValueError as exc:
            raise ConfigError(f"--weights: {exc}") from exc
    return settings


def load_specs(options: CommandOptions) -> list[ServerSpec]:
    """The registries named on the command line, or the bundled default; ConfigError if unusable."""
    from toolscout.registry.loading import load_registries
    from toolscout.secrets import redact_logs

    specs = load_registries(options.registry_paths())
    redact_logs(secret for spec in specs for secret in spec.secrets)
    return specs


def search_engine(options: CommandOptions) -> ToolSearch:
    """The search engine a command's gateway (or catalog indexer) indexes into."""
    from toolscout.search import ToolSearch

    return ToolSearch(search_settings(options))


def open_gateway(options: CommandOptions, specs: list[ServerSpec], *, hooks: GatewayHooks | None = None) -> Gateway:
    """A gateway over `specs`; without `hooks` it screens nothing and learns nothing."""
    from toolscout.gateway import Gateway

    hooks = hooks or GatewayHooks()
    return Gateway(
        specs,
        search_engine(options),
        options.gateway,
        screens=hooks.screens,
        summary_screen=hooks.summary_screen,
        enrich=hooks.sources,
    )


def catalog_indexer(options: CommandOptions, hooks: GatewayHooks) -> CatalogIndexer:
    """What `open_gateway(options, specs, hooks=hooks)` would screen, enrich and index with, without
    its upstreams (nor the MCP SDK): for a catalog listed before (`toolscout.commands._seen`)."""
    from toolscout.gateway import CatalogIndexer

    return CatalogIndexer(search_engine(options), screens=hooks.screens, enrich=hooks.sources)


def fail(command: str, message: str) -> int:
    print(f"toolscout {command}: error: {message}", file=sys.stderr)
    return 2
