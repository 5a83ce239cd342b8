"""What the gateway asks of a search engine: the `SearchEngine` protocol and the answer it gives.

`toolscout.search.engine.ToolSearch` is the implementation; the gateway, the server and the CLI
depend only on this protocol, so an engine is replaceable (tests, evaluation baselines).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from toolscout.catalog import ToolRecord
from toolscout.index.intent import LabelledRequest
from toolscout.search.confidence import MatchStrength

__all__ = ["ProgressCallback", "SearchEngine", "SearchHit", "SearchResponse"]

# (done, total) while an engine completes its index; raising from it abandons the completion.
ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class SearchHit:
    tool: ToolRecord
    score: float
    # 1-based rank each signal gave this tool among its candidates; absent when it did not retrieve it.
    ranks: Mapping[str, int] = field(default_factory=dict)
    # The reranker's score of this tool for the request (toolscout.search.rerank); None when it
    # did not rescore it (off, not loaded, or the tool was past its depth).
    rerank_score: float | None = None


@dataclass(frozen=True)
class SearchResponse:
    hits: tuple[SearchHit, ...]
    signals: tuple[str, ...]
    # Set when the answer is degraded, e.g. while embeddings of a new catalog are being computed.
    notice: str | None = None
    # How well the best tool matches (`search.confidence`); None without the dense signal.
    match: MatchStrength | None = None
    # What ordered the hits: the learned ranker, or weighted RRF and why (shown by `--explain`).
    fusion: str | None = None


class SearchEngine(Protocol):
    """Indexes a catalog snapshot, then answers searches over it from any thread."""

    def index(self, tools: Sequence[ToolRecord], examples: Sequence[LabelledRequest] = ()) -> None:
        """Make `tools` the catalog searched from now on (cheap: the gateway calls it at each change).

        `examples`: past requests with the ids of the tools that served them, for an engine that
        learns from them; one that does not ignores them."""
        ...

    def complete(self, progress: ProgressCallback | None = None) -> None:
        """The heavy part of indexing (e.g. embeddings), run in a worker thread after `index`."""
        ...

    def search(self, query: str, *, limit: int = 5, servers: Collection[str] | None = None) -> SearchResponse:
        """The best `limit` tools for `query`, among `servers` when given."""
        ...
