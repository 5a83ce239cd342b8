"""The search pipeline's parts below `ToolSearch` (`toolscout.search.engine`): the table of
signals, the immutable catalog snapshot, the typed per-request state from ranking to fusion, and
the pure steps over it (the learned ranker's candidates, its decision, the fusion of one ranked
text). Nothing here holds state between searches; `ToolSearch` owns the snapshot and the models.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.index.base import NOT_RETRIEVED, Query, Retrieval, Retriever
from toolscout.index.dense import DenseRetriever
from toolscout.index.intent import IntentExamples, IntentRetriever
from toolscout.index.text import dense_document
from toolscout.search.catalog_index import IDENTIFIER, TFIDF_WITHOUT_PHRASES
from toolscout.search.confidence import GAP_RANK
from toolscout.search.destructive import asks_to_destroy, demote_destructive
from toolscout.search.ranker import RERANKER, Candidates, LearnedRanker, fused_head
from toolscout.search.rrf import weighted_rrf
from toolscout.search.sentences import add_best_part
from toolscout.search.settings import LEARNED_SIGNALS, LEXICAL_SIGNALS, SIGNALS, SearchSettings

if TYPE_CHECKING:
    from toolscout.index.cross_encoder import CrossEncoderScorer

__all__ = [
    "EXACT_NAME",
    "LEARNED",
    "SIGNAL_TABLE",
    "Decision",
    "Judged",
    "Ranked",
    "RerankerColumn",
    "Request",
    "Say",
    "Signal",
    "SignalRow",
    "Snapshot",
    "adjusted",
    "decide",
    "exact_matches",
    "fuse_ranked",
    "ranker_candidates",
    "ready_signals",
    "top_positions",
]

EXACT_NAME = "exact_name"
# The learned ranker's order, as it appears among a hit's ranks.
LEARNED = "learned"
# The intent signal's confidence (its top vote / (intent_full_vote x neighbours), at the defaults
# 0.6 x 10) from which past requests decide without the learned ranker's vote: one close past
# request gives at most 1/6 (its cosine), so this takes more than one that agree.
PAST_REQUESTS_AGREE = 0.2
# A ready signal: its answer to one query.
Signal = Callable[[Query], Retrieval]


@dataclass(frozen=True)
class Ranked:
    """Each signal's best positions for one query, and the factor on each weight for it."""

    positions: dict[str, list[int]]
    weight_scale: dict[str, float]
    # What the learned ranker reads besides: each signal's score of every tool, the request's
    # stemmed words, and which tools it may return (None: all).
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    tokens: tuple[str, ...] = ()
    allowed: np.ndarray | None = None

    def fuse(self, weights: Mapping[str, float], k: float) -> list[tuple[int, float]]:
        scaled = {name: w * self.weight_scale.get(name, 1.0) for name, w in weights.items()}
        return weighted_rrf(self.positions, scaled, k=k)


@dataclass(frozen=True)
class Request:
    """One request up to the cut point, where the replays stop (`ToolSearch.candidates`,
    `ToolSearch.rankings`) and `search` goes on: every ready signal's ranking of the whole request
    and of each of its sentences (none for a request of one sentence)."""

    whole: Ranked
    parts: tuple[Ranked, ...]
    depth: int

    @property
    def sentences(self) -> int:
        return max(len(self.parts), 1)


@dataclass(frozen=True)
class Judged:
    """What the learned ranker says of one ranked text: the candidates it read, the probability
    that the best of them serves the text, its order of them (catalog positions), and its
    probability of each (what the calibrated confidence reads)."""

    candidates: Candidates
    probability: float
    order: list[int]
    probabilities: np.ndarray


class Say(Enum):
    """How the learned ranker's order takes part in a request's fusion."""

    RRF = "rrf"  # not at all: weighted RRF orders (the ranker, if any, only judges the match)
    VOTE = "vote"  # one more vote in weighted RRF, with the ranker's weight
    ALONE = "alone"  # in place of the zero-shot signals' votes, with their weight added to its own


@dataclass(frozen=True)
class Decision:
    """How one request is fused, decided once from the whole request (its sentences follow), and
    what `--explain` says of it."""

    say: Say
    fusion: str
    weight: float = 0.0  # the ranker's vote's weight where its order takes part

    @property
    def orders(self) -> bool:
        return self.say is not Say.RRF


