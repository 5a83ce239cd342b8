"""The multilingual vote: a second embedding model for requests not written in English.

The shipped model's word pieces are English ones: requests in scripts its vocabulary breaks apart
(Korean, Chinese, Russian, ...) and many in other languages find their tool less often than English
ones (docs/benchmarks.md, "Requests in other languages"). With the `multilingual` extra installed
(`toolscout.index.multilingual`), a request the language identifier gives at most
`ENGLISH_AT_MOST` probability of being English gets one more vote after everything else: the
multilingual model's order of the allowed tools, blended with the engine's order by the one
reciprocal-rank formula (`search.rrf`, the settings' k) at `SearchSettings.multilingual_weight`.
A vote rather than the whole say: zero-shot, that model is no better than the shipped one overall
(better in the scripts above, worse on Latin-script languages the shipped one was trained on).

English requests never reach the second model: their answers and their cost are those of the
engine without it. The catalog is embedded a second time (about 10 ms a tool on two cores, in
`ToolSearch.complete`, kept in the embedding store under that model's id), and a request not in
English costs one more encoding (about 10 ms).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from toolscout.errors import ConfigError
from toolscout.index.base import Query
from toolscout.index.dense import DenseRetriever
from toolscout.index.embeddings import Embedder
from toolscout.index.multilingual import INSTALL_HINT, MultilingualEncoder, english_probability, installed
from toolscout.search.pipeline import top_positions
from toolscout.search.rrf import weighted_rrf
from toolscout.search.settings import SearchSettings
from toolscout.state.content import ContentStore

__all__ = ["ENGLISH_AT_MOST", "MULTILINGUAL", "MULTILINGUAL_PENDING", "MultilingualVote", "blended", "multilingual_vote"]

log = logging.getLogger(__name__)

# Its name among a hit's ranks and a response's signals.
MULTILINGUAL = "multilingual"
MULTILINGUAL_PENDING = (
    "the multilingual index is still being built; this request, not in English, is answered without its vote"
)
# The identifier's probability of English at or below which a request gets the vote. Short English
# requests are often given some other language first ("Run a specific job": Romanian, 0.21), but
# keep a share of English: the vote must not reach them (it costs English answers, since zero-shot
# the multilingual model is worse in English than the shipped one), and requests in other
# languages are given next to no English.
ENGLISH_AT_MOST = 0.05


class _Superseded(Exception):
    """Stops an embedding for the vote that is no longer wanted (its catalog was replaced)."""


def multilingual_vote(settings: SearchSettings, content: ContentStore) -> MultilingualVote | None:
    """The vote the settings ask for, or None: "off", or "auto" without the extra. "on" without
    the extra is a ConfigError saying how to install it."""
    if settings.multilingual == "off":
        return None
    if not installed():
        if settings.multilingual == "on":
            raise ConfigError(f"the multilingual vote needs the multilingual extra: {INSTALL_HINT}")
        return None
    return MultilingualVote(settings, content)


class MultilingualVote:
    """The multilingual model's embeddings of a catalog, and its order of the tools for a request."""

    def __init__(self, settings: SearchSettings, content: ContentStore) -> None:
        self._encoder = MultilingualEncoder()
        self._embedder = Embedder(settings, self._encoder, content)
        self._weight, self._k = settings.multilingual_weight, settings.rrf_k
        # Why the last catalog could not be embedded for the vote (None: it was, or is being).
        self.error: str | None = None

    def retriever(
        self, texts: Sequence[str], *, cached: bool, wanted: Callable[[], bool] = lambda: True
    ) -> DenseRetriever | None:
        """Cosines over `texts` (the catalog's dense documents); None where a vector is missing
        (`cached`: only those in memory or in the store are read, nothing is encoded), or where
        `wanted()` turned false while encoding (it stops; what was encoded is kept in the store)."""

        def still_wanted(done: int, total: int) -> None:
            if not wanted():
                raise _Superseded

        try:
            rows = self._embedder.cached_matrix(texts) if cached else self._embedder.matrix(texts, still_wanted)
        except _Superseded:
            return None
        except Exception as exc:  # noqa: BLE001 - the vote is optional; the engine answers without it
            self.error = str(exc) or type(exc).__name__
            log.warning("multilingual vote off for this catalog: %s", self.error)
            return None
        if not cached:
            self.error = None
        return None if rows is None else DenseRetriever(rows)

    def missing(self, text: str) -> str | None:
        """What an answer to `text` says while the catalog has no multilingual vectors: nothing
        for a request in English (the vote would not run), else that it is answered without."""
        if english_probability(text) > ENGLISH_AT_MOST:
            return None
        if self.error is not None:
            return f"the multilingual vote is unavailable ({self.error}); this request, not in English, is answered without it"
        return MULTILINGUAL_PENDING

    def blend(
        self, retriever: DenseRetriever, text: str, allowed: np.ndarray | None, depth: int,
        order: list[int], scores: dict[int, float], pinned: Sequence[int], votes: dict[str, list[int]],
    ) -> tuple[list[int], dict[int, float]]:
        """The engine's `order` and `scores` with the vote blended in (`blended`) for a request not
        in English, its order added to `votes`; for one in English, as they are."""
        if english_probability(text) > ENGLISH_AT_MOST:
            return order, scores
        cosines = retriever.scores(Query(text, (), self._encoder.encode_query(text)))
        vote = top_positions(cosines, allowed, depth)
        votes[MULTILINGUAL] = vote
        return blended(order, scores, vote, pinned, self._weight, self._k)


def blended(
    order: list[int], scores: dict[int, float], vote: list[int], pinned: Sequence[int], weight: float, k: float
) -> tuple[list[int], dict[int, float]]:
    """The engine's `order` and the `vote` fused by reciprocal rank (the engine's order at weight 1),
    behind the `pinned` tools (exact name matches), which keep their places. Each place keeps the
    score the engine gave it, so scores stay in descending order and on the engine's scale; a
    tool only the vote found takes the score of the last place before it."""
    head = list(pinned)
    fused = weighted_rrf(
        {"engine": [p for p in order if p not in head], MULTILINGUAL: [p for p in vote if p not in head]},
        {"engine": 1.0, MULTILINGUAL: weight}, k=k,
    )
    new = head + [p for p, _ in fused]
    places = [scores.get(p, 0.0) for p in order]
    kept = {p: places[min(i, len(places) - 1)] if places else 0.0 for i, p in enumerate(new)}
    return new, kept
