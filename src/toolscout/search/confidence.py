"""Whether the best match of a search serves the request at all, from what the engine computed.

A search always returns its best tools, and its scores (fused reciprocal ranks) look alike for a
good request and for one no tool serves ("book a flight" with no travel server). The dense
signal's cosines tell them apart: when no tool is close to the request, the best cosine is low
and barely above the tenth best (nothing stands out of the catalog). Both must hold for a weak
match, so a terse request with a low cosine whose best tool still stands out is not called weak.

With a calibrated confidence (`toolscout.search.calibrated`: the probability that the first
result serves the request) the verdict is that confidence below the threshold stored with it.
Without one, with the learned ranker (`toolscout.search.ranker`) the verdict is the ranker's: the best candidate's
probability of serving the request, below the threshold stored in the ranker's file, chosen with
it on catalogs of 5 to 4,000 tools (benchmarks/weak_match.py). The cosine rule below is the
fallback where the ranker cannot run (a signal it reads is off); it needs GAP_RANK tools and its
thresholds (`CosineRule`), which are chosen for one embedding model under the same bound and stored
in that model's ranker file. Cosines of different models are not comparable, so a model without a
rule chosen for it gets no verdict rather than another model's. No MCP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = ["GAP_RANK", "CosineRule", "MatchStrength", "match_strength", "weak_notice"]

# The gap compares the best with this one (1-based); a catalog needs this many tools for a verdict.
GAP_RANK = 10


@dataclass(frozen=True)
class CosineRule:
    """A weak match by the dense signal alone: the best cosine below `max_cosine` and the best minus
    the GAP_RANK-th best below `max_gap` (nothing stands out of the catalog)."""

    max_cosine: float
    max_gap: float

    def as_json(self) -> dict[str, float]:
        return {"max_cosine": self.max_cosine, "max_gap": self.max_gap}

    @classmethod
    def from_json(cls, document: object) -> CosineRule:
        if not isinstance(document, dict):
            raise ValueError("the cosine rule needs {'max_cosine': number, 'max_gap': number}")
        return cls(float(document["max_cosine"]), float(document["max_gap"]))


@dataclass(frozen=True)
class MatchStrength:
    """How well the best tool matches a request: by the learned ranker, else by the dense signal."""

    best_cosine: float | None = None
    # The best cosine minus the GAP_RANK-th best: how far the best stands out of the catalog.
    gap: float | None = None
    # The learned ranker's probability that its best candidate serves the request, and the
    # threshold stored with it (None: that ranker never calls a match weak).
    probability: float | None = None
    weak_below: float | None = None
    # The thresholds the cosines are judged by (chosen for the model that gave them).
    rule: CosineRule | None = None
    # The calibrated probability that the first result serves the request, the threshold below
    # which that is a weak match (None: never), and what it was computed from (`search.calibrated`).
    confidence: float | None = None
    confidence_below: float | None = None
    features: Mapping[str, float] = field(default_factory=dict)

    @property
    def weak(self) -> bool:
        if self.confidence is not None:
            return self.confidence_below is not None and self.confidence < self.confidence_below
        if self.probability is not None:
            return self.weak_below is not None and self.probability < self.weak_below
        if self.best_cosine is None or self.gap is None or self.rule is None:
            return False
        return self.best_cosine < self.rule.max_cosine and self.gap < self.rule.max_gap


def match_strength(cosines: np.ndarray, rule: CosineRule | None) -> MatchStrength | None:
    """From the request's cosine with each tool it may return, judged by `rule`; None with too few
    tools to judge, or no rule chosen for the model that gave the cosines."""
    values = np.asarray(cosines, dtype=np.float32)
    if rule is None or values.size < GAP_RANK:
        return None
    top = -np.partition(-values, GAP_RANK - 1)[:GAP_RANK]
    return MatchStrength(best_cosine=float(top.max()), gap=float(top.max() - top.min()), rule=rule)


def weak_notice(closest: list[str]) -> str:
    """What the agent is told when no tool matches well: every tool the answer returns, best
    first (a weak first tool still leaves a right one further down often enough that the agent
    should read them all), and what to do if none fits."""
    shown = f" Closest, best first: {', '.join(closest)}." if closest else ""
    return (
        "No connected tool matches this request closely." + shown
        + " Read their descriptions and call one only if it fits; if none does, say so rather than"
        " forcing one, or describe the task differently."
    )