@dataclass(frozen=True)
class Snapshot:
    """Everything one search needs, built for one catalog and never mutated afterwards."""

    tools: tuple[ToolRecord, ...] = ()
    retrievers: Mapping[str, Retriever] = field(default_factory=dict)
    dense_texts: tuple[str, ...] = ()
    dense: DenseRetriever | None = None
    intent_examples: IntentExamples = field(default_factory=IntentExamples)
    intent: IntentRetriever | None = None
    # Set once every embedding signal of this snapshot (dense, intent) is ready, or none is wanted.
    embedded: bool = False
    # The multilingual model's cosines over the dense documents, once embedded (`search.multilingual`).
    multilingual: DenseRetriever | None = None
    servers: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    # Per tool: deletes, resets or overwrites something (toolscout.search.destructive).
    destructive: tuple[bool, ...] = ()
    # Lower-cased exact forms (ids, names) -> tool positions, and the identifier-like subset that
    # may also match inside a longer query.
    exact: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    contained: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # Per tool: the stemmed words of its name (the learned ranker counts those a request shares).
    name_words: tuple[frozenset[str], ...] = ()




class RerankerColumn:
    """The reranker's logits of one request's first candidates, as the learned ranker's column:
    scored once, in one call, for the whole request (what the ranker was fitted on); each sentence's
    candidates reuse them, a tool outside the whole request's first N being unscored."""

    def __init__(self, text: str, snapshot: Snapshot, scorer: CrossEncoderScorer | None) -> None:
        self.text = text
        self.snapshot = snapshot
        self.scorer = scorer
        self.logits: dict[int, float] | None = None

    def added(self, candidates: Candidates, settings: SearchSettings, depth: int) -> Candidates:
        """`candidates` with the column (NaN where not scored)."""
        if self.logits is None:
            assert self.scorer is not None, "the reranker's column asked for without a reranker"
            head = candidates.positions[fused_head(candidates, settings.weights, settings.rrf_k, depth)].tolist()
            values = self.scorer.logits(self.text, [dense_document(self.snapshot.tools[p]) for p in head])
            self.logits = dict(zip(head, map(float, values)))
        column = np.array([self.logits.get(int(p), np.nan) for p in candidates.positions])
        return replace(candidates, extra={**candidates.extra, RERANKER: column})

    def shown(self) -> dict[int, float]:
        """The reranker's score (after its activation) of each tool it scored, for `--explain`."""
        if not self.logits or self.scorer is None:
            return {}
        positions = list(self.logits)
        scores = self.scorer.activated(np.array([self.logits[p] for p in positions]))
        return dict(zip(positions, map(float, scores)))


def ranker_candidates(
    snapshot: Snapshot, ranked: Ranked, signals: Sequence[str], sentences: int, depth: int
) -> Candidates:
    """The union of `signals`' top candidates, with everything `search.ranker` reads about them."""
    positions = np.fromiter(
        dict.fromkeys(p for name in signals for p in ranked.positions.get(name, ())), dtype=np.int64
    )
    ranks, scores, best = {}, {}, {}
    for name in signals:
        column = np.full(len(snapshot.tools), np.inf)
        listed = ranked.positions.get(name, [])
        column[listed] = np.arange(1, len(listed) + 1)
        ranks[name] = column[positions]
        all_scores = ranked.scores[name]
        scores[name] = all_scores[positions]
        best[name] = float(all_scores[listed[0]]) if listed else 0.0
    # Without the dense signal (the keyword-only confidence reads these too) nothing stands out by meaning.
    cosines = ranked.scores.get("dense", np.zeros(0))
    cosines = cosines if ranked.allowed is None or not cosines.size else cosines[ranked.allowed]
    top = -np.partition(-cosines, min(GAP_RANK, cosines.size) - 1)[:GAP_RANK] if cosines.size else np.zeros(1)
    words = frozenset(ranked.tokens)
    names = [snapshot.name_words[p] for p in positions]
    return Candidates(
        positions=positions,
        ids=tuple(snapshot.tools[p].id for p in positions),
        ranks=ranks,
        scores=scores,
        best=best,
        dense_gap=float(top.max() - top.min()),
        name_shared=np.array([len(words & name) for name in names], dtype=np.float64),
        name_words=np.array([len(name) for name in names], dtype=np.float64),
        query_words=len(words),
        sentences=sentences,
        catalog=int(ranked.allowed.sum()) if ranked.allowed is not None else len(snapshot.tools),
        depth=depth,
    )


