"""Where toolscout is assembled: one typed configuration, and the application built from it.

    config = AppConfig(registries=(path,), pins=PinOptions(), learning=LearningOptions(record=True))
    async with App(config) as app:          # gateway, learning, pin following, status publishing
        await app.serve()                   # or, in process: Client(app.server)

`AppConfig` is made once: from the command line by `toolscout.commands._gateway.command_options`,
or by a test. `App` owns everything `toolscout serve` runs, in the order it must start and stop:
the gateway over the registries' upstreams (with the screens and learning sources the options
ask for), the cached catalog `toolscout search` and `tools` answer from, learning from use and
the sampling expansion, following the pins in the state store for approvals, publishing upstream statuses for
`toolscout tools --running`, and the MCP server. Tests build the same `App` that `serve` does.

The commands that take one snapshot of the upstreams (`search --refresh`, `tools`, `approve`)
open a bare gateway with `open_gateway`, or index a cached catalog with `catalog_indexer`, from
the same configuration and the same hooks.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread

from toolscout.gateway import GatewayOptions
from toolscout.learning.options import LearningOptions
from toolscout.serving.options import ServingOptions

if TYPE_CHECKING:
    from toolscout.catalog import Catalog
    from toolscout.dashboard import Dashboard
    from toolscout.gateway import CatalogIndexer, CatalogListener, Gateway, SummaryScreen, ToolScreen
    from toolscout.learning.sources import LearningSources
    from toolscout.registry.sources import RegistrySource
    from toolscout.registry.spec import ServerSpec
    from toolscout.search import ToolSearch
    from toolscout.search.settings import SearchSettings
    from toolscout.security.order_classifier import OrderClassifier
    from toolscout.security.screens import PinScreen
    from toolscout.serving.call_policies import CallPolicies
    from toolscout.serving.metrics import GatewayMetrics
    from toolscout.serving.scoped import ProfileChooser
    from toolscout.serving.shutdown import Shutdown
    from toolscout.state.replicas import ReplicaBoard
    from toolscout.upstream.catalog_cache import SeenCatalog

__all__ = [
    "App",
    "AppConfig",
    "GatewayHooks",
    "PinOptions",
    "catalog_indexer",
    "gateway_hooks",
    "keep_current",
    "learned_reader",
    "load_specs",
    "open_gateway",
    "remember",
    "search_engine",
    "search_settings",
    "state_location",
]

logger = logging.getLogger(__name__)
_Store = TypeVar("_Store")


@dataclass(frozen=True)
class PinOptions:
    """--state and --strict-pins."""

    # The state store's location; None: $TOOLSCOUT_STATE or the user state directory.
    state: str | None = None
    strict: bool = False


@dataclass(frozen=True)
class AppConfig:
    """Everything toolscout runs with, read from a command's arguments once."""

    gateway: GatewayOptions = GatewayOptions()
    # The registries named on the command line (a path or str is read as `source_of` reads it);
    # none: the bundled one.
    registries: tuple[RegistrySource | Path | str, ...] = ()
    model: str | None = None
    weights: str | None = None
    # None: the default reranker (none); "bundled", a package or a folder: that one.
    reranker: str | None = None
    # --fusion ("learned" or "rrf") and --multilingual ("auto", "on" or "off"); None: the settings' defaults.
    fusion: str | None = None
    multilingual: str | None = None
    # The engine's settings given whole (tests search with keyword signals only); None: the
    # defaults with `model`, `weights` and `reranker`.
    search: SearchSettings | None = None
    # None: nothing is screened by pins.
    pins: PinOptions | None = None
    # False: the poisoning scan withholds the tools it flags.
    allow_flagged: bool = True
    # True: the poisoning scan adds the learned reader of orders to its phrase rules (--intent-reader).
    intent_reader: bool = False
    # None: no learning source is read.
    learning: LearningOptions | None = None
    serving: ServingOptions = field(default_factory=ServingOptions)

    def registry_sources(self) -> list[RegistrySource]:
        from toolscout.registry.sources import bundled_registry, sources_of

        return sources_of(self.registries) or [bundled_registry()]


