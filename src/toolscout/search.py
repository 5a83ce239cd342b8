"""The one retrieval interface the gateway, the CLI and the evaluation harness use.

Contract (kept stable while the engine behind it grows):

    engine = ToolSearch(settings)
    engine.index(tools)          # sync, cheap: fits the lexical signals on a catalog snapshot
    engine.complete(progress)    # sync, heavy: embeddings etc.; callers run it in a worker thread
    engine.search(query, limit=5, servers=None) -> SearchResponse

`index` may be called again at any time with a new catalog; searches keep answering from the last
complete snapshot of each signal. No MCP imports here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import bm25s
import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.index.text import tokenize, tool_document

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class SearchSettings:
    """How the engine ranks; every field has a sensible default."""

    rrf_k: int = 60
    weights: Mapping[str, float] = field(default_factory=lambda: {"bm25": 1.0})


@dataclass(frozen=True)
class SearchHit:
    tool: ToolRecord
    score: float
    # 1-based rank each signal gave this tool among its candidates; absent when it did not retrieve it.
    ranks: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchResponse:
    hits: tuple[SearchHit, ...]
    signals: tuple[str, ...]
    # Set when the answer is degraded, e.g. while embeddings of a new catalog are being computed.
    notice: str | None = None


class ToolSearch:
    """BM25 over one document per tool (the hybrid engine replaces the internals, not this API)."""

    def __init__(self, settings: SearchSettings | None = None) -> None:
        self.settings = settings or SearchSettings()
        self._lock = threading.Lock()
        self._tools: tuple[ToolRecord, ...] = ()
        self._bm25: bm25s.BM25 | None = None

    @property
    def tools(self) -> tuple[ToolRecord, ...]:
        return self._tools

    @property
    def pending(self) -> bool:
        """True while a signal has not caught up with the latest catalog."""
        return False

    def index(self, tools: Sequence[ToolRecord]) -> None:
        tools = tuple(tools)
        corpus = [tokenize(tool_document(tool)) or ["_"] for tool in tools]
        model = bm25s.BM25()
        if corpus:
            model.index(corpus, show_progress=False)
        with self._lock:
            self._tools, self._bm25 = tools, (model if corpus else None)

    def complete(self, progress: ProgressCallback | None = None) -> None:
        """Nothing heavy to do for BM25 alone."""

    def search(
        self, query: str, *, limit: int = 5, servers: Collection[str] | None = None
    ) -> SearchResponse:
        with self._lock:
            tools, model = self._tools, self._bm25
        tokens = tokenize(query)
        if model is None or not tokens or limit <= 0:
            return SearchResponse(hits=(), signals=("bm25",))
        scores = np.asarray(model.get_scores(tokens))
        allowed = set(servers) if servers else None
        order = np.argsort(-scores, kind="stable")
        hits: list[SearchHit] = []
        for rank, position in enumerate(order, start=1):
            tool = tools[int(position)]
            if scores[position] <= 0 or len(hits) >= limit:
                break
            if allowed is not None and tool.server not in allowed:
                continue
            hits.append(SearchHit(tool=tool, score=float(scores[position]), ranks={"bm25": rank}))
        return SearchResponse(hits=tuple(hits), signals=("bm25",))
