"""How the search engine ranks: signals, their fusion weights, the embedding model, caches.

A signal with weight 0 (or absent from `weights`) is off and never computed.

    bm25_name         BM25 over the name field (name words, server, title, leading verb)
    bm25_description  BM25 over the description field (description, parameters, enum values)
    bm25_expansion    BM25 over the expansion field (user phrases attached to tools)
    tfidf             TF-IDF cosine over all lexical fields together
    dense             cosine between sentence embeddings of the query and of the tool
    intent            nearest example requests (needs examples; off without them)

After fusion, a cross-encoder (`reranker`) may rescore the first `rerank_depth` tools, reading the
request with each tool's document (toolscout.search.rerank); `rerank_mode` says how its scores
combine with the fused ranking.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

import platformdirs

from toolscout.errors import ConfigError
from toolscout.index.model_files import DEFAULT_MODEL, model_disabled
from toolscout.json_files import read_json_file
from toolscout.search.confidence import CosineRule
from toolscout.search.rrf import RRF_K

__all__ = [
    "DEFAULT_INTENT_FULL_VOTE",
    "DEFAULT_INTENT_MIN_SIMILARITY",
    "DEFAULT_INTENT_NEIGHBOURS",
    "DEFAULT_RRF_K",
    "DEFAULT_WEIGHTS",
    "FUSIONS",
    "LEARNED_SIGNALS",
    "LEXICAL_SIGNALS",
    "MULTILINGUAL_ENVIRONMENT",
    "MULTILINGUAL_MODES",
    "RERANK_MODES",
    "SIGNALS",
    "SearchSettings",
    "apply_weights_option",
    "multilingual_from_environment",
    "parse_signals",
    "parse_weights",
]

FUSIONS = ("learned", "rrf")
SIGNALS = ("bm25_name", "bm25_description", "bm25_expansion", "tfidf", "dense", "intent")
LEXICAL_SIGNALS = ("bm25_name", "bm25_description", "bm25_expansion", "tfidf")
# Signals fed by example requests (the expansion field and the intent vote): with examples, their
# weights follow each query's intent confidence (`intent_full_vote`).
LEARNED_SIGNALS = ("bm25_expansion", "intent")

# Tuned on toollens_train queries only, never on the evaluation sets: a grid over k in
# {1, 5, 10, 20, 60} and the weights, fitted on 2,500 queries, checked on 2,500 others. k = 5 and
# these weights scored best (Full Recall@10 0.455 on the check half vs 0.445 at k = 60). The name
# field alone adds nothing there (its words are also in the TF-IDF document). Expansion starts at 1:
# it is empty until overlays or examples exist. `toolscout tune` re-checked these by 5-fold
# cross-validation on all toollens_train queries and kept them (its fit trades Full Recall for MRR).
# Intent (off without examples) is 3: fitted with `tune --fold-examples --params intent,bm25_expansion`
# (each fold searched with the other folds' queries as examples; docs/benchmarks.md, "Tuned weights").
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "bm25_name": 0.0,
        "bm25_description": 0.5,
        "bm25_expansion": 1.0,
        "tfidf": 1.0,
        "dense": 1.0,
        "intent": 3.0,
    }
)
DEFAULT_RRF_K = RRF_K
DEFAULT_INTENT_NEIGHBOURS = 10
# A cosine floor of 0.55 (all-MiniLM-L6-v2) and full trust at a top vote of 0.6 x 10 neighbours:
# chosen on toollens_train by cross-validation over three splits of the examples (by request, by
# relevant tool set, and sharing no tool with the evaluated requests), as the best sum of Full
# Recall@10 + MRR@10 over the three (docs/benchmarks.md, "Tuned weights"); re-chosen the same way
# for the tool-retrieval model and for the multilingual one with the learned fusion
# (benchmarks/intent_floor.py), and 0.55 is still the best.
DEFAULT_INTENT_MIN_SIMILARITY = 0.55
DEFAULT_INTENT_FULL_VOTE = 0.6
# How the reranker's scores join the ranking:
#   feature  its score of the first candidates is a column of the learned ranker, when the ranker
#            loaded reads one (it then scores as many as the ranker was fitted with); else it
#            does nothing and is never loaded;
#   reorder  after fusion, sort the first rerank_depth tools by its score alone;
#   blend    after fusion, sort them by 1/(rrf_k + fused rank) + rerank_weight/(rrf_k + reranker rank).
RERANK_MODES = ("feature", "reorder", "blend")
MULTILINGUAL_MODES = ("auto", "on", "off")
MULTILINGUAL_ENVIRONMENT = "TOOLSCOUT_MULTILINGUAL"


def multilingual_from_environment() -> str:
    """The multilingual vote's default mode: $TOOLSCOUT_MULTILINGUAL, else "auto". One setting for
    every engine a process and its children build (a container's environment; the test suite
    turns the vote off where a test does not ask for it)."""
    value = os.environ.get(MULTILINGUAL_ENVIRONMENT, "auto")
    if value not in MULTILINGUAL_MODES:
        raise ConfigError(f"${MULTILINGUAL_ENVIRONMENT} must be one of {', '.join(MULTILINGUAL_MODES)}, got {value!r}")
    return value


@dataclass(frozen=True)
class SearchSettings:
    """Every field has a default; build variants with `dataclasses.replace`."""

    rrf_k: int = DEFAULT_RRF_K
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    # The embedding model: "bundled" (shipped inside toolscout), an installed package or a folder
    # path (toolscout.index.model_files); None or "none" disables dense.
    model: str | None = DEFAULT_MODEL
    # Where the exported ONNX model is cached, and the machine's own store of embeddings and fitted
    # TF-IDF indexes (`toolscout.state.content`); None means the user cache dir.
    cache_dir: Path | None = None
    # A postgresql:// state store whose embeddings and TF-IDF fits every replica shares
    # (`toolscout.state.vectors`, `toolscout.state.fits`); None: the machine's own store, in cache_dir.
    shared_vectors: str | None = None
    # How many tools each signal hands to fusion, at least (4 x limit when that is more).
    candidates: int = 50
    # A query that is, or contains, a tool's exact id or name ranks that tool first.
    exact_name_boost: bool = True
    # "onnx" (fast queries, no torch at query time) or "torch" (sentence-transformers).
    backend: str = "onnx"
    # Snowball stemming in the shared tokenizer.
    stem: bool = True
    # How many nearest example requests vote in the intent signal.
    intent_neighbours: int = DEFAULT_INTENT_NEIGHBOURS
    # Examples less similar to the query than this (cosine) do not vote.
    intent_min_similarity: float = DEFAULT_INTENT_MIN_SIMILARITY
    # With examples, the learned signals (LEARNED_SIGNALS) weigh their weight x the query's intent
    # confidence: the best tool's vote / (this x intent_neighbours), at most 1. 0 always trusts fully.
    intent_full_vote: float = DEFAULT_INTENT_FULL_VOTE
    # A request of several sentences also searches each sentence; a tool gains this weight x its
    # best sentence's fused score (toolscout.search.sentences); chosen on toollens_train. It costs one
    # batched encoding of the sentences: toolbench_stb p50 8.7-9.1 -> 10.8-13.0 ms. 0 turns it off.
    sentence_weight: float = 1.0
    # Unless a request asks to delete, reset or overwrite something, a destructive tool's fused
    # score is multiplied by this (toolscout.search.destructive). Not tuned (no tuning set has
    # destructive tools): it lies between the RRF score ratios of ranks 1:2 (6/7) and 1:3 (6/8) at
    # k = 5, so a destructive tool gives up at most one place to a constructive one. 1 turns it off.
    destructive_factor: float = 0.8
    # The cross-encoder that rescores the first candidates: "bundled" (the optional package
    # toolscout-reranker; an error saying how to install it without it), an installed package or a folder (a
    # sentence-transformers CrossEncoder is exported to ONNX once); None or "none" turns it off.
    # Off by default: the first trained reranker won on everyday requests and lost on etom_mcp, and
    # costs a model run per rescored tool (docs/benchmarks.md, "Reranker").
    reranker: str | None = None
    # How many of the first fused tools it rescores (one model run each: the cost of a search).
    rerank_depth: int = 5
    # RERANK_MODES; `rerank_weight` is the reranker's share in "blend". Blending beat reordering on
    # every set measured (reordering lost 0.07 top-1 on etom_mcp). "feature" feeds a ranker fitted
    # with the reranker's score (`ranker_file`); the shipped ranker is not (docs/benchmarks.md).
    rerank_mode: str = "blend"
    rerank_weight: float = 1.0
    # "learned": the learned ranker beside the embedding model (toolscout.search.ranker) orders the
    # candidates per request and its order joins weighted RRF as one more vote, where it can run;
    # weighted RRF alone otherwise; "rrf": weighted RRF orders, and the ranker (where it can run)
    # only judges the match for the weak-match notice. The default since it won or tied on every
    # dev set (docs/benchmarks.md, "Learned fusion").
    fusion: str = "learned"
    # The multilingual vote for requests not in English (toolscout.search.multilingual): "auto"
    # (on where the multilingual extra is installed), "on" (without the extra: an error saying how
    # to install it) or "off"; `multilingual_weight` is its share beside the engine's order. Above
    # 1 the vote wins the ties of the one rank formula (at 1 the engine keeps each of them): with
    # its request map, the multilingual model reads these requests better than the engine does
    # in every language measured (docs/search-engine.md, "Requests in other languages"). Its
    # default is $TOOLSCOUT_MULTILINGUAL where set.
    multilingual: str = field(default_factory=multilingual_from_environment)
    multilingual_weight: float = 1.5
    # A ranker.json to use instead of the one beside the model (fitting and evaluating rankers).
    ranker_file: Path | None = None
    # The dense-only weak-match rule's thresholds where the learned ranker cannot judge the match;
    # None: the ones stored in the ranker file fitted for the model in use, else no verdict (a rule
    # chosen for one model's cosines means nothing for another's; benchmarks/weak_match.py chooses
    # one for a model).
    weak_match_rule: CosineRule | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(SIGNALS))
        if unknown:
            raise ValueError(_unknown_message(unknown))
        if any(value < 0 for value in self.weights.values()) or self.sentence_weight < 0:
            raise ValueError("signal weights and sentence_weight must be >= 0")
        if self.rrf_k < 0 or self.candidates < 1 or self.intent_neighbours < 1:
            raise ValueError("rrf_k must be >= 0, candidates and intent_neighbours >= 1")
        if not 0 < self.destructive_factor <= 1:
            raise ValueError(f"destructive_factor must be in (0, 1], got {self.destructive_factor}")
        if self.rerank_mode not in RERANK_MODES:
            raise ValueError(f"rerank_mode must be one of {', '.join(RERANK_MODES)}, got {self.rerank_mode!r}")
        if self.rerank_depth < 1 or self.rerank_weight < 0:
            raise ValueError("rerank_depth must be >= 1 and rerank_weight >= 0")
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {self.fusion!r}")
        if self.multilingual not in MULTILINGUAL_MODES or self.multilingual_weight < 0:
            raise ValueError(f"multilingual must be one of {', '.join(MULTILINGUAL_MODES)} and its weight >= 0, "
                             f"got {self.multilingual!r} and {self.multilingual_weight}")
        if not 0 <= self.intent_full_vote <= 1:
            raise ValueError(f"intent_full_vote must be between 0 and 1, got {self.intent_full_vote}")

    @classmethod
    def lexical_only(cls, **overrides: object) -> SearchSettings:
        """Keyword signals only, no embedding model nor reranker: fast to build, for tests and small machines."""
        weights = {name: w for name, w in DEFAULT_WEIGHTS.items() if name in LEXICAL_SIGNALS}
        return cls(**{"weights": weights, "model": None, "reranker": None, **overrides})  # type: ignore[arg-type]

    def enabled(self, signal: str) -> bool:
        if signal in ("dense", "intent") and self.dense_disabled:
            return False
        return self.weights.get(signal, 0.0) > 0

    @property
    def dense_disabled(self) -> bool:
        return model_disabled(self.model)

    @property
    def rerank_disabled(self) -> bool:
        return model_disabled(self.reranker)

    @property
    def resolved_cache_dir(self) -> Path:
        if self.cache_dir is not None:
            return Path(self.cache_dir)
        return Path(platformdirs.user_cache_dir("toolscout")) / "embeddings"

    def with_weights(self, weights: Mapping[str, float]) -> SearchSettings:
        return replace(self, weights=dict(weights))


def parse_weights(text: str) -> dict[str, float]:
    """`"dense=1,bm25_name=0.5"` -> weights; signals not named are off. ValueError says what is wrong."""
    weights: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"weight '{item}' is not NAME=NUMBER (e.g. dense=1,bm25_name=0.5)")
        if name not in SIGNALS:
            raise ValueError(_unknown_message([name]))
        try:
            weights[name] = float(value)
        except ValueError:
            raise ValueError(f"weight of '{name}' is not a number: '{value.strip()}'") from None
        if weights[name] < 0:
            raise ValueError(f"weight of '{name}' must be >= 0, got {weights[name]}")
    if not weights:
        raise ValueError("no weights given; expected e.g. dense=1,bm25_name=0.5")
    return weights


def apply_weights_option(settings: SearchSettings, text: str) -> SearchSettings:
    """`settings` with the `--weights` option applied: `"a=1,b=2"`, or a weights.json file.

    A weights file (written by `toolscout tune`) is `{"weights": {signal: weight}, "rrf_k": k}`;
    its `rrf_k`, when present, replaces the settings' k. ValueError says what is wrong.
    """
    if "=" in text or not (text.endswith(".json") or Path(text).is_file()):
        return settings.with_weights(parse_weights(text))
    advice = "Write it with `toolscout tune`."
    document = read_json_file(Path(text), "weights file", error=ValueError, advice=advice)
    raw = document.get("weights") if isinstance(document, dict) else None
    if not isinstance(raw, dict) or not all(isinstance(v, (int, float)) for v in raw.values()):
        raise ValueError(f'weights file {text} needs {{"weights": {{"signal": number, ...}}}}')
    try:
        weights = parse_weights(",".join(f"{name}={value}" for name, value in raw.items()))
    except ValueError as exc:
        raise ValueError(f"weights file {text}: {exc}") from None
    rrf_k = document.get("rrf_k", settings.rrf_k)
    if not isinstance(rrf_k, (int, float)) or isinstance(rrf_k, bool) or rrf_k < 0:
        raise ValueError(f"weights file {text}: 'rrf_k' must be a number >= 0")
    return replace(settings, weights=weights, rrf_k=rrf_k)


def parse_signals(text: str) -> dict[str, float]:
    """`"bm25_name,dense"` -> those signals at their default weights (the others off)."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in SIGNALS]
    if unknown or not names:
        raise ValueError(_unknown_message(unknown) if unknown else "no signals given")
    return {name: DEFAULT_WEIGHTS[name] for name in names}


def _unknown_message(names: list[str]) -> str:
    return f"unknown signal(s) {', '.join(map(repr, names))}; known signals: {', '.join(SIGNALS)}"