@dataclass(frozen=True)
class SignalRow:
    """One row of the table of signals: its name (`SearchSettings.weights` gives its weight, scaled
    by the intent confidence for the learned ones, `LEARNED_SIGNALS`), and how a snapshot answers
    with it, if it is built there (the keyword signals by `catalog_index`, the embedding ones by
    `ToolSearch._embedded`)."""

    name: str
    answer: Callable[[Snapshot], Signal | None]


def _retrieved(name: str) -> SignalRow:
    """A signal `catalog_index` builds: its retriever's scores, at full weight."""
    return SignalRow(name, lambda s: _unweighed(s.retrievers[name]) if name in s.retrievers else None)


def _tfidf(snapshot: Snapshot) -> Signal | None:
    """TF-IDF over the tools' name, description and learned phrases, for a request some past
    request is close to (the intent vote is not empty); over name and description alone for any
    other. The phrases change the documents' words and their weights, and a request that only
    shares a common word with one ("stop", "install") would otherwise move with every example
    learned: an example must not move an unrelated request's answer."""
    if "tfidf" not in snapshot.retrievers:
        return None
    learned = snapshot.retrievers["tfidf"]
    plain = snapshot.retrievers.get(TFIDF_WITHOUT_PHRASES)
    intent = snapshot.intent
    if plain is None or intent is None:
        return _unweighed(learned)
    return lambda query: Retrieval((learned if intent.vote(query).confidence > 0 else plain).scores(query))


# Every signal, in the order fusion reads them (ties keep the order items were first seen in).
SIGNAL_TABLE: tuple[SignalRow, ...] = (
    *(_retrieved(name) for name in LEXICAL_SIGNALS if name != "tfidf"),
    SignalRow("tfidf", _tfidf),
    SignalRow("dense", lambda s: None if s.dense is None else _unweighed(s.dense)),
    # Scores, and its confidence for this query.
    SignalRow("intent", lambda s: None if s.intent is None else s.intent.vote),
)
assert tuple(row.name for row in SIGNAL_TABLE) == SIGNALS, "the table lists every signal of the settings"


def ready_signals(snapshot: Snapshot) -> dict[str, Signal]:
    """Each signal of the table the snapshot can answer with now, in the table's order."""
    ready = {}
    for row in SIGNAL_TABLE:
        signal = row.answer(snapshot)
        if signal is not None:
            ready[row.name] = signal
    return ready


def _unweighed(retriever: Retriever) -> Signal:
    """A retriever that has no notion of confidence, as a signal: its scores, at full weight."""
    return lambda query: Retrieval(retriever.scores(query))


def top_positions(scores: np.ndarray, allowed: np.ndarray | None, depth: int) -> list[int]:
    """Positions of the best `depth` retrieved tools among the allowed ones, best first."""
    if allowed is not None:
        scores = np.where(allowed, scores, NOT_RETRIEVED)
    valid = np.flatnonzero(scores > NOT_RETRIEVED)
    if valid.size > depth:
        valid = valid[np.argpartition(-scores[valid], depth - 1)[:depth]]
    # Highest score first; equal scores in catalog order, so results are deterministic.
    return valid[np.lexsort((valid, -scores[valid]))].tolist()


def exact_matches(snapshot: Snapshot, text: str) -> list[int]:
    found = dict.fromkeys(snapshot.exact.get(text.strip("`'\" ").lower(), ()))
    for word in IDENTIFIER.findall(text):
        found.update(dict.fromkeys(snapshot.contained.get(word.lower(), ())))
    return list(found)