@dataclass
class GatewayHooks:
    """The security screens and learning sources a gateway runs with."""

    screens: list[ToolScreen] = field(default_factory=list)
    summary_screen: SummaryScreen | None = None
    sources: LearningSources | None = None
    # Follows the pins in the state store while serving, so approvals take effect without a restart.
    pins: PinScreen | None = None

    def close(self) -> None:
        if self.sources is not None:
            self.sources.close()
        if self.pins is not None:
            self.pins.store.state.close()


def gateway_hooks(config: AppConfig, specs: Sequence[ServerSpec] = ()) -> GatewayHooks:
    """Screens and learning sources from the configuration; ConfigError if a file is unusable.
    `specs`: the servers the gateway runs (pins are kept per server identity).

    It reads and validates their files before anything connects, so a mistake is a clear error at start.
    """
    from toolscout.security.pinning import PinStore
    from toolscout.security.screens import PinScreen, PoisoningScreen
    from toolscout.security.server_identity import server_identity

    hooks = GatewayHooks()
    if config.pins is not None:
        store = PinStore(config.pins.state, strict=config.pins.strict)
        store.pending()  # reads the pins now: an unusable store stops the command here
        hooks.pins = PinScreen(store, {spec.name: server_identity(spec) for spec in specs})
        hooks.screens.append(hooks.pins)
    if not config.allow_flagged:
        poisoning = PoisoningScreen(learned_reader(config))
        hooks.screens.append(poisoning)
        hooks.summary_screen = poisoning.summary_reason
    if config.learning is not None:
        hooks.sources = _learning_sources(config, config.learning)
    return hooks


def learned_reader(config: AppConfig) -> Callable[[], OrderClassifier | None] | None:
    """What makes the poisoning screen's learned reader (`--intent-reader`), or None: phrase rules
    only, the default (the reader flags about 0.3% of honest tools, docs/security.md). It reads
    with the bundled embedding model whatever `--model` says; its sentence vectors are kept in the
    search's embedding cache."""
    from toolscout.security.order_classifier import OrderClassifier

    if not config.intent_reader:
        return None
    return functools.partial(OrderClassifier.bundled, search_settings(config).resolved_cache_dir)


def _learning_sources(config: AppConfig, learning: LearningOptions) -> LearningSources:
    from toolscout.learning import ExpansionCache, UsageStore, discover_overlays
    from toolscout.learning.expansion_cache import default_expansions_path
    from toolscout.learning.sources import LearningSources
    from toolscout.learning.usage import default_usage_path
    from toolscout.registry.sources import registry_files
    from toolscout.state.location import state_exists

    overlays = [*discover_overlays(registry_files(config.registry_sources())), *learning.overlays]
    state = state_location(config)
    # Without recording (or expanding), a store that was never created is not created for nothing.
    known = state_exists(state)
    usage = (
        _open_store(UsageStore, state, "learning from use")
        if learning.record or known or default_usage_path().exists() else None
    )
    cache = (
        _open_store(ExpansionCache, state, "generated phrases")
        if learning.expand or known or default_expansions_path().exists() else None
    )
    try:
        return LearningSources.load(overlays, list(learning.examples), usage=usage, cache=cache)
    except BaseException:
        for store in (usage, cache):
            if store is not None:
                store.close()
        raise


def state_location(config: AppConfig) -> str | None:
    """The state store's location the configuration names (None: $TOOLSCOUT_STATE or the default)."""
    return config.pins.state if config.pins is not None else None


def _replica_board(config: AppConfig) -> ReplicaBoard | None:
    """Where a serving gateway publishes its upstreams for other hosts, if anywhere (never fatal)."""
    from toolscout.errors import StateError
    from toolscout.state.replicas import replica_board

    try:
        return replica_board(state_location(config))
    except StateError as exc:
        logger.warning("toolscout tools --running on other hosts will not show this replica: %s", exc)
        return None


