"""The tools each upstream listed last, so that a search finds an upstream's tools while it starts.

A gateway that starts from a stored catalog (`toolscout.upstream.catalog_cache`, what the last
gateway over the same registries saw) answers its first search at once instead of after the
slowest upstream's start: the tools of an upstream still starting are those it listed last, until
it lists its own. Once an upstream is up, what it lists now is what is kept for its next start
(a restart after a crash, within this process).

    last = LastListed(seen)                        # a SeenCatalog; None: a first start, nothing kept yet
    catalog = last.searchable(pool_catalog, statuses)
    statuses = last.described(statuses)           # a starting upstream's summary: its last one
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from toolscout.catalog import Catalog, ToolRecord
from toolscout.naming import NameMap
from toolscout.upstream.catalog_cache import SeenCatalog
from toolscout.upstream.status import State, UpstreamStatus

__all__ = ["LastListed"]


class LastListed:
    """The last listing of each upstream, from a stored catalog and then from what the pool lists."""

    def __init__(self, seen: SeenCatalog | None = None) -> None:
        self._by_server: dict[str, list[ToolRecord]] = {}
        for tool in seen.catalog.tools if seen is not None else ():
            self._by_server.setdefault(tool.server, []).append(tool)
        # What each upstream said it is for, for the instructions while it starts.
        self._summaries = {status.name: status.summary for status in seen.statuses} if seen is not None else {}
        self.from_store = seen is not None

    def searchable(self, listed: Catalog, statuses: Sequence[UpstreamStatus]) -> Catalog:
        """`listed` (the tools of the upstreams that are up) with the last listing of each upstream
        still starting; ids assigned over all of them, as a pool assigns them once all are up."""
        # `statuses` are read after `listed`: an upstream may have come up (or gone) in between, and
        # only what `listed` holds of it is its listing.
        in_listed = {tool.server for tool in listed.tools}
        for status in statuses:
            if status.state is State.UP and (status.name in in_listed or status.tool_count == 0):
                self._by_server[status.name] = [tool for tool in listed.tools if tool.server == status.name]
                self._summaries[status.name] = status.summary
        starting = [
            s.name for s in statuses
            if s.state is State.STARTING and s.name not in in_listed and self._by_server.get(s.name)
        ]
        if not starting:
            return listed
        records = [*listed.tools, *(tool for server in starting for tool in self._by_server[server])]
        ids = NameMap.of((record.server, record.name) for record in records).by_pair
        # Stable: each server's tools stay in the order it listed them.
        records.sort(key=lambda record: record.server)
        return Catalog.of([dataclasses.replace(record, id=ids[(record.server, record.name)]) for record in records])

    def described(self, statuses: Sequence[UpstreamStatus]) -> list[UpstreamStatus]:
        """`statuses`, each upstream still starting with the summary it had when it was last up."""
        return [
            dataclasses.replace(status, summary=self._summaries[status.name])
            if status.state is State.STARTING and self._summaries.get(status.name) else status
            for status in statuses
        ]
