"""How `search` and `tools` answer from the catalog last seen instead of starting every upstream.

`cached(...)` is the catalog a gateway last saw over these registries (None with `--refresh`, or
when there is none yet: the command connects, and `toolscout.app.remember(...)` keeps what it saw). `index_seen`
screens, enriches and indexes it with the `CatalogIndexer` a gateway uses, without upstreams (nor
the MCP SDK), so the answer is the one `serve` gives over the same tools. `serve` keeps the file
current (`toolscout.app.keep_current`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from toolscout.upstream.catalog_cache import SeenCatalog, load_catalog
from toolscout.wording import describe_age

if TYPE_CHECKING:
    from toolscout.app import AppConfig
    from toolscout.gateway import CatalogIndexer, SummaryScreen
    from toolscout.registry.spec import ServerSpec
    from toolscout.upstream.status import UpstreamStatus

__all__ = ["add_refresh_option", "cached", "index_seen", "screened_statuses"]


def add_refresh_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--refresh", action="store_true",
        help="connect to every upstream now (seconds) instead of answering from the catalog a gateway last saw; "
             "without a cached catalog it connects anyway",
    )


def cached(
    command: str, refresh: bool, options: AppConfig, specs: Sequence[ServerSpec], *, quiet: bool = False
) -> SeenCatalog | None:
    """The catalog last seen over the command's registries, saying on stderr how old it is
    (unless `quiet`: -q asks for errors only)."""
    from toolscout.app import state_location

    if refresh:
        return None
    seen = load_catalog(options.registry_sources(), specs, state=state_location(options))
    if seen is not None and not seen.catalog.tools:
        # Every upstream was down when last seen (e.g. before uv was installed): an answer from
        # that would be empty, so look again.
        if not quiet:
                print(f"toolscout {command}: the catalog last seen had no tools; connecting to the upstreams",
                  file=sys.stderr)
        return None
    if seen is not None and not quiet:
        print(
            f"toolscout {command}: from the catalog seen {describe_age(seen.age())} ago "
            "(--refresh connects to the upstreams)",
            file=sys.stderr,
        )
    return seen


async def index_seen(indexer: CatalogIndexer, seen: SeenCatalog) -> None:
    """Screen, enrich, index and embed `seen` as a gateway would its upstreams' tools."""
    await indexer.update(seen.catalog)
    await anyio.to_thread.run_sync(indexer.engine.complete)


def screened_statuses(
    statuses: Sequence[UpstreamStatus], summary_screen: SummaryScreen | None
) -> list[UpstreamStatus]:
    """Cached statuses with the summaries `summary_screen` rejects withheld, as a gateway shows them."""
    shown = []
    for status in statuses:
        reason = summary_screen(status.name, status.summary) if summary_screen and status.summary else None
        shown.append(dataclasses.replace(status, summary=f"(description withheld: {reason})") if reason else status)
    return shown
