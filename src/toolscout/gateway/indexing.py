"""Screening, overriding, enriching and indexing a catalog into a search engine: what a gateway
does at each change (`CatalogIndexer`). It starts nothing, so `toolscout search` and `tools` over a cached
catalog use one alone, with no upstream; the types of its screens and enricher are drawn here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import anyio.to_thread

from toolscout.catalog import Catalog, ToolRecord
from toolscout.gateway.overrides import Overrides, overridden
from toolscout.search import SearchEngine
from toolscout.wording import plural

if TYPE_CHECKING:
    from toolscout.learning.examples import Example

__all__ = ["CatalogEnricher", "CatalogIndexer", "ProgressLog", "SummaryScreen", "ToolScreen"]

logger = logging.getLogger(__name__)

# Given every tool of the catalog, the ids to withhold from agents and why (e.g. a definition that
# changed since it was pinned, a description with hidden instructions). Runs in a worker thread.
ToolScreen = Callable[[Sequence[ToolRecord]], Mapping[str, str]]
# Given the tools agents may use, the same tools with their expansion field filled (overlays,
# example requests, learned and generated phrases), and the example requests the engine may learn
# from. Runs in a worker thread before each index build, so learned data is used at the next one.
CatalogEnricher = Callable[[Sequence[ToolRecord]], "tuple[Sequence[ToolRecord], Sequence[Example]]"]
# Given a server's name and its one-line summary (its own words, shown in toolscout's instructions),
# why that summary must not be shown, or None to show it.
SummaryScreen = Callable[[str, str], "str | None"]


class _CompletionStopped(Exception):
    """Raised into the engine's `complete()` through its progress callback once the gateway closes."""


class ProgressLog:
    """Logs the engine's progress on stderr at most every few seconds (called from a worker thread).

    The worker thread cannot be cancelled; after `stop()` the next progress report ends it.
    """

    def __init__(self, interval: float = 5.0) -> None:
        self._interval = interval
        self._last = 0.0
        self._stopped = False
        # Texts the running completion has still to embed (None: it has reported nothing yet).
        self.remaining: int | None = None

    def stop(self) -> None:
        self._stopped = True

    def __call__(self, done: int, total: int) -> None:
        if self._stopped:
            raise _CompletionStopped
        self.remaining = max(total - done, 0)
        now = time.monotonic()
        if done >= total or now - self._last >= self._interval:
            self._last = now
            logger.info("indexing tools: %d/%d", done, total)


class CatalogIndexer:
    """Screens, enriches and indexes a catalog into a search engine: what a gateway does at each
    change. It starts nothing, so it also serves a catalog listed before (a cached one)."""

    def __init__(
        self,
        engine: SearchEngine,
        *,
        screens: Sequence[ToolScreen] = (),
        enrich: CatalogEnricher | None = None,
        overrides: Overrides | None = None,
    ) -> None:
        self.engine = engine
        self._screens = tuple(screens)
        # The operator's overrides by server (`toolscout.gateway.overrides`), replaced when the
        # registry changes; applied to what the screens let through.
        self.overrides: Overrides = overrides or {}
        self._enrich = enrich
        self._indexed_key: tuple[object, ...] | None = None
        # The catalog the engine searches: screened and enriched.
        self.catalog = Catalog()

    async def update(self, listed: Catalog) -> bool:
        """Screen, enrich and index `listed` (in worker threads); False if nothing changed. The
        screens judge the upstreams' own definitions; agents see them as overridden."""
        catalog = overridden(listed, self.overrides, await self._screened(listed))
        examples: Sequence[Example] = ()
        if self._enrich is not None:
            tools, examples = await anyio.to_thread.run_sync(self._enrich, catalog.tools)
            catalog = Catalog.of(tools, catalog.withheld, catalog.withheld_as)
        # Expansions and examples are not part of a tool's fingerprint, yet change what is indexed.
        key = (catalog.fingerprint, tuple(t.expansion for t in catalog.tools), tuple(examples))
        if key == self._indexed_key:
            return False
        await anyio.to_thread.run_sync(self._index, catalog.tools, examples)
        self.catalog = catalog
        self._indexed_key = key
        servers = len({t.server for t in catalog.tools})
        logger.info("catalog: %s from %s", plural(len(catalog.tools), "tool"), plural(servers, "upstream"))
        return True

    async def _screened(self, full: Catalog) -> dict[str, str]:
        """{upstream id: reason} of the tools the screens withhold; each new one logged."""
        withheld = await self.withheld(full.tools)
        for tool_id, reason in withheld.items():
            if tool_id not in self.catalog.withheld:
                logger.warning("withholding tool '%s': %s", tool_id, reason)
        return withheld

    async def withheld(self, records: Sequence[ToolRecord]) -> dict[str, str]:
        """{id: reason} of the records the screens withhold (in worker threads)."""
        withheld: dict[str, str] = {}
        for screen in self._screens:
            withheld.update(await anyio.to_thread.run_sync(screen, records))
        return withheld

    def _index(self, tools: Sequence[ToolRecord], examples: Sequence[Example]) -> None:
        self.engine.index(tools, examples=examples)