def decide(
    request: Request, ranker: LearnedRanker | None, fusion: str, judged: Judged | None, settings: SearchSettings
) -> Decision:
    """How the learned ranker (`fusion` says which, or why none) takes part in ordering this
    request, decided once from the whole request and what the ranker `judged` of it; its
    sentences follow that decision.

    The ranker orders the zero-shot signals' candidates; that order joins every signal's
    ranking in weighted RRF as one more vote, with the weight stored beside it
    (`LearnedRanker.weight`). A vote rather than the whole say: fitted on training requests,
    it knows the wording of those (everyday and API-style) better than that of a catalog
    where the words of a request must match a tool's, where the lexical signals keep their
    say. Where its gate says requests like this one are served better by its order alone
    (`LearnedRanker.orders_alone`), it decides alone. A sentence of a longer request follows
    the whole request's decision: the gate judges what the request is like, and one sentence
    of it looks like another request.

    Past requests close to this one (the learned signals) vote on top of whatever is decided
    here. Where several of them agree (`PAST_REQUESTS_AGREE`), they and the signals decide in
    weighted RRF and the ranker only judges the match: it was fitted without past requests, and
    beside many that agree its vote only dilutes theirs. One close past request switches nothing
    off: the keyword signals would otherwise outvote the model and the ranker together on a
    request that only shares words with a tool."""
    if ranker is None:
        return Decision(Say.RRF, fusion)
    if settings.fusion != "learned":
        return Decision(Say.RRF, f"weighted RRF (asked for; the {fusion} only judges the match)")
    learned = request.whole.weight_scale.get("intent", 0.0)
    if learned >= PAST_REQUESTS_AGREE:
        return Decision(Say.RRF, f"weighted RRF (past requests close to this one agree; the {fusion} only judges the match)")
    beside = ", and a past request close to this one votes beside it" if learned > 0 else ""
    if judged is not None and ranker.orders_alone(judged.candidates):
        return Decision(Say.ALONE, f"{fusion}: its gate says its order alone serves requests like this one, and it decides{beside}", ranker.weight)
    return Decision(Say.VOTE, f"{fusion}: its order is one vote beside the signals in weighted RRF (weight {ranker.weight:g}){beside}", ranker.weight)


def fuse_ranked(
    ranked: Ranked, decision: Decision, judged: Judged | None, settings: SearchSettings
) -> tuple[list[tuple[int, float]], list[int]]:
    """One ranked text's fused (position, score), best first, as `decision` says, and the
    learned ranker's order of its candidates (what it `judged`) where that order took part."""
    if not decision.orders:
        return ranked.fuse(settings.weights, settings.rrf_k), []
    if judged is None:
        return [], []
    learned = judged.order
    if decision.say is Say.ALONE:
        # It takes the zero-shot signals' say as well, so scores (and a sentence's bonus) keep
        # their scale; the learned signals (overlay phrases in the expansion field) keep theirs.
        zero_shot = [name for name in ranked.positions if name not in LEARNED_SIGNALS]
        say = decision.weight + sum(settings.weights.get(name, 0.0) for name in zero_shot)
        decided = replace(ranked, positions={
            **{name: ranking for name, ranking in ranked.positions.items() if name in LEARNED_SIGNALS},
            LEARNED: learned,
        })
        return decided.fuse({**settings.weights, LEARNED: say}, settings.rrf_k), learned
    voted = replace(ranked, positions={**ranked.positions, LEARNED: learned})
    return voted.fuse({**settings.weights, LEARNED: decision.weight}, settings.rrf_k), learned


def adjusted(
    snapshot: Snapshot,
    text: str,
    servers: Collection[str] | None,
    fused: list[tuple[int, float]],
    part_fusions: Sequence[list[tuple[int, float]]],
    settings: SearchSettings,
) -> tuple[list[int], dict[int, float], list[int]]:
    """Every adjustment made after fusion, in this order: each tool gains a share of its best
    sentence's fused score (`search.sentences`); destructive tools sink unless the request asks
    to destroy (`search.destructive`); exact name matches go first. Returns the order, the
    scores and the exact matches."""
    if part_fusions:
        fused = add_best_part(fused, part_fusions, settings.sentence_weight)
    if not asks_to_destroy(text):
        fused = demote_destructive(fused, snapshot.destructive, settings.destructive_factor)
    scores = dict(fused)
    order = [position for position, _ in fused]
    exact: list[int] = []
    if settings.exact_name_boost:
        exact = [p for p in exact_matches(snapshot, text) if servers is None or snapshot.tools[p].server in servers]
        exact.sort(key=lambda p: -scores.get(p, 0.0))
        order = exact + [p for p in order if p not in set(exact)]
    return order, scores, exact
