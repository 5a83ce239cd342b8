"""What fills each tool's expansion field before every index build (a gateway's `CatalogEnricher`).

    sources = LearningSources.load(overlays, example_files, usage=store, cache=cache)
    gateway = Gateway(specs, engine, enrich=sources)

Overlays, example files, examples learned from use and phrases a client's model generated. No MCP:
`toolscout search` over a cached catalog enriches with it as `serve` does
(`toolscout.serving.learning_hooks` wires learning into the running server).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import anyio.to_thread

from toolscout.catalog import ToolRecord
from toolscout.errors import StateError
from toolscout.learning.examples import Example, load_example_files
from toolscout.learning.expansion import apply_expansions
from toolscout.learning.expansion_cache import ExpansionCache
from toolscout.learning.overlays import Overlay, load_overlays, unmatched_patterns
from toolscout.learning.usage import UsageStore
from toolscout.naming import id_server

__all__ = ["LearningSources"]

logger = logging.getLogger(__name__)


class LearningSources:
    """What fills the expansion field, read at every index build (a `CatalogEnricher`)."""

    def __init__(
        self,
        overlays: Sequence[Overlay] = (),
        examples: Sequence[Example] = (),
        *,
        usage: UsageStore | None = None,
        cache: ExpansionCache | None = None,
    ) -> None:
        self.overlays = tuple(overlays)
        self.file_examples = tuple(examples)
        self.usage = usage
        self.cache = cache
        self._reported: set[tuple[str, str]] = set()
        self._unknown_ids: set[str] = set()
        # What the state store answered last, for when it cannot be reached.
        self._last_learned: list[Example] = []
        self._last_generated: dict[str, tuple[str, ...]] = {}

    @classmethod
    def load(
        cls,
        overlay_files: Sequence[Path] = (),
        example_files: Sequence[Path] = (),
        *,
        usage: UsageStore | None = None,
        cache: ExpansionCache | None = None,
    ) -> LearningSources:
        """Read and validate the files now (ConfigError naming the file and the fix)."""
        return cls(load_overlays(overlay_files), load_example_files(example_files), usage=usage, cache=cache)

    def __call__(self, tools: Sequence[ToolRecord]) -> tuple[list[ToolRecord], list[Example]]:
        examples = [*self.file_examples, *self._learned()]
        generated = self._generated(tools)
        expanded = apply_expansions(tools, overlays=self.overlays, examples=examples, generated=generated)
        self._report_unmatched(tools)
        self._report_unknown_examples(tools, examples)
        return expanded, examples

    def _learned(self) -> list[Example]:
        """Examples learned from use; those read last time while the state store cannot be reached
        (a Postgres restarting must not stop the catalog from being rebuilt, e.g. after an approval)."""
        if self.usage is None:
            return []
        try:
            self._last_learned = self.usage.examples()
        except StateError as exc:
            logger.warning("learned examples unavailable, using those read before: %s", exc)
        return self._last_learned

    def _generated(self, tools: Sequence[ToolRecord]) -> dict[str, tuple[str, ...]] | None:
        if self.cache is None:
            return None
        try:
            self._last_generated = self.cache.lookup(tools)
        except StateError as exc:
            logger.warning("generated phrases unavailable, using those read before: %s", exc)
        wanted = {tool.fingerprint for tool in tools}
        return {key: phrases for key, phrases in self._last_generated.items() if key in wanted}

    def _report_unknown_examples(self, tools: Sequence[ToolRecord], examples: Sequence[Example]) -> None:
        """Example ids that match no tool of a server that is up: said once per id. An id of a
        server not (yet) in the catalog is normal while it starts or is down, so it waits."""
        servers = {id_server(tool.id) for tool in tools}
        known = {tool.id for tool in tools}
        unknown = sorted(
            tool_id for example in examples for tool_id in example.tool_ids
            if tool_id not in known and id_server(tool_id) in servers and tool_id not in self._unknown_ids
        )
        unknown = list(dict.fromkeys(unknown))
        if unknown:
            self._unknown_ids.update(unknown)
            logger.info(
                "%d example tool id(s) match no tool of their server, e.g. %s",
                len(unknown), ", ".join(unknown[:3]),
            )

    def _report_unmatched(self, tools: Sequence[ToolRecord]) -> None:
        # A key matching nothing is normal while its server is down, but usually a typo: say it once.
        for source, pattern in unmatched_patterns(self.overlays, (tool.id for tool in tools)):
            if tools and (source, pattern) not in self._reported:
                self._reported.add((source, pattern))
                logger.info("overlay %s: '%s' matches no tool of the catalog (yet)", source, pattern)

    async def follow_changes(self, rebuild: Callable[[], None], interval: float) -> None:
        """Call `rebuild` whenever learned examples or generated phrases changed in the state store
        (learned here, or by another gateway sharing it), at most once per `interval` seconds, forever.

        Each call costs an index build, hence an interval of tens of seconds rather than one."""
        seen = await anyio.to_thread.run_sync(self._revisions)
        while True:
            await anyio.sleep(interval)
            revisions = await anyio.to_thread.run_sync(self._revisions)
            if revisions != seen and revisions is not None:
                seen = revisions
                rebuild()

    def _revisions(self) -> tuple[int, ...] | None:
        try:
            return tuple(store.revision() for store in (self.usage, self.cache) if store is not None)
        except StateError:
            return None  # unreachable for now: nothing to rebuild from

    def close(self) -> None:
        for store in (self.usage, self.cache):
            if store is not None:
                store.close()
