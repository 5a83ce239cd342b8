"""The calibrated confidence that a search's first result serves the request: a probability.

The learned ranker's probabilities order candidates well but are not the chance that the first one
is right: a request no tool serves still gets a best probability of 0.1-0.4, and a served one may
get 0.06. A small model turns what the search already computed into that chance: the ranker's
best probability and its margin over the second, the match model's verdict, the best cosine and
how far it stands out of the catalog (best minus tenth), the best keyword scores, whether the
signals agree on the first result, the request's length and the catalog's size
(`request_features`). A logistic model reads them, and a sigmoid fitted on its scores of held-out
sources (Platt scaling) turns its score into a probability (calibrated: of answers given
confidence 0.7, about 70% had a first result that serves the request, on a mix of served requests
and requests whose right tool was dropped from the catalog). The sigmoid is strictly increasing,
so every difference the score makes survives (an isotonic map's flat steps would tie most
requests no tool serves with served ones at the low end, where the notice's threshold lies). Below `Calibration.weak_below` the weak-match notice fires.

While the dense signal is not ready (the first seconds of a first start, or `--model none`) the
ranker cannot run and the answer is keyword only; a second calibration over what such a search has
(`KEYWORD_FEATURES`: the keyword signals' best scores, how far their best stands out of the
second, the first result's share of them, the signals' agreement, the request's length and the
catalog's size; `keyword_match`) gives its confidence, fitted the same way on keyword-only
searches. It reads no model, so it is `keyword_confidence.json` beside the ranker file (same
format, no ranker digest), and the bundled model's one serves wherever no model is in use.

The fitted model is `confidence.json` beside the ranker file (plain numbers: coefficients, feature
means and scales, the sigmoid's slope and offset), fitted by `toolscout.training.confidence_fit` for one
ranker file (its sha256 is stored): a confidence read through another ranker's probabilities would
mean nothing, so a file fitted for another ranker is not used. No MCP, no training code.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toolscout.errors import ConfigError
from toolscout.search.confidence import MatchStrength
from toolscout.search.ranker import RANKER_SIGNALS, Candidates

__all__ = [
    "CONFIDENCE_FILE",
    "FEATURES",
    "KEYWORD_CONFIDENCE_FILE",
    "KEYWORD_FEATURES",
    "KEYWORD_SIGNALS",
    "Calibration",
    "first_result_match",
    "keyword_features",
    "keyword_match",
    "load_calibration",
    "ranker_digest",
    "request_features",
]

log = logging.getLogger(__name__)

CONFIDENCE_FILE = "confidence.json"
KEYWORD_CONFIDENCE_FILE = "keyword_confidence.json"
FORMAT = "toolscout-confidence"
VERSION = 1
# A logit of a probability clipped to this keeps a certain ranker from giving infinities.
_EPS = 1e-6

# What `request_features` computes, in the order the model reads them.
FEATURES = (
    "ranker_logit",  # the ranker's logit of its best candidate
    "ranker_margin",  # ... minus its logit of the second best
    "first_logit",  # the ranker's logit of the first result (where the fusion put another first)
    "first_is_ranker_best",
    "match_logit",  # the ranker's match model: some tool of the catalog serves it
    "dense_best",  # best cosine among the tools the request may return
    "dense_gap",  # ... minus the tenth best
    "first_cosine_margin",  # best cosine minus the first result's
    "bm25_best",  # log1p of the best BM25 score
    "tfidf_best",
    "first_signals_first",  # how many zero-shot signals put the first result first
    "first_signals_top5",
    "first_query_share",  # share of the request's words in the first result's name
    "query_words",  # log1p
    "sentences",
    "catalog",  # log1p of the tools the request may return
)

# The signals a keyword-only search has (the learned ones join only with past requests).
KEYWORD_SIGNALS = ("bm25_name", "bm25_description", "tfidf")
# What `keyword_features` computes, in the order the keyword-only model reads them.
KEYWORD_FEATURES = (
    *(f"{s}_best" for s in KEYWORD_SIGNALS),  # log1p of the signal's best score
    *(f"{s}_second" for s in KEYWORD_SIGNALS),  # its second best / its best: nothing stands out near 1
    *(f"first_{s}_ratio" for s in KEYWORD_SIGNALS),  # the first result's score / the best
    "first_signals_first",
    "first_signals_top5",
    "first_query_share",
    "query_words",
    "sentences",
    "catalog",
)


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1 - _EPS)
    return math.log(p / (1 - p))


def request_features(
    candidates: Candidates, probabilities: np.ndarray, served: float, first: int | None
) -> dict[str, float]:
    """What the confidence reads of one search: its candidates (`search.ranker.Candidates`), the
    ranker's probability of each and its match model's `served`, and the catalog position of the
    first result (None: no result). Where the first result is not among the candidates (an exact
    name match, a tool past requests voted for), the ranker's best stands in for it."""
    order = np.argsort(-probabilities, kind="stable")
    best = _logit(float(probabilities[order[0]]))
    second = _logit(float(probabilities[order[1]])) if len(order) > 1 else _logit(0.0)
    hits = np.flatnonzero(candidates.positions == first) if first is not None else np.zeros(0, dtype=int)
    index = int(hits[0]) if hits.size else int(order[0])
    cosine = float(np.asarray(candidates.scores.get("dense", np.zeros(len(candidates))))[index])
    dense_best = float(candidates.best.get("dense", 0.0))
    return {
        "ranker_logit": best,
        "ranker_margin": best - second,
        "first_logit": _logit(float(probabilities[index])),
        "first_is_ranker_best": float(index == int(order[0])),
        "match_logit": _logit(served),
        "dense_best": dense_best,
        "dense_gap": float(candidates.dense_gap),
        "first_cosine_margin": dense_best - cosine if math.isfinite(cosine) else 1.0,
        "bm25_best": math.log1p(max(float(candidates.best.get("bm25_description", 0.0)), 0.0)),
        "tfidf_best": math.log1p(max(float(candidates.best.get("tfidf", 0.0)), 0.0)),
        **_first_and_request(candidates, index, RANKER_SIGNALS),
    }


