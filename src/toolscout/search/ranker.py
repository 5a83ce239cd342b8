"""A fusion learned per request: one small model scores each candidate from what the signals said.

Weighted RRF gives each signal the same say on every request, so two lexical signals agreeing on
one shared word outvote a dense signal that is right ("make the header row bold" -> an excel tool
sharing "row"). The learned ranker reads, for every candidate of the zero-shot signals, each
signal's rank and score, the score's margin to that signal's best, the dense cosine, how many
query words the tool's name shares, and the request's length, sentence count and catalog size,
and scores it with a linear model (fitted as a softmax over each training request's candidates;
`toolscout.training.ranker_fit`). Its order joins weighted RRF as one more vote, with the weight
stored beside it (`LearnedRanker.weight`), or, where a small gate over what the request is like
says its order alone serves such requests better, orders alone (`LearnedRanker.orders_alone`). A second small
logistic model reads the best candidate's features (and the ranker's logit of it) and says how
likely it is that anything in the catalog serves the request: what the weak-match notice reads
(`MatchStrength.probability`), whichever fusion orders the hits.

The model is a small JSON file, `ranker.json`, beside the embedding model it was fitted for
(never pickle: coefficients, feature means and scales, its vote's weight, the match model and the
weak-match threshold chosen with it, the model's digest). `toolscout.search.engine` loads it with the model and falls back to weighted
RRF, saying why, when it cannot run: no file, a file for another model, a signal it reads is off.
A later score joins as one more column: `Candidates.extra` carries it, and a ranker fitted with it
lists it among its features; one fitted without it ignores it. The cross-encoder's logits of the
first N candidates by the signals' weighted RRF (`fused_head`) are such a column, under the key
`RERANKER` (`reranker_columns` turns them into features); a ranker that reads them names N
(`reranker_depth`) and may carry the ranker fitted without them (`without_reranker`), which stands
in while the reranker is off.

A linear score over per-candidate features alone is one fixed fusion: a column that is the same for
every candidate of a request (its length, the best cosine) shifts them all and orders nothing. So a
feature may be a product, `"dense_rrf*query_words"`: a signal's say that grows or shrinks with what
the request is like, which is how the ranker weighs the signals differently per request.
Fitting: `toolscout.training.ranker_fit`. No MCP.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toolscout.errors import ConfigError
from toolscout.search.confidence import CosineRule
from toolscout.search.rrf import RRF_K, reciprocal_rank

__all__ = [
    "FEATURE_NAMES",
    "FORMAT",
    "RANKER_FILE",
    "RANKER_SIGNALS",
    "RERANKER",
    "RERANKER_FEATURES",
    "RRF_K",
    "VERSION",
    "Candidates",
    "LearnedRanker",
    "Linear",
    "RANKER_LOGIT",
    "feature_columns",
    "feature_matrix",
    "feature_parts",
    "fused_head",
    "fused_scores",
    "load_ranker",
    "reranker_columns",
]

log = logging.getLogger(__name__)

RANKER_FILE = "ranker.json"
FORMAT = "toolscout-ranker"
VERSION = 1
# The zero-shot signals the ranker reads (the learned ones, fed by past requests, join on top).
RANKER_SIGNALS = ("bm25_description", "tfidf", "dense")
LEXICAL = ("bm25_description", "tfidf")
# Joins the columns of a product feature.
PRODUCT = "*"
# The `Candidates.extra` key of the cross-encoder's logits (`reranker_columns` turns them into columns).
RERANKER = "reranker"
RERANKER_FEATURES = ("reranker_logit", "reranker_rrf", "reranker_first", "reranker_scored")


@dataclass(frozen=True)
class Candidates:
    """What the signals said about one request's candidates: the raw material of the features.

    `positions` are catalog positions, in the order the signals first listed them; every
    per-candidate array is aligned with them."""

    positions: np.ndarray  # [n] int
    ids: tuple[str, ...]
    # Per signal: 1-based rank among its top `depth` (inf where it did not list the candidate) and
    # its raw score of the candidate (-inf where it did not retrieve it at all).
    ranks: Mapping[str, np.ndarray]
    scores: Mapping[str, np.ndarray]
    # Per signal: its best score among the tools the request may return.
    best: Mapping[str, float]
    # The best dense cosine minus the tenth best (or the last, in a smaller catalog).
    dense_gap: float
    name_shared: np.ndarray  # [n] query words (stemmed) in the tool's name
    name_words: np.ndarray  # [n] words in the tool's name
    query_words: int
    sentences: int
    catalog: int  # tools the request may return
    depth: int
    # Optional columns computed elsewhere, e.g. {"reranker": scores}.
    extra: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.positions)


def _names() -> tuple[str, ...]:
    per_signal = {s: ("rrf", "log_rank", "first", *(() if s == "dense" else ("ratio", "best"))) for s in RANKER_SIGNALS}
    return (
        *(f"{s}_{suffix}" for s, suffixes in per_signal.items() for suffix in suffixes),
        "dense_cosine", "dense_margin", "dense_best", "dense_gap", "signals_first", "signals_top5",
        "name_shared", "name_share", "query_share", "query_words", "sentences", "catalog",
    )


# Every column `feature_columns` computes without optional ones (`Candidates.extra`).
FEATURE_NAMES = _names()


def feature_columns(c: Candidates) -> dict[str, np.ndarray]:
    """Every feature the ranker may read, by name, one value per candidate (float64)."""
    n = len(c)
    columns: dict[str, np.ndarray] = {}
    missing_rank = 2.0 * c.depth
    top1 = np.zeros(n)
    top5 = np.zeros(n)
    for s in RANKER_SIGNALS:
        ranks = np.asarray(c.ranks.get(s, np.full(n, np.inf)), dtype=np.float64)
        listed = np.isfinite(ranks)
        columns[f"{s}_rrf"] = np.where(listed, reciprocal_rank(np.where(listed, ranks, 0.0)), 0.0)
        columns[f"{s}_log_rank"] = np.log(np.where(listed, ranks, missing_rank))
        columns[f"{s}_first"] = (ranks == 1).astype(np.float64)
        top1 += ranks == 1
        top5 += ranks <= 5
        raw = np.asarray(c.scores.get(s, np.full(n, -np.inf)), dtype=np.float64)
        best = float(c.best.get(s, 0.0))
        if s == "dense":
            cosine = np.where(np.isfinite(raw), raw, 0.0)
            columns["dense_cosine"] = cosine
            columns["dense_margin"] = best - cosine
            columns["dense_best"] = np.full(n, best)
            columns["dense_gap"] = np.full(n, c.dense_gap)
        else:
            score = np.where(np.isfinite(raw), np.maximum(raw, 0.0), 0.0)
            columns[f"{s}_ratio"] = score / best if best > 0 else np.zeros(n)
            columns[f"{s}_best"] = np.full(n, math.log1p(max(best, 0.0)))
    columns["signals_first"] = top1
    columns["signals_top5"] = top5
    shared = np.asarray(c.name_shared, dtype=np.float64)
    columns["name_shared"] = shared
    columns["name_share"] = shared / np.maximum(np.asarray(c.name_words, dtype=np.float64), 1.0)
    columns["query_share"] = shared / max(c.query_words, 1)
    columns["query_words"] = np.full(n, math.log1p(c.query_words))
    columns["sentences"] = np.full(n, float(min(c.sentences, 8)))
    columns["catalog"] = np.full(n, math.log1p(c.catalog))
    for name, values in c.extra.items():
        if name == RERANKER:
            columns.update(reranker_columns(np.asarray(values, dtype=np.float64)))
        else:
            columns[name] = np.asarray(values, dtype=np.float64)
    return columns


def fused_scores(c: Candidates, weights: Mapping[str, float], k: float) -> np.ndarray:
    """Each candidate's weighted RRF score over the signals' ranks of it (0 where none listed it)."""
    fused = np.zeros(len(c))
    for signal, ranks in c.ranks.items():
        fused += reciprocal_rank(np.asarray(ranks, dtype=np.float64), weights.get(signal, 0.0), k)
    return fused


def fused_head(c: Candidates, weights: Mapping[str, float], k: float, depth: int) -> np.ndarray:
    """Indices of the first `depth` candidates by the signals' weighted RRF (ties in listing order):
    the ones the reranker scores, before the ranker runs, in the engine and in fitting alike."""
    return np.argsort(-fused_scores(c, weights, k), kind="stable")[:depth]


def reranker_columns(logits: np.ndarray) -> dict[str, np.ndarray]:
    """The cross-encoder's say about each candidate, from its logits (NaN: not scored, i.e. beyond
    the first N of the signals' weighted RRF): the logit (an unscored candidate counts as the worst
    scored one), its reciprocal rank among the scored, whether it is the reranker's first, and
    whether it was scored at all."""
    scored = np.isfinite(logits)
    n = len(logits)
    if not scored.any():
        zeros = np.zeros(n)
        return {"reranker_logit": zeros, "reranker_rrf": zeros, "reranker_first": zeros, "reranker_scored": zeros}
    values = np.where(scored, logits, np.min(logits[scored]))
    order = np.argsort(np.where(scored, -logits, np.inf), kind="stable")
    ranks = np.empty(n)
    ranks[order] = np.arange(1, n + 1)
    return {
        "reranker_logit": values,
        "reranker_rrf": np.where(scored, reciprocal_rank(ranks), 0.0),
        "reranker_first": (scored & (ranks == 1)).astype(np.float64),
        "reranker_scored": scored.astype(np.float64),
    }


@dataclass(frozen=True)
class Linear:
    """A logistic model over named features, standardised: what both parts of a ranker file are."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coefficients: np.ndarray
    intercept: float

    def probabilities(self, matrix: np.ndarray) -> np.ndarray:
        logits = ((matrix - self.mean) / self.scale) @ self.coefficients + self.intercept
        return 1.0 / (1.0 + np.exp(-logits))

    def as_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": [float(v) for v in self.mean],
                "scale": [float(v) for v in self.scale], "coefficients": [float(v) for v in self.coefficients],
                "intercept": float(self.intercept)}

    @classmethod
    def from_json(cls, document: Any, origin: str) -> Linear:
        try:
            features = tuple(str(name) for name in document["features"])
            arrays = [np.asarray(document[key], dtype=np.float64) for key in ("mean", "scale", "coefficients")]
            intercept = float(document["intercept"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{origin} is malformed: {exc}") from None
        if any(a.shape != (len(features),) for a in arrays) or not np.all(arrays[1] > 0):
            raise ConfigError(f"{origin} is malformed: mean, scale and coefficients need one value per feature")
        return cls(features, *arrays, intercept=intercept)


# The weak-match model reads the best candidate's features and this one: the ranker's logit of it.
RANKER_LOGIT = "ranker_logit"


@dataclass(frozen=True)
class LearnedRanker:
    """A logistic model over `feature_columns`: P(candidate serves the request)."""

    ranking: Linear
    # A request whose best candidate's probability is below this gets the weak-match notice.
    weak_below: float | None = None
    # The weight of the ranker's order as one more vote in weighted RRF beside the signals
    # (`toolscout.search.engine`), chosen with it.
    weight: float = 1.0
    # sha256 (hex prefix) of the embedding model file it was fitted for; None: any model.
    model_digest: str | None = None
    # Free-form provenance written by the fitting code (data, sizes, scores); shown, never read.
    about: Mapping[str, Any] = field(default_factory=dict)
    signals: tuple[str, ...] = RANKER_SIGNALS
    # P(some tool of the catalog serves the request), from the best candidate's features; what the
    # weak-match notice reads. None: the best candidate's probability stands in for it.
    match: Linear | None = None
    # A ranker that reads the reranker's columns: how many of the first candidates (by the signals'
    # weighted RRF, `fused_head`) the reranker scores for it, as when it was fitted; and the ranker
    # fitted without them, which stands in while the reranker is off.
    reranker_depth: int | None = None
    without_reranker: LearnedRanker | None = None
    # The dense-only weak-match rule's thresholds for the same embedding model, chosen with the
    # threshold above: what judges the match where this ranker cannot run (a signal it reads is off).
    cosine_rule: CosineRule | None = None
    # Whether the ranker's order alone serves a request better than its vote beside the signals,
    # from what the request is like (`gate`, over per-request columns); above `alone_above` the
    # ranker orders alone. None: it always votes.
    gate: Linear | None = None
    alone_above: float | None = None

    @property
    def features(self) -> tuple[str, ...]:
        return self.ranking.features

    @property
    def reads_reranker(self) -> bool:
        return any(part in RERANKER_FEATURES for name in self.features for part in feature_parts(name))

    def probabilities(self, candidates: Candidates) -> np.ndarray:
        return self.scored(candidates)[0]

    def scored(self, candidates: Candidates) -> tuple[np.ndarray, float]:
        """Each candidate's probability of serving the request, and the probability that the best
        one does (the match model's, else the best candidate's own)."""
        if not len(candidates):
            return np.zeros(0), 0.0
        columns = feature_columns(candidates)
        missing = sorted({part for name in self.features for part in feature_parts(name) if part not in columns})
        if missing:
            raise ConfigError(f"ranker reads feature(s) this request lacks: {', '.join(missing)}")
        probabilities = self.probabilities_of(feature_matrix(columns, self.features))
        best = int(np.argmax(probabilities))
        if self.match is None:
            return probabilities, float(probabilities[best])
        p = float(np.clip(probabilities[best], 1e-12, 1 - 1e-12))
        row = {name: values[best : best + 1] for name, values in columns.items()}
        row[RANKER_LOGIT] = np.array([math.log(p / (1 - p))])
        return probabilities, float(self.match.probabilities(feature_matrix(row, self.match.features))[0])

    def orders_alone(self, candidates: Candidates) -> bool:
        """Whether the ranker's order alone, rather than its vote, should order this request."""
        if self.gate is None or self.alone_above is None or not len(candidates):
            return False
        row = feature_matrix(feature_columns(candidates), self.gate.features)[:1]
        return bool(self.gate.probabilities(row)[0] > self.alone_above)

    def probabilities_of(self, matrix: np.ndarray) -> np.ndarray:
        return self.ranking.probabilities(matrix) if len(matrix) else np.zeros(0)

    def as_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "kind": "logistic",
            "signals": list(self.signals),
            "fusion_weight": self.weight,
            **self.ranking.as_json(),
            "weak_match": {"max_probability_below": self.weak_below,
                           "model": None if self.match is None else self.match.as_json(),
                           "cosine_rule": None if self.cosine_rule is None else self.cosine_rule.as_json()},
            "model_sha256": self.model_digest,
            "about": dict(self.about),
            **({"gate": {"model": self.gate.as_json(), "alone_above": self.alone_above}} if self.gate is not None else {}),
            **({"reranker": {"depth": self.reranker_depth}} if self.reranker_depth is not None else {}),
            **({"without_reranker": self.without_reranker.as_json()} if self.without_reranker is not None else {}),
        }

    def write(self, path: Path) -> None:
        # Whole or not at all: an engine loading it meanwhile never reads half a file.
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(self.as_json(), indent=1) + "\n", encoding="utf-8")
        partial.replace(path)

    @classmethod
    def from_json(cls, document: Any, origin: str = "ranker file") -> LearnedRanker:
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ConfigError(f"{origin} is not a {FORMAT} file")
        if document.get("version") != VERSION or document.get("kind") != "logistic":
            raise ConfigError(f"{origin} is version {document.get('version')!r} ({document.get('kind')!r}); "
                              f"this toolscout reads version {VERSION} (logistic): refit it with train-ranker")
        ranking = Linear.from_json(document, origin)
        try:
            weak_match = document.get("weak_match") or {}
            weak = weak_match.get("max_probability_below")
            match = weak_match.get("model")
            signals = tuple(str(name) for name in document.get("signals", RANKER_SIGNALS))
            weight = float(document.get("fusion_weight", 1.0))
            depth = (document.get("reranker") or {}).get("depth")
            depth = None if depth is None else int(depth)
            rule = weak_match.get("cosine_rule")
            rule = None if rule is None else CosineRule.from_json(rule)
            gate = document.get("gate")
            alone_above = None if gate is None else float(gate["alone_above"])
            gate = None if gate is None else Linear.from_json(gate["model"], f"{origin} (gate model)")
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{origin} is malformed: {exc}") from None
        digest = document.get("model_sha256")
        without = document.get("without_reranker")
        ranker = cls(ranking, weak_below=None if weak is None else float(weak), weight=weight,
                     model_digest=str(digest) if digest else None, about=document.get("about") or {}, signals=signals,
                     match=None if match is None else Linear.from_json(match, f"{origin} (weak_match model)"),
                     reranker_depth=depth, cosine_rule=rule, gate=gate, alone_above=alone_above,
                     without_reranker=None if without is None else cls.from_json(without, f"{origin} (without_reranker)"))
        if ranker.reads_reranker and (depth is None or depth < 1):
            raise ConfigError(f"{origin} is malformed: it reads the reranker's columns but names no reranker depth >= 1")
        return ranker


def load_ranker(folder: Path, name: str = RANKER_FILE) -> tuple[LearnedRanker | None, str]:
    """The ranker file in `folder` (beside a model), or None and why not (for `--explain` and the log)."""
    path = folder / name
    if not path.is_file():
        return None, f"no {name} beside the embedding model"
    try:
        ranker = LearnedRanker.from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, ValueError, ConfigError) as exc:
        log.warning("learned ranker not used: %s", exc)
        return None, f"{name} unusable ({exc})"
    return ranker, f"learned ranker ({name}, {len(ranker.features)} features)"


def feature_parts(name: str) -> tuple[str, ...]:
    """The columns a feature multiplies: ("dense_rrf", "query_words") for "dense_rrf*query_words"."""
    return tuple(name.split(PRODUCT))


def feature_matrix(columns: Mapping[str, np.ndarray], features: Sequence[str]) -> np.ndarray:
    """The feature matrix [candidates, features] of `columns` in the ranker's order (a product
    feature is its columns multiplied)."""
    return np.stack([np.prod([columns[part] for part in feature_parts(name)], axis=0) for name in features], axis=1)