def _open_store(kind: type[_Store], state: str | None, what: str) -> _Store | None:
    """A learning store in the state store, or None (logged): learning never stops the gateway."""
    from toolscout.errors import ConfigError

    try:
        return kind(state)  # type: ignore[call-arg]
    except ConfigError as exc:
        logger.warning("%s is off: %s", what, exc)
        return None


def search_settings(config: AppConfig) -> SearchSettings:
    """The engine defaults with --model, --weights, --reranker, --fusion and --multilingual; ConfigError
    if an option is unusable."""
    from toolscout.errors import ConfigError
    from toolscout.search.settings import SearchSettings, apply_weights_option
    from toolscout.state.location import default_state_location, is_postgres

    if config.search is not None:
        return config.search
    settings = SearchSettings(model=config.model) if config.model else SearchSettings()
    for option in ("reranker", "fusion", "multilingual"):
        if getattr(config, option):
            settings = replace(settings, **{option: getattr(config, option)})
    state = state_location(config) or default_state_location()
    if is_postgres(state):
        # Replicas sharing a Postgres state store share their embeddings too.
        settings = replace(settings, shared_vectors=state)
    if config.weights:
        try:
            settings = apply_weights_option(settings, config.weights)
        except ValueError as exc:
            raise ConfigError(f"--weights: {exc}") from exc
    return settings


def load_specs(config: AppConfig) -> list[ServerSpec]:
    """The configured registries, or the bundled default; ConfigError if unusable."""
    from toolscout.registry.loading import load_registries
    from toolscout.secrets import redact_logs

    specs = load_registries(config.registry_sources())
    redact_logs(secret for spec in specs for secret in spec.secrets)
    return specs


def search_engine(config: AppConfig) -> ToolSearch:
    """The search engine a gateway (or catalog indexer) indexes into."""
    from toolscout.search import ToolSearch

    return ToolSearch(search_settings(config))


def open_gateway(
    config: AppConfig, specs: Sequence[ServerSpec], *, hooks: GatewayHooks | None = None, stored: SeenCatalog | None = None
) -> Gateway:
    """A gateway over `specs`; without `hooks` it screens nothing and learns nothing; `stored`:
    the catalog last seen, searched for the upstreams still starting."""
    from toolscout.gateway import Gateway

    hooks = hooks or GatewayHooks()
    return Gateway(
        specs,
        search_engine(config),
        config.gateway,
        screens=hooks.screens,
        summary_screen=hooks.summary_screen,
        enrich=hooks.sources,
        stored=stored,
    )


def catalog_indexer(config: AppConfig, hooks: GatewayHooks, specs: Sequence[ServerSpec] = ()) -> CatalogIndexer:
    """What `open_gateway(config, specs, hooks=hooks)` would screen, override, enrich and index
    with, without its upstreams (nor the MCP SDK): for a catalog listed before
    (`toolscout.commands._seen`)."""
    from toolscout.gateway import CatalogIndexer
    from toolscout.gateway.overrides import overrides_of

    return CatalogIndexer(search_engine(config), screens=hooks.screens, enrich=hooks.sources, overrides=overrides_of(specs))


def remember(gateway: Gateway, config: AppConfig, specs: Sequence[ServerSpec]) -> None:
    """Keep what `gateway` sees now for the next `toolscout search` or `tools`."""
    from toolscout.upstream.catalog_cache import save_catalog

    save_catalog(
        config.registry_sources(), specs, gateway.listed(), gateway.statuses(screened=False), state=state_location(config)
    )


def keep_current(gateway: Gateway, config: AppConfig, specs: Sequence[ServerSpec]) -> CatalogListener:
    """A catalog listener that keeps the cached catalog current while a gateway serves."""

    async def on_catalog(_catalog: Catalog) -> None:
        await anyio.to_thread.run_sync(remember, gateway, config, specs)

    return on_catalog


