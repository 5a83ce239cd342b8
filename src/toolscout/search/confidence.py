"""Whether the best match of a search serves the request at all, from what the engine computed.

A search always returns its best tools, and its scores (fused reciprocal ranks) look alike for a
good request and for one no tool serves ("book a flight" with no travel server). The dense
signal's cosines tell them apart: when no tool is close to the request, the best cosine is low
and barely above the tenth best (nothing stands out of the catalog). Both must hold for a weak
match, so a terse request with a low cosine whose best tool still stands out is not called weak.

With the learned ranker (`toolscout.search.ranker`) the verdict is its own: the best candidate's
probability of serving the request, below the threshold stored in the ranker's file, chosen with
it on catalogs of 5 to 4,000 tools (benchmarks/weak_match.py). The cosine rule below is the
fallback where the ranker cannot run; it was calibrated on etom_mcp (1,983 feasible requests, 91
no tool serves) for the model shipped before the ranker, and needs GAP_RANK tools. No MCP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["GAP_RANK", "MAX_COSINE", "MAX_GAP", "MatchStrength", "match_strength", "weak_notice"]

# Best cosine below this and the best minus the tenth best below GAP: a weak match.
MAX_COSINE = 0.33
MAX_GAP = 0.11
# The gap compares the best with this one (1-based); a catalog needs this many tools for a verdict.
GAP_RANK = 10


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

    @property
    def weak(self) -> bool:
        if self.probability is not None:
            return self.weak_below is not None and self.probability < self.weak_below
        if self.best_cosine is None or self.gap is None:
            return False
        return self.best_cosine < MAX_COSINE and self.gap < MAX_GAP


def match_strength(cosines: np.ndarray) -> MatchStrength | None:
    """From the request's cosine with each tool it may return; None with too few tools to judge."""
    values = np.asarray(cosines, dtype=np.float32)
    if values.size < GAP_RANK:
        return None
    top = -np.partition(-values, GAP_RANK - 1)[:GAP_RANK]
    return MatchStrength(best_cosine=float(top.max()), gap=float(top.max() - top.min()))


def weak_notice(closest: list[str]) -> str:
    """What the agent is told when no tool matches well."""
    shown = f" Closest: {', '.join(closest)}." if closest else ""
    return (
        "Nothing here serves this request well: no connected tool matches it closely." + shown
        + " If none of these fits, say so rather than forcing one, or describe the task differently."
    )
