"""The multilingual vote: a second embedding model for requests not written in English.

The shipped model's word pieces are English ones: requests in scripts its vocabulary breaks apart
(Korean, Chinese, Russian, ...) and many in other languages find their tool less often than English
ones (docs/benchmarks.md, "Requests in other languages"). With the `multilingual` extra installed
(`toolscout.index.multilingual`), a request the language identifier gives at most
`ENGLISH_AT_MOST` probability of being English gets one more vote after everything else: the
multilingual model's order of the allowed tools (its request vector through the shipped request
map), blended with the engine's order by the one reciprocal-rank formula (`search.rrf`, the
settings' k) at `SearchSettings.multilingual_weight`. A vote rather than the whole say: the blend
beats either order alone on the dev sets.

English requests never reach the second model: their answers and their cost are those of the
engine without it. The catalog is embedded a second time (about 10 ms a tool on two cores, in
`ToolSearch.complete`, kept in the embedding store under that model's id), and a request not in
English costs one more encoding (about 10 ms).

The engine's confidence was fitted without the vote and reads nothing of it, so an answer the vote
reached gets its confidence from a second small model (`VoteCalibration`, stored with the request
map and fitted by `toolscout.training.multilingual_confidence`) over the engine's confidence of
its own first tool and what the vote says of the first tool that stands (`vote_features`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from toolscout.errors import ConfigError
from toolscout.index.base import Query
from toolscout.index.dense import DenseRetriever
from toolscout.index.embeddings import Embedder
from toolscout.index.multilingual import INSTALL_HINT, MultilingualEncoder, english_probability, installed
from toolscout.search.confidence import MatchStrength
from toolscout.search.pipeline import top_positions
from toolscout.search.rrf import weighted_rrf
from toolscout.search.settings import SearchSettings
from toolscout.state.content import ContentStore

__all__ = [
    "ENGLISH_AT_MOST", "MULTILINGUAL", "MULTILINGUAL_PENDING", "VOTE_FEATURES", "MultilingualVote", "VoteCalibration", "Voted",
    "blended", "multilingual_vote", "vote_features", "vote_on",
]

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


# What the vote's confidence reads (`vote_features`), in its file's order.
VOTE_FEATURES = ("engine_logit", "vote_cosine", "vote_margin", "vote_gap", "engine_first_stands", "vote_first_stands")
# The vote's place whose cosine `vote_gap` measures its best against: an assistant's catalog holds
# near-twins (turn a light on, turn it off), so the best standing out over the second says little
# there; standing out over the fifth says more.
GAP_PLACE = 4


def vote_features(engine_confidence: float, cosines: np.ndarray, vote: Sequence[int], first: int,
                  engine_first: int | None) -> dict[str, float]:
    """The engine's confidence of its own first tool (as a logit), the vote's cosine of the first
    tool that stands, how far the vote's first stands above its second and its fifth, and whether
    the first tool that stands is the engine's first and the vote's first."""
    p = min(max(engine_confidence, 1e-4), 1 - 1e-4)
    return {
        "engine_logit": math.log(p / (1 - p)),
        "vote_cosine": float(cosines[first]),
        "vote_margin": float(cosines[vote[0]] - cosines[vote[1]]) if len(vote) > 1 else 0.0,
        "vote_gap": float(cosines[vote[0]] - cosines[vote[min(GAP_PLACE, len(vote) - 1)]]) if vote else 0.0,
        "engine_first_stands": float(first == engine_first),
        "vote_first_stands": float(bool(vote) and first == vote[0]),
    }


@dataclass(frozen=True)
class VoteCalibration:
    """A logistic model over `VOTE_FEATURES` (standardised): the probability that the first tool
    of an answer the vote reached serves the request, and the weak-match threshold chosen with it."""

    means: tuple[float, ...]
    scales: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    weak_below: float

    @classmethod
    def from_json(cls, document: Mapping) -> VoteCalibration:
        if tuple(document["features"]) != VOTE_FEATURES:
            raise ValueError(f"the vote's confidence reads {document['features']}, not {VOTE_FEATURES}")
        return cls(*(tuple(map(float, document[key])) for key in ("means", "scales", "coefficients")),
                   float(document["intercept"]), float(document["weak_below"]))

    def as_json(self) -> dict:
        return {"features": list(VOTE_FEATURES), "means": list(self.means), "scales": list(self.scales),
                "coefficients": list(self.coefficients), "intercept": self.intercept, "weak_below": self.weak_below}

    def confidence(self, features: Mapping[str, float]) -> float:
        score = self.intercept + sum(
            c * (features[name] - m) / s for name, m, s, c in zip(VOTE_FEATURES, self.means, self.scales, self.coefficients)
        )
        return 1.0 / (1.0 + math.exp(-score))


@dataclass(frozen=True)
class Voted:
    """What the vote did to one answer: enough to judge its first tool."""

    engine_first: int | None
    first: int
    vote: Sequence[int]
    cosines: np.ndarray
    calibration: VoteCalibration | None

    def features(self, engine_confidence: float) -> dict[str, float]:
        """What the vote's confidence reads, given the engine's confidence of its own first tool."""
        return vote_features(engine_confidence, self.cosines, self.vote, self.first, self.engine_first)

    @property
    def judged_first(self) -> int | None:
        """The first tool the engine's own confidence is to be computed for: the engine's first
        where the vote's confidence then takes over, else the first that stands."""
        return self.engine_first if self.calibration is not None else self.first

    def judged(self, strength: MatchStrength | None) -> MatchStrength | None:
        """`strength` (the engine's, of its own first tool) with the vote's confidence, where
        both exist; else as it is."""
        if strength is None or strength.confidence is None or self.calibration is None:
            return strength
        features = self.features(strength.confidence)
        return replace(strength, confidence=self.calibration.confidence(features),
                       confidence_below=self.calibration.weak_below, features={**strength.features, **features})


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
        fitted = (self._encoder.about or {}).get("confidence")
        self._calibration = VoteCalibration.from_json(fitted) if fitted else None
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
    ) -> tuple[list[int], dict[int, float], Voted | None]:
        """The engine's `order` and `scores` with the vote blended in (`blended`) for a request not
        in English, its order added to `votes`, and what judges the answer's first tool; for one
        in English, as they are and None."""
        if english_probability(text) > ENGLISH_AT_MOST:
            return order, scores, None
        cosines = retriever.scores(Query(text, (), self._encoder.encode_query(text)))
        new, kept, voted = vote_on(order, scores, cosines, allowed, depth, pinned, self._weight, self._k, self._calibration)
        votes[MULTILINGUAL] = list(voted.vote) if voted is not None else []  # None: no tool was allowed
        return new, kept, voted


def vote_on(
    order: list[int], scores: dict[int, float], cosines: np.ndarray, allowed: np.ndarray | None, depth: int,
    pinned: Sequence[int], weight: float, k: float, calibration: VoteCalibration | None = None,
) -> tuple[list[int], dict[int, float], Voted | None]:
    """The vote's order (the best `depth` allowed tools by `cosines`) blended into the engine's
    `order` (`blended`), and what judges the first tool that stands (None: nothing stands). The
    engine and the fit of the vote's confidence both blend through here."""
    vote = top_positions(cosines, allowed, depth)
    new, kept = blended(order, scores, vote, pinned, weight, k)
    if not new:
        return new, kept, None
    return new, kept, Voted(order[0] if order else None, new[0], vote, cosines, calibration)


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
