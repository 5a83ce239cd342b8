"""The gateway (`toolscout.gateway`, whose docstring tells what it does): the upstream pool and
the search engine kept in step over one catalog. Its parts, one module each: what it does at each
change (`indexing.CatalogIndexer`), the engine's background completion (`completion`), what it
relays besides tools (`relaying.OfferingsRelay`, which it is), the notices it hands on (`notices`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread

from toolscout.catalog import Catalog, ToolRecord
from toolscout.gateway.completion import EngineCompletion
from toolscout.gateway.indexing import CatalogEnricher, CatalogIndexer, SummaryScreen, ToolScreen
from toolscout.gateway.last_listed import LastListed
from toolscout.gateway.listeners import CatalogListener, NoticeListener, OfferingsListener, ServerFilter, tell_all
from toolscout.gateway.notices import Notices
from toolscout.gateway.options import GatewayOptions
from toolscout.gateway.overrides import overrides_of, upstream_arguments
from toolscout.gateway.relaying import OfferingsRelay
from toolscout.naming import id_server
from toolscout.registry.spec import ServerSpec
from toolscout.search import SearchEngine, SearchResponse
from toolscout.upstream.catalog_cache import SeenCatalog
from toolscout.upstream.limits import Limits
from toolscout.upstream.status import State, UpstreamStatus

if TYPE_CHECKING:
    import mcp_types as types

    from toolscout.registry.profiles import Profile
    from toolscout.upstream.session import Caller, InputRound, ProgressFn

__all__ = ["CatalogListener", "Gateway", "GatewayOptions", "NoticeListener", "OfferingsListener", "ServerFilter"]

logger = logging.getLogger(__name__)


class Gateway(OfferingsRelay):
    # The whole gateway is the view with no profile (`toolscout.gateway.view`; a profile's view is
    # `toolscout.gateway.scoped.view_of`).
    profile: Profile | None = None

    def __init__(
        self,
        specs: Sequence[ServerSpec],
        engine: SearchEngine,
        options: GatewayOptions = GatewayOptions(),
        *,
        screens: Sequence[ToolScreen] = (),
        enrich: CatalogEnricher | None = None,
        summary_screen: SummaryScreen | None = None,
        stored: SeenCatalog | None = None,
    ) -> None:
        """`stored`: what a gateway over the same registries last saw, searched for the upstreams
        still starting (`toolscout.gateway.last_listed`); None: only what comes up."""
        # The MCP SDK comes with the pool: imported here, by a gateway that may connect.
        from toolscout.oauth.provider import upstream_auth
        from toolscout.upstream.pool import UpstreamPool

        super().__init__()
        self.options = options
        self.engine = engine
        self._indexer = CatalogIndexer(engine, screens=screens, enrich=enrich, overrides=overrides_of(specs))
        self._summary_screen = summary_screen
        self._last_listed = LastListed(stored)
        # Only the gateway (and toolscout.upstream) touches the pool; the server and the commands use
        # the accessors below.
        self._notices = Notices()
        self._pool = UpstreamPool(
            specs,
            start_timeout=options.start_timeout,
            call_timeout=options.call_timeout,
            max_restarts=options.max_restarts,
            stable_uptime=options.stable_uptime,
            retry_interval=options.retry_interval,
            limits=options.limits,
            on_change=self._on_pool_change,
            on_notice=self._notices.put,
            sign_in=upstream_auth,
            in_process=options.in_process,
        )
        self._listeners: list[CatalogListener] = []
        self._changed = anyio.Event()
        self._sync_lock = anyio.Lock()
        self._completion = EngineCompletion(engine)
        self._task_group: anyio.abc.TaskGroup | None = None
        # Set once the upstreams' first starts settled (or `ready`'s wait ran out) and what was up
        # was indexed: a load balancer may send traffic from then on.
        self.settled = False

    async def __aenter__(self) -> Gateway:
        # Entered in this order and left in the reverse one: task-group scopes must nest.
        await self._pool.__aenter__()
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        # Index the (still empty) catalog at once: the engine's first index pays its imports,
        # which then overlap with the upstreams' starts instead of following them.
        self._changed.set()
        self._task_group.start_soon(self._follow_changes, name="catalog sync")
        self._task_group.start_soon(self._completion.run, name="engine completion")
        self._task_group.start_soon(self._notices.deliver, name="upstream notices")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._task_group is not None
        # Stop following the pool first: upstreams going down at shutdown must not re-index.
        self._completion.progress.stop()
        self._task_group.cancel_scope.cancel()
        try:
            await self._task_group.__aexit__(None, None, None)
        finally:
            await self._pool.__aexit__(exc_type, exc, tb)
        return None

    def allows_server(self, server: str) -> bool:
        """Every server is the whole gateway's to reach (a profile's view says otherwise)."""
        return True

    @property
    def catalog(self) -> Catalog:
        """The catalog searched now: every tool of the upstreams that are up, screened and enriched."""
        return self._indexer.catalog

    def add_listener(self, listener: CatalogListener) -> None:
        """`listener(catalog)` is awaited after each re-index."""
        self._listeners.append(listener)

    def add_notice_listener(self, listener: NoticeListener) -> None:
        """`listener(server, notification)` is awaited with each log message or resource update."""
        self._notices.add_listener(listener)

    @property
    def limits(self) -> Limits:
        """The bounds on calls, results and upstream output the upstreams run with."""
        return self.options.limits

    def server_names(self) -> list[str]:
        """Every configured upstream's name, up or not, sorted."""
        return sorted(self._pool.upstreams)

    def server_of(self, tool_id: str) -> str | None:
        """The configured upstream a tool id names before its separator (`naming.id_server`), or None."""
        name = id_server(tool_id)
        return name if name in self._pool.upstreams else None

    def status_of(self, server: str) -> UpstreamStatus | None:
        """One configured upstream's status as it is (summary unscreened), or None if not configured."""
        upstream = self._pool.upstreams.get(server)
        return None if upstream is None else upstream.status()

    def listed(self) -> Catalog:
        """Every tool the upstreams that are up list now, before the screens withhold any."""
        return self._pool.catalog()

    async def reconfigure(self, specs: Sequence[ServerSpec]) -> list[str]:
        """Follow a changed registry (`UpstreamPool.reconfigure`); the catalog follows as usual."""
        self._indexer.overrides = overrides_of(specs)
        affected = await self._pool.reconfigure(specs)
        if affected:
            logger.info("registry changed: restarting %s", ", ".join(sorted(affected)))
        return affected

    async def stop_upstreams(self) -> None:
        """Stop every upstream (no restarts) and wait, bounded, until they have shut down."""
        await self._pool.stop()

    def end_upstreams_now(self, grace: float) -> None:
        """End every upstream process at once (SIGTERM, SIGKILL after `grace`), without the event
        loop: for a gateway that must exit before the ordered shutdown could finish."""
        from toolscout.upstream.stdio import end_all_process_groups

        end_all_process_groups(grace)

    async def wait_finished(self, server: str) -> None:
        """Wait until the pool stops supervising `server` (it was given up on, or the gateway closed)."""
        await self._pool.upstreams[server].finished.wait()

    def statuses(self, *, screened: bool = True) -> list[UpstreamStatus]:
        """Every upstream's status; `screened`: summaries the summary screen rejects are withheld."""
        statuses = self._last_listed.described(self._pool.statuses())
        if not screened or self._summary_screen is None:
            return statuses
        shown = []
        for status in statuses:
            reason = self._summary_screen(status.name, status.summary) if status.summary else None
            shown.append(dataclasses.replace(status, summary=f"(description withheld: {reason})") if reason else status)
        return shown

    async def ready(self, timeout: float) -> bool:
        """Wait (bounded) for every upstream's first start to settle, then index what is up.

        Returns False if some upstream was still starting when `timeout` ran out; it joins the
        catalog whenever it comes up.
        """
        settled = await self._pool.wait_settled(timeout)
        await self.sync()
        self.settled = True
        return settled

    @property
    def answers_from_store(self) -> bool:
        """Whether a stored catalog answers for the upstreams still starting, so serving need not wait."""
        return self._last_listed.from_store

    async def wait_complete(self) -> None:
        """Wait until the engine's `complete()` has caught up with the latest index."""
        await self._completion.wait()

    @property
    def embedding_backlog(self) -> int:
        """Tools indexed but not embedded yet (0 once the engine's `complete()` caught up)."""
        return self._completion.backlog(len(self.catalog.tools))

    def rescreen(self) -> None:
        """Ask for the screens to be run again (e.g. after a person approved a changed tool)."""
        self._changed.set()

    async def sync(self) -> None:
        """Rebuild the catalog from the pool; re-index and notify only if it changed."""
        async with self._sync_lock:
            await self._sync_offerings(self._indexer)
            if not await self._indexer.update(self._last_listed.searchable(self._pool.catalog(), self._pool.statuses())):
                return
            catalog = self.catalog
            self._completion.indexed()
            await tell_all(self._listeners, catalog, what="catalog")

    async def bring_up(self, server: str) -> bool:
        """Whether a down upstream is up now, its tools in the catalog: a start of it under way is
        waited for, a few seconds at most (`UpstreamPool.bring_up`); True at once when it already
        was up. Also re-indexes when the upstream is up but the catalog has not caught up with it
        yet (right after a reconnect)."""
        from toolscout.upstream.pool import STARTING_WAIT

        wait = min(STARTING_WAIT, self.options.start_timeout, self.options.call_timeout)
        if not await self._pool.bring_up(server, wait):
            return False
        listed = {t.id for t in self._pool.catalog().tools if t.server == server}
        if not listed <= {t.id for t in self.catalog.tools} | set(self.catalog.withheld):
            await self.sync()
        return True

    async def search(
        self, query: str, *, limit: int, servers: Collection[str] | None = None
    ) -> SearchResponse:
        # An upstream waiting to be tried again is tried now: the next search may find its tools.
        self._pool.want(servers)
        # Query encoding may take tens of milliseconds: keep it off the event loop.
        return await anyio.to_thread.run_sync(
            lambda: self.engine.search(query, limit=limit, servers=servers)
        )

    async def call(
        self, tool: ToolRecord, arguments: Mapping[str, Any], progress: ProgressFn | None = None,
        round_: InputRound | None = None, *, caller: Caller | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call `tool` on its upstream; "input required" only for a client that cannot be asked
        back (`toolscout.upstream.session.InputRound`). `caller`: the client whose call it is,
        where the upstream's questions during it go. A tool of an upstream still starting (found in
        its last listing) waits for that start, bounded by the start timeout."""
        if (status := self.status_of(tool.server)) is not None and status.state is State.STARTING:
            from toolscout.upstream.failures import unavailable

            began = anyio.current_time()
            if not await self._pool.bring_up(tool.server, self.options.start_timeout):
                raise unavailable(self.status_of(tool.server) or status, waited=round(anyio.current_time() - began))
        return await self._pool.call(tool, upstream_arguments(tool, arguments), progress, round_, caller=caller)

    def _on_pool_change(self) -> None:
        self._changed.set()

    async def _follow_changes(self) -> None:
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            try:
                await self.sync()
            except Exception:  # noqa: BLE001 - keep serving the previous catalog
                logger.exception("re-indexing the catalog failed; searches use the previous one")
