"""The engine's heavy `complete()` step (embeddings), run in a worker thread after each re-index,
in the background: until it has caught up, searches answer from the signals that are ready."""

from __future__ import annotations

import logging

import anyio
import anyio.to_thread

from toolscout.gateway.indexing import ProgressLog
from toolscout.search import SearchEngine

__all__ = ["EngineCompletion"]

logger = logging.getLogger(__name__)


class EngineCompletion:
    """Which index generation the engine has completed, and the task that completes the next."""

    def __init__(self, engine: SearchEngine) -> None:
        self._engine = engine
        self._needed = anyio.Event()
        self._indexed_generation = 0
        self._completed_generation = 0
        self._completed = anyio.Event()
        self.progress = ProgressLog()

    def indexed(self) -> None:
        """The engine was re-indexed: complete it again."""
        self._indexed_generation += 1
        self._needed.set()

    @property
    def caught_up(self) -> bool:
        return self._completed_generation >= self._indexed_generation

    async def wait(self) -> None:
        """Wait until `complete()` has caught up with the latest index."""
        while not self.caught_up:
            await self._completed.wait()

    def backlog(self, indexed_tools: int) -> int:
        """Tools indexed but not embedded yet, of `indexed_tools` (0 once caught up)."""
        if self.caught_up:
            return 0
        remaining = self.progress.remaining
        return indexed_tools if remaining is None else remaining

    async def run(self) -> None:
        """Complete each new index in turn, for as long as the task runs."""
        while True:
            await self._needed.wait()
            self._needed = anyio.Event()
            generation = self._indexed_generation
            self.progress.remaining = None
            try:
                # Abandoned on shutdown: the thread finishes on its own; nobody waits for it.
                await anyio.to_thread.run_sync(self._engine.complete, self.progress, abandon_on_cancel=True)
            except Exception:  # noqa: BLE001 - searches stay available from the cheaper signals
                logger.exception("completing the search index failed; searches use the signals that are ready")
            self._completed_generation = generation
            self._completed.set()
            self._completed = anyio.Event()