def _first_and_request(candidates: Candidates, index: int, signals: tuple[str, ...]) -> dict[str, float]:
    """What both confidences read of the first result (the candidate at `index`: how many of
    `signals` put it first and in their top 5, the request's words in its name) and of the request."""
    ranks = [np.asarray(candidates.ranks[s])[index] for s in signals if s in candidates.ranks]
    return {
        "first_signals_first": float(sum(r == 1 for r in ranks)),
        "first_signals_top5": float(sum(r <= 5 for r in ranks)),
        "first_query_share": float(candidates.name_shared[index]) / max(candidates.query_words, 1),
        "query_words": math.log1p(candidates.query_words),
        "sentences": float(min(candidates.sentences, 8)),
        "catalog": math.log1p(candidates.catalog),
    }


def keyword_features(candidates: Candidates, first: int | None) -> dict[str, float]:
    """What the keyword-only confidence reads of one search: its keyword signals' candidates
    (`KEYWORD_SIGNALS`) and the catalog position of the first result (None: no result; one that
    is not a candidate, an exact name match, reads as the signals' first listed)."""
    hits = np.flatnonzero(candidates.positions == first) if first is not None else np.zeros(0, dtype=int)
    index = int(hits[0]) if hits.size else 0
    features: dict[str, float] = {}
    for s in KEYWORD_SIGNALS:
        scores = np.asarray(candidates.scores.get(s, np.zeros(len(candidates))), dtype=np.float64)
        scores = np.where(np.isfinite(scores), np.maximum(scores, 0.0), 0.0)
        top = np.sort(scores)[::-1]
        best = float(top[0]) if top.size else 0.0
        features[f"{s}_best"] = math.log1p(best)
        features[f"{s}_second"] = float(top[1]) / best if top.size > 1 and best > 0 else 0.0
        features[f"first_{s}_ratio"] = float(scores[index]) / best if best > 0 else 0.0
    return {**features, **_first_and_request(candidates, index, KEYWORD_SIGNALS)}


def keyword_match(candidates: Candidates, first: int | None, calibration: Calibration | None) -> MatchStrength | None:
    """How well the first result of a keyword-only search matches: its calibrated confidence
    where the keyword-only calibration is found (its threshold then decides a weak match), else
    only what it would read (no verdict); None when no keyword signal listed a candidate."""
    if not len(candidates):
        return None
    features = keyword_features(candidates, first)
    if calibration is None:
        return MatchStrength(features=features)
    return MatchStrength(confidence=calibration.confidence(features), confidence_below=calibration.weak_below,
                         features=features)