class App:
    """toolscout as `serve` runs it, built from one `AppConfig`.

    Entering reads the registries and the security and learning files (ConfigError if one is
    unusable), starts the upstreams and the background work, and builds the MCP server
    (`server`); leaving stops them in reverse order. `serve()` serves the configured transport.
    `specs`: the upstreams, when a caller has them already; None: read from the registries.
    """

    def __init__(self, config: AppConfig, *, specs: Sequence[ServerSpec] | None = None) -> None:
        self.config = config
        self._specs = None if specs is None else list(specs)
        self._hooks: GatewayHooks | None = None
        self._gateway: Gateway | None = None
        self._server: Any = None
        self._stack: Any = None
        # Counted only where someone can scrape them: at /metrics of the HTTP server.
        self.metrics: GatewayMetrics | None = None
        # The registries' profiles and which one a request gets; None when they define none.
        self._profiles: ProfileChooser | None = None
        self.policies: CallPolicies = None  # type: ignore[assignment]  # confirmation, limits, audit
        # The operator's pages at /ui of the HTTP server (`toolscout.dashboard`).
        self.dashboard: Dashboard | None = None

    @property
    def gateway(self) -> Gateway:
        assert self._gateway is not None, "enter the App first"
        return self._gateway

    @property
    def server(self) -> Any:
        """The SDK `Server` clients talk to (in process: `mcp.Client(app.server)`)."""
        assert self._server is not None, "enter the App first"
        return self._server

    async def __aenter__(self) -> App:
        from contextlib import AsyncExitStack

        from toolscout.registry.profiles import load_profiles
        from toolscout.serving.scoped import profile_chooser

        async with AsyncExitStack() as stack:
            specs = self._specs if self._specs is not None else load_specs(self.config)
            profiles = load_profiles(self.config.registry_sources(), [spec.name for spec in specs])
            self._profiles = profile_chooser(profiles, self.config.serving.profile, self.config.serving.clients)
            self._hooks = hooks = gateway_hooks(self.config, specs)
            stack.callback(hooks.close)
            await self._start(stack, specs, hooks)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        stack, self._stack = self._stack, None
        return await stack.__aexit__(exc_type, exc, tb)

    async def _start(self, stack: Any, specs: list[ServerSpec], hooks: GatewayHooks) -> None:
        from toolscout.learning import UsageTracker
        from toolscout.serving.learning_hooks import Learning, SamplingExpansion
        from toolscout.serving.metrics import GatewayMetrics
        from toolscout.serving.call_policies import call_policies
        from toolscout.serving.server import build_server
        from toolscout.upstream.catalog_cache import load_catalog

        config, sources = self.config, hooks.sources
        learning_options = config.learning or LearningOptions()
        # What the last gateway over these registries saw answers searches while the upstreams start.
        seen = await anyio.to_thread.run_sync(lambda: load_catalog(config.registry_sources(), specs, state=state_location(config)))
        self._gateway = gateway = await stack.enter_async_context(open_gateway(config, specs, hooks=hooks, stored=seen))
        # So that `toolscout search` and `toolscout tools` answer from what this gateway sees.
        gateway.add_listener(keep_current(gateway, config, specs))
        tracker = UsageTracker(sources.usage, enabled=learning_options.record) if sources else None
        expansion = (
            SamplingExpansion(gateway, sources.cache, profiles=self._profiles)
            if learning_options.expand and sources and sources.cache else None
        )
        learning = await stack.enter_async_context(Learning(gateway, tracker=tracker, expansion=expansion))
        board = _replica_board(config)
        if board is not None:
            # Closed after the background work below has stopped (it withdraws this replica first).
            stack.callback(board.state.close)
        await self._follow_in_background(stack, gateway, hooks, learning_options, board)
        self.metrics = GatewayMetrics(gateway) if config.serving.transport == "http" else None
        self.policies = call_policies(config.serving, specs, state_location(config), self.metrics)
        stack.callback(self.policies.close)
        self._server = build_server(
            gateway, observers=learning.observers, metrics=self.metrics, profiles=self._profiles,
            code_mode=config.serving.code_mode, policies=self.policies,
        )
        learning.install(self._server)
        if config.serving.transport == "http":
            from toolscout.dashboard import Dashboard

            self.dashboard = Dashboard(
                gateway, metrics=self.metrics, profiles=self._profiles, pending=self.policies.pending,
                pins=hooks.pins.store if hooks.pins is not None else None,
                usage=sources.usage if sources is not None else None,
                phrases=sources.cache if sources is not None else None, open_browser=config.serving.open_dashboard,
            )

    async def _follow_in_background(
        self, stack: Any, gateway: Gateway, hooks: GatewayHooks, learning_options: LearningOptions, board: Any
    ) -> None:
        """What a serving gateway follows while it runs: approvals, learning, registry edits, statuses."""
        from toolscout.registry.sources import registry_files
        from toolscout.registry.watching import follow_changes
        from toolscout.upstream.published import publish_statuses

        config, sources = self.config, hooks.sources
        background = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(background.cancel_scope.cancel)
        if hooks.pins is not None:
            background.start_soon(hooks.pins.follow_approvals, gateway.rescreen)
        if sources is not None and (sources.usage is not None or sources.cache is not None):
            background.start_soon(sources.follow_changes, gateway.rescreen, learning_options.follow_interval)
        if self._specs is None:
            # An edit of the registry is followed: a fixed entry is started without a restart.
            background.start_soon(follow_changes, registry_files(config.registry_sources()), self._reload_registry)
        # So that `toolscout tools` can show restarts and give-ups only this process knows of
        # (on every host, for replicas sharing a Postgres state store).
        background.start_soon(
            functools.partial(
                publish_statuses, lambda: gateway.statuses(screened=False), config.registry_sources(),
                config.serving.transport, board=board,
            )
        )

    async def _reload_registry(self) -> None:
        """The registry changed: start what changed or is new, stop what went. An edit that leaves
        it unusable changes nothing."""
        from toolscout.errors import ConfigError

        try:
            specs = load_specs(self.config)
        except ConfigError as exc:
            logger.warning("the registry changed but cannot be used (%s); the servers stay as they were", exc)
            return
        await self.gateway.reconfigure(specs)
        self.policies.reconfigure(specs)

    async def ready_to_serve(self) -> bool:
        """Wait for the upstreams' first starts (at most the ready wait; not at all when a stored
        catalog answers for them) and index what is there; False if some are still starting."""
        return await self.gateway.ready(0.0 if self.gateway.answers_from_store else self.config.serving.ready_wait)

    async def serve(self, shutdown: Shutdown | None = None) -> None:
        """Serve the MCP server on the configured transport until the client leaves (stdio) or
        the process is stopped (HTTP). `shutdown` (the `serve` command's): the first signal starts
        the ordered shutdown of this transport; without it, signals are not this method's concern."""
        serving, gateway = self.config.serving, self.gateway
        if not await self.ready_to_serve():
            logger.info("serving while some upstreams are still starting; they join when ready")
        if serving.transport == "stdio":
            from mcp.server.stdio import stdio_server

            async with anyio.create_task_group() as tg:
                # The SDK reads stdin in a worker thread that nothing can interrupt, so serving cannot
                # be cancelled: on a signal the upstreams are stopped here, then the process exits.
                async def stop_and_exit() -> None:
                    await gateway.stop_upstreams()
                    assert shutdown is not None
                    shutdown.now("upstreams stopped", shutdown.exit_code)

                if shutdown is not None:
                    shutdown.on_stop = lambda: tg.start_soon(stop_and_exit)
                async with stdio_server() as (read, write):
                    await self.server.run(read, write, self.server.create_initialization_options())
                tg.cancel_scope.cancel()
        else:
            from toolscout.serving.http import SessionLimits, serve_http

            stop = anyio.Event()
            if shutdown is not None:
                shutdown.on_stop = stop.set
            await serve_http(
                self.server, host=serving.host, port=serving.port, auth_token=serving.auth_token,
                clients=serving.clients, allowed_hosts=serving.allowed_hosts,
                allowed_origins=serving.allowed_origins, sessions=serving.sessions or SessionLimits(),
                gateway=gateway, metrics=self.metrics, stop=stop, profiles=self._profiles, dashboard=self.dashboard,
            )