@dataclass(frozen=True)
class Calibration:
    """P(the first result serves the request): a logistic score over `features` (standardised),
    mapped to a probability by a sigmoid, 1 / (1 + exp(slope x score + offset)) (Platt scaling,
    as scikit-learn writes it)."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coefficients: np.ndarray
    intercept: float
    slope: float
    offset: float
    # Below this confidence the weak-match notice fires (None: never).
    weak_below: float | None = None
    # sha256 of the ranker file it was fitted with; None: any.
    ranker_sha256: str | None = None
    about: Mapping[str, Any] = field(default_factory=dict)
    # (features, confidence) pairs the fitting library computed: a loaded file must reproduce them.
    reference: tuple[tuple[Mapping[str, float], float], ...] = ()

    def score(self, features: Mapping[str, float]) -> float:
        """The logistic model's logit (what the sigmoid reads)."""
        row = np.array([features[name] for name in self.features], dtype=np.float64)
        return float(((row - self.mean) / self.scale) @ self.coefficients + self.intercept)

    def confidence(self, features: Mapping[str, float]) -> float:
        z = self.slope * self.score(features) + self.offset
        # Written so that neither end overflows.
        return float(math.exp(-z) / (1.0 + math.exp(-z)) if z >= 0 else 1.0 / (1.0 + math.exp(z)))

    def weak(self, confidence: float) -> bool:
        return self.weak_below is not None and confidence < self.weak_below

    def as_json(self) -> dict[str, Any]:
        def floats(values: np.ndarray) -> list[float]:
            return [float(v) for v in values]

        return {
            "format": FORMAT, "version": VERSION, "kind": "logistic+sigmoid",
            "features": list(self.features), "mean": floats(self.mean), "scale": floats(self.scale),
            "coefficients": floats(self.coefficients), "intercept": float(self.intercept),
            "sigmoid": {"slope": float(self.slope), "offset": float(self.offset)},
            "weak_below": self.weak_below, "ranker_sha256": self.ranker_sha256, "about": dict(self.about),
            "reference": [{"features": dict(f), "confidence": c} for f, c in self.reference],
        }

    def write(self, path: Path) -> None:
        # Whole or not at all: an engine loading it meanwhile never reads half a file.
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(self.as_json(), indent=1) + "\n", encoding="utf-8")
        partial.replace(path)

    @classmethod
    def from_json(cls, document: Any, origin: str = CONFIDENCE_FILE) -> Calibration:
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ConfigError(f"{origin} is not a {FORMAT} file")
        if document.get("version") != VERSION:
            raise ConfigError(f"{origin} is version {document.get('version')!r}; this toolscout reads version "
                              f"{VERSION}: refit it with python -m toolscout.training.confidence_fit")
        try:
            features = tuple(str(name) for name in document["features"])
            mean, scale, coefficients = (np.asarray(document[k], dtype=np.float64) for k in ("mean", "scale", "coefficients"))
            slope, offset = float(document["sigmoid"]["slope"]), float(document["sigmoid"]["offset"])
            weak = document.get("weak_below")
            reference = tuple(({str(k): float(v) for k, v in row["features"].items()}, float(row["confidence"]))
                              for row in document.get("reference", ()))
            calibration = cls(features, mean, scale, coefficients, float(document["intercept"]), slope, offset,
                              weak_below=None if weak is None else float(weak),
                              ranker_sha256=document.get("ranker_sha256") or None,
                              about=document.get("about") or {}, reference=reference)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{origin} is malformed: {exc}") from None
        unknown = sorted(set(features) - set(FEATURES) - set(KEYWORD_FEATURES))
        if unknown:
            raise ConfigError(f"{origin} reads feature(s) this toolscout does not compute: {', '.join(unknown)}")
        if any(a.shape != (len(features),) for a in (mean, scale, coefficients)) or not np.all(scale > 0):
            raise ConfigError(f"{origin} is malformed: mean, scale and coefficients need one value per feature")
        return calibration


def first_result_match(
    candidates: Candidates,
    probabilities: np.ndarray,
    served: float,
    first: int | None,
    calibration: Calibration | None,
    weak_below: float | None,
) -> MatchStrength:
    """How well the first result (catalog position `first`) matches, from what the learned ranker
    judged: the calibrated confidence where a calibration is fitted for that ranker (its threshold
    then decides a weak match), else the ranker's own probability against `weak_below`."""
    features = request_features(candidates, probabilities, served, first)
    if calibration is None:
        return MatchStrength(probability=served, weak_below=weak_below, features=features)
    return MatchStrength(probability=served, weak_below=weak_below, confidence=calibration.confidence(features),
                         confidence_below=calibration.weak_below, features=features)


def ranker_digest(path: Path) -> str:
    """sha256 of a ranker file (what a calibration is fitted with)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_calibration(ranker_path: Path, name: str = CONFIDENCE_FILE) -> tuple[Calibration | None, str]:
    """The calibration `name` beside `ranker_path`, fitted with that ranker file (or with none: the
    keyword-only one); or None and why not."""
    path = ranker_path.with_name(name)
    if not path.is_file():
        return None, f"no {name} beside {ranker_path.name}"
    try:
        calibration = Calibration.from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
        if calibration.ranker_sha256 and ranker_path.is_file() and calibration.ranker_sha256 != ranker_digest(ranker_path):
            raise ConfigError(f"{path} was fitted with another {ranker_path.name}: refit it with "
                              "python -m toolscout.training.confidence_fit")
    except (OSError, ValueError, ConfigError) as exc:
        log.warning("no calibrated confidence: %s", exc)
        return None, f"{name} unusable ({exc})"
    return calibration, f"calibrated confidence ({name})"
