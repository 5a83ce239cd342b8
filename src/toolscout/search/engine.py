"""The one retrieval interface the gateway, the CLI and the evaluation harness use.

    engine = ToolSearch(settings)
    engine.index(tools, examples=())  # sync, cheap: fits the keyword signals on a catalog snapshot
    engine.complete(progress)    # sync, heavy: embeddings; callers run it in a worker thread
    engine.search(query, limit=5, servers=None) -> SearchResponse

Each signal scores every tool, keeps its best `max(candidates, 4 x limit)` among the allowed servers,
and weighted Reciprocal Rank Fusion merges those rankings; with `fusion="learned"` the ranker
beside the embedding model (`toolscout.search.ranker`) also orders the union of the candidates,
from what each signal said about each, and its order joins the fusion as one more vote, wherever
it can run (`toolscout.search.fusion.Fusion` decides and says why: `SearchResponse.fusion`). Where it can run, the ranker's match model judges
every search for the weak-match notice, whichever fusion orders, and with the calibration fitted
beside it gives the confidence that the first result serves the request
(`toolscout.search.calibrated.first_result_match`). `index` may be called again at any time;
a search reads one immutable snapshot, swapped in atomically, and answers with keyword signals
(saying so in `notice`) until `complete` has embedded the latest catalog and its example requests
(the intent signal, `toolscout.index.intent`). No MCP imports here.

With example requests, the signals they feed (the intent vote and the expansion field) weigh their
weight x the query's intent confidence: full when close past requests agree on a tool, less when
the nearest past requests are distant or disagree, nothing when none is close. The learned
ranker's order joins the zero-shot signals as one more vote where no past request is close; where
one is, the ranker (fitted without past requests) leaves the order to them and the signals, so
learning from use keeps its say over either fusion.

Adding a signal: give it a name in `toolscout.search.settings.SIGNALS`, build a `Retriever` (one score
per tool) into the snapshot, and it is ranked, fused and explained like the others. Signals over
embeddings (e.g. nearest example requests) reuse `Query.embedding`, computed once per search, and
`Embedder.matrix`, which caches any texts by model and hash. A signal that knows how sure it is of a
query answers a `Retrieval` with its `confidence` (the intent vote); the learned signals' weights
are scaled by it. Every adjustment after fusion (the best sentence's bonus, the demotion of
destructive tools, exact names first) is made in one place, `ToolSearch._adjusted`. Last, a
cross-encoder may rescore the first fused tools (`toolscout.search.rerank`; `_reranked`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.index.base import NOT_RETRIEVED, Encoder, Query, Retrieval, Retriever
from toolscout.index.dense import DenseRetriever
from toolscout.index.embeddings import Embedder
from toolscout.index.intent import IntentExamples, IntentRetriever, LabelledRequest
from toolscout.index.text import dense_document, tokenize
from toolscout.search.base import ProgressCallback, SearchHit, SearchResponse
from toolscout.search.catalog_index import IDENTIFIER, catalog_index
from toolscout.search.calibrated import first_result_match
from toolscout.search.confidence import GAP_RANK, match_strength
from toolscout.search.destructive import asks_to_destroy, demote_destructive
from toolscout.search.fusion import Fusion, weighted_rrf
from toolscout.search.ranker import RANKER_SIGNALS, RERANKER, Candidates, LearnedRanker, fused_head
from toolscout.search.rerank import Reranker, reranked
from toolscout.search.sentences import add_best_part, mean_direction, request_parts
from toolscout.search.settings import LEARNED_SIGNALS, SearchSettings
from toolscout.state.content import ContentStore

if TYPE_CHECKING:
    from toolscout.index.cross_encoder import CrossEncoderScorer
    from toolscout.index.tfidf import FitStore

__all__ = ["PENDING_NOTICE", "SignalRankings", "ToolSearch"]

log = logging.getLogger(__name__)

PENDING_NOTICE = "semantic index is still being built; results use keyword signals only"
MODEL_WAIT = 5.0
EXACT_NAME = "exact_name"
# The learned ranker's order, as it appears among a hit's ranks.
LEARNED = "learned"
# A ready signal: its answer to one query.
_Signal = Callable[[Query], Retrieval]


@dataclass(frozen=True)
class SignalRankings:
    """Each ready signal's best tools for one query, before fusion (what weight tuning replays)."""

    rankings: Mapping[str, list[ToolRecord]]
    # Factor on a signal's fusion weight for this query (the learned signals' intent confidence).
    weight_scale: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Ranked:
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
class _Judged:
    """What the learned ranker said of one request: its candidates, its probability that each
    serves the request, and its match model's probability that some tool does."""

    candidates: Candidates
    probabilities: np.ndarray
    served: float


@dataclass(frozen=True)
class _Snapshot:
    """Everything one search needs, built for one catalog and never mutated afterwards."""

    tools: tuple[ToolRecord, ...] = ()
    retrievers: Mapping[str, Retriever] = field(default_factory=dict)
    dense_texts: tuple[str, ...] = ()
    dense: DenseRetriever | None = None
    intent_examples: IntentExamples = field(default_factory=IntentExamples)
    intent: IntentRetriever | None = None
    # Set once every embedding signal of this snapshot (dense, intent) is ready, or none is wanted.
    embedded: bool = False
    servers: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    # Per tool: deletes, resets or overwrites something (toolscout.search.destructive).
    destructive: tuple[bool, ...] = ()
    # Lower-cased exact forms (ids, names) -> tool positions, and the identifier-like subset that
    # may also match inside a longer query.
    exact: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    contained: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # Per tool: the stemmed words of its name (the learned ranker counts those a request shares).
    name_words: tuple[frozenset[str], ...] = ()


class ToolSearch:
    """Hybrid tool search over a replaceable catalog snapshot (a `SearchEngine`)."""

    def __init__(
        self, settings: SearchSettings | None = None, *, encoder: Encoder | None = None, model_wait: float = MODEL_WAIT
    ) -> None:
        self.settings = settings or SearchSettings()
        # How long a search waits for the embedding model another thread is loading, before it
        # answers from the keyword signals (with a notice) instead.
        self.model_wait = model_wait
        self._snapshot = _Snapshot()
        self._swap = threading.Lock()
        # One complete() at a time: a second caller waits, then finds the work done.
        self._completing = threading.Lock()
        self._dense_on = self.settings.enabled("dense")
        self._intent_on = self.settings.enabled("intent")
        wants_model = self._dense_on or self._intent_on
        self._content = ContentStore(self.settings.shared_vectors, self.settings.resolved_cache_dir)
        self._embedder = Embedder(self.settings, encoder, self._content) if wants_model else None
        self._reranker = None if self.settings.rerank_disabled else Reranker(self.settings)
        self._fusion = Fusion(self.settings)
        self._fits: tuple[FitStore, FitStore] | None = None

    @property
    def tools(self) -> tuple[ToolRecord, ...]:
        return self._snapshot.tools

    @property
    def pending(self) -> bool:
        """True while the semantic signals have not caught up with the latest catalog."""
        snapshot = self._snapshot
        return (
            self._embedder is not None
            and self._embedder.error is None
            and not snapshot.embedded
            and bool(snapshot.tools)
        )

    def index(self, tools: Sequence[ToolRecord], examples: Sequence[LabelledRequest] = ()) -> None:
        """Fit the keyword signals on `tools` and make them the catalog searched from now on.

        `examples` (requests with the ids of the tools that served them) feed the intent signal;
        ids not in `tools` are ignored. Their embeddings are computed by `complete`.
        """
        tools = tuple(tools)
        indexes, fits = self._fit_stores()
        # Read back when this exact catalog was indexed before (a restart, another replica).
        derived = catalog_index(tools, self.settings, dense=self._dense_on, indexes=indexes, fits=fits)
        intent_examples = IntentExamples()
        if self._intent_on:
            intent_examples = IntentExamples.of(examples, {tool.id: i for i, tool in enumerate(tools)})
        snapshot = _Snapshot(
            tools=tools,
            retrievers=derived.retrievers,
            dense_texts=derived.dense_texts,
            intent_examples=intent_examples,
            servers=np.array([t.server for t in tools], dtype=object),
            destructive=derived.destructive,
            name_words=derived.name_words,
            exact=derived.exact,
            contained=derived.contained,
        )
        if self._embedder is not None:
            # Texts embedded before (a re-listing, or a restart over a known catalog: their vectors
            # are read from the disk cache): no need to wait for complete().
            snapshot = self._embedded(snapshot, self._embedder.cached_matrix) or snapshot
        with self._swap:
            self._snapshot = snapshot

    def _fit_stores(self) -> tuple[FitStore | None, FitStore | None]:
        """Where catalog indexes and TF-IDF fits are kept: with the embeddings
        (`toolscout.state.content`); None (built every time) when that store cannot be used."""
        if self._fits is None:
            from toolscout.state.fits import StoredFits

            try:
                store = self._content.get()
            except Exception as exc:  # noqa: BLE001 - building again costs time, never an answer
                log.warning("catalog indexes and TF-IDF fits are not kept (%s)", exc)
                return None, None
            self._fits = (StoredFits(store, "catalog"), StoredFits(store, "tfidf"))
        return self._fits

    def complete(self, progress: ProgressCallback | None = None) -> None:
        """Embed the latest catalog (cached vectors are reused); safe to call from a worker thread."""
        with self._completing:
            # Loaded here, in the background, even when every vector came from the cache at index
            # time: the first search then does not wait for the models to encode its query and
            # rescore its first tools.
            if self._embedder is not None:
                self._embedder.encoder()
            if self._reranker is not None and self._reranker_runs():
                self._reranker.scorer()
            if self._embedder is not None:
                self._complete(self._embedder, progress)

    def _reranker_runs(self) -> bool:
        """Whether the reranker runs on searches: after fusion (modes blend, reorder), or before the
        learned ranker when the ranker loaded reads its score (mode feature)."""
        return self.settings.rerank_mode != "feature" or self._fusion.wants_reranker()

    def _complete(self, embedder: Embedder, progress: ProgressCallback | None) -> None:
        while True:
            snapshot = self._snapshot
            if snapshot.embedded or not snapshot.tools:
                return
            embedded = self._embedded(snapshot, lambda texts: embedder.matrix(texts, progress))
            if embedded is None:  # the model could not be loaded; searches stay keyword-only
                return
            with self._swap:
                if self._snapshot is snapshot:
                    self._snapshot = embedded
                    return
            # index() replaced the catalog meanwhile: embed the new one (mostly cached by now).

    def _embedded(
        self, snapshot: _Snapshot, matrix: Callable[[Sequence[str]], np.ndarray | None]
    ) -> _Snapshot | None:
        """`snapshot` with its embedding signals built from `matrix(texts)`, or None if one is missing."""
        dense = intent = None
        if snapshot.dense_texts:
            tool_rows = matrix(snapshot.dense_texts)
            if tool_rows is None:
                return None
            dense = DenseRetriever(tool_rows)
        examples = snapshot.intent_examples
        if examples:
            example_rows = matrix(examples.texts)
            if example_rows is None:
                return None
            intent = IntentRetriever(
                example_rows,
                examples.labels,
                len(snapshot.tools),
                neighbours=self.settings.intent_neighbours,
                min_similarity=self.settings.intent_min_similarity,
                full_vote=self.settings.intent_full_vote,
            )
        return replace(snapshot, dense=dense, intent=intent, embedded=True)

    def search(
        self, query: str, *, limit: int = 5, servers: Collection[str] | None = None
    ) -> SearchResponse:
        snapshot = self._snapshot
        if snapshot.embedded and self._embedder is not None and self._embedder.encoder(self.model_wait) is None:
            # Vectors came from the cache but the model to encode the query is still loading.
            snapshot = replace(snapshot, dense=None, intent=None, embedded=False)
        settings = self.settings
        signals = _ready_signals(snapshot)
        notice = self._notice(snapshot)
        text = query.strip()
        if not text or limit <= 0 or not snapshot.tools:
            return SearchResponse(hits=(), signals=tuple(signals), notice=notice)
        depth = max(settings.candidates, 4 * limit)
        parts = request_parts(text) if settings.sentence_weight > 0 else []
        vectors = self._encode(snapshot, parts) if parts else None
        # One encoder call for all sentences; their mean direction stands for the whole request.
        whole = mean_direction(vectors) if vectors is not None else None
        if whole is None:
            # Encoded here rather than in _rankings: the match strength reads the same vector.
            encoded = self._encode(snapshot, [text])
            whole = None if encoded is None else encoded[0]
        elif snapshot.dense is not None and vectors is not None:
            # The whole request's and every sentence's cosines in one pass over the catalog.
            snapshot.dense.prepare(np.vstack([whole, vectors]))
        ranked = self._rankings(snapshot, signals, text, depth, servers, whole)
        encoder = self._embedder.encoder(self.model_wait) if "dense" in signals and self._embedder else None
        ranker, fusion = self._fusion.ranker(signals, encoder.model_id if encoder is not None else None)
        feature = _RerankerColumn(text, snapshot, self._feature_scorer(ranker))
        if ranker is not None and ranker.reads_reranker and feature.scorer is None:
            ranker, fusion = self._fusion.without_reranker(ranker, self._reranker_off())
        # The ranker was fitted without past requests: where past requests close to this one vote
        # (the intent signal is confident at all), they and the signals decide as in weighted RRF,
        # and the ranker's vote would only dilute theirs.
        past_requests_decide = bool(ranked.weight_scale.get("intent", 0.0) > 0)
        orders = ranker is not None and settings.fusion == "learned" and not past_requests_decide
        sentences = max(len(parts), 1)
        fused, judged, learned, alone = self._fuse(snapshot, ranked, ranker, orders, sentences, depth, feature)
        part_fusions = [
            self._fuse(
                snapshot,
                self._rankings(snapshot, signals, part, depth, servers, None if vectors is None else vectors[i]),
                ranker if orders else None, orders, 1, depth, feature, alone,
            )[0]
            for i, part in enumerate(parts)
        ]
        if ranker is not None and past_requests_decide and settings.fusion == "learned":
            fusion = f"weighted RRF (past requests close to this one vote; the {fusion} only judges the match)"
        elif ranker is not None and not orders:
            fusion = f"weighted RRF (asked for; the {fusion} only judges the match)"
        elif ranker is not None and alone:
            fusion = f"{fusion}: its gate says its order alone serves requests like this one, and it decides"
        elif ranker is not None:
            fusion = f"{fusion}: its order is one vote beside the signals in weighted RRF (weight {ranker.weight:g})"
        order, scores, exact = self._adjusted(snapshot, text, servers, fused, part_fusions)
        if settings.rerank_mode == "feature":
            rerank_scores = feature.shown()
        else:
            order, scores, rerank_scores = self._reranked(snapshot, text, order, scores, exact)
        positions = {name: {p: rank for rank, p in enumerate(r, start=1)} for name, r in ranked.positions.items()}
        if learned:
            positions[LEARNED] = {p: rank for rank, p in enumerate(learned, start=1)}
        hits = []
        for position in order[:limit]:
            ranks = {name: ranked[position] for name, ranked in positions.items() if position in ranked}
            if position in exact:
                ranks[EXACT_NAME] = 1
            hits.append(
                SearchHit(snapshot.tools[position], scores.get(position, 0.0), ranks, rerank_scores.get(position))
            )
        strength = None
        if judged is not None and ranker is not None:
            strength = first_result_match(
                judged.candidates, judged.probabilities, judged.served, order[0] if order else None,
                self._fusion.calibration(), ranker.weak_below,
            )
        elif "dense" in ranked.scores:
            cosines = ranked.scores["dense"]
            rule = self._fusion.cosine_rule(encoder.model_id if encoder is not None else None)
            strength = match_strength(cosines if ranked.allowed is None else cosines[ranked.allowed], rule)
        return SearchResponse(hits=tuple(hits), signals=tuple(signals), notice=notice, match=strength, fusion=fusion)

    def _fuse(
        self,
        snapshot: _Snapshot,
        ranked: _Ranked,
        ranker: LearnedRanker | None,
        orders: bool,
        sentences: int,
        depth: int,
        feature: _RerankerColumn,
        alone: bool | None = None,
    ) -> tuple[list[tuple[int, float]], _Judged | None, list[int], bool]:
        """Fused (position, score) best first; with the learned ranker also what it judged (its
        candidates, its probability of each and that some tool serves the request), its order
        (when it `orders`; else weighted RRF orders, and the ranker only judges the match), and
        whether that order alone decided.

        The ranker orders the zero-shot signals' candidates; that order joins every signal's
        ranking in weighted RRF as one more vote, with the weight stored beside it
        (`LearnedRanker.weight`). A vote rather than the whole say: fitted on training requests,
        it knows the wording of those (everyday and API-style) better than that of a catalog
        where the words of a request must match a tool's, where the lexical signals keep their
        say. Where its gate says requests like this one are served better by its order alone
        (`LearnedRanker.orders_alone`), that order replaces the zero-shot signals' votes with
        their weight added to its own, so scores (and a sentence's bonus) keep their scale. A
        sentence of a longer request follows the whole request's `alone`: the gate judges what
        the request is like, and one sentence of it looks like another request."""
        settings = self.settings
        if ranker is None:
            return ranked.fuse(settings.weights, settings.rrf_k), None, [], False
        candidates = _candidates(snapshot, ranked, ranker.signals, sentences, depth)
        if not len(candidates):
            return [], None, [], False
        if ranker.reads_reranker:
            assert ranker.reranker_depth is not None, "a ranker reading the reranker names its depth"
            candidates = feature.added(candidates, settings, ranker.reranker_depth)
        probabilities, served = ranker.scored(candidates)
        judged = _Judged(candidates, probabilities, served)
        if not orders:
            return ranked.fuse(settings.weights, settings.rrf_k), judged, [], False
        learned = candidates.positions[np.argsort(-probabilities, kind="stable")].tolist()
        if ranker.orders_alone(candidates) if alone is None else alone:
            # It takes the zero-shot signals' say as well; the learned signals (overlay phrases
            # in the expansion field) keep theirs.
            zero_shot = [name for name in ranked.positions if name not in LEARNED_SIGNALS]
            say = ranker.weight + sum(settings.weights.get(name, 0.0) for name in zero_shot)
            decided = replace(ranked, positions={
                **{name: ranking for name, ranking in ranked.positions.items() if name in LEARNED_SIGNALS},
                LEARNED: learned,
            })
            return decided.fuse({**settings.weights, LEARNED: say}, settings.rrf_k), judged, learned, True
        voted = replace(ranked, positions={**ranked.positions, LEARNED: learned})
        return voted.fuse({**settings.weights, LEARNED: ranker.weight}, settings.rrf_k), judged, learned, False

    def candidates(
        self, query: str, *, depth: int | None = None, servers: Collection[str] | None = None
    ) -> Candidates | None:
        """What the learned ranker reads for `query` (the whole request), or None while a signal it
        needs is not ready; fitting the ranker replays these (`toolscout.training.ranker_fit`)."""
        snapshot = self._snapshot
        signals = _ready_signals(snapshot)
        text = query.strip()
        if not text or not snapshot.tools or not all(name in signals for name in RANKER_SIGNALS):
            return None
        depth = depth or self.settings.candidates
        parts = request_parts(text) if self.settings.sentence_weight > 0 else []
        vectors = self._encode(snapshot, parts) if parts else None
        whole = mean_direction(vectors) if vectors is not None else None
        ranked = self._rankings(snapshot, signals, text, depth, servers, whole)
        return _candidates(snapshot, ranked, RANKER_SIGNALS, max(len(parts), 1), depth)

    def _adjusted(
        self,
        snapshot: _Snapshot,
        text: str,
        servers: Collection[str] | None,
        fused: list[tuple[int, float]],
        part_fusions: Sequence[list[tuple[int, float]]],
    ) -> tuple[list[int], dict[int, float], list[int]]:
        """Every adjustment made after fusion, in this order: each tool gains a share of its best
        sentence's fused score (`search.sentences`); destructive tools sink unless the request asks
        to destroy (`search.destructive`); exact name matches go first. Returns the order, the
        scores and the exact matches."""
        settings = self.settings
        if part_fusions:
            fused = add_best_part(fused, part_fusions, settings.sentence_weight)
        if not asks_to_destroy(text):
            fused = demote_destructive(fused, snapshot.destructive, settings.destructive_factor)
        scores = dict(fused)
        order = [position for position, _ in fused]
        exact: list[int] = []
        if settings.exact_name_boost:
            exact = [p for p in _exact_matches(snapshot, text) if servers is None or snapshot.tools[p].server in servers]
            exact.sort(key=lambda p: -scores.get(p, 0.0))
            order = exact + [p for p in order if p not in set(exact)]
        return order, scores, exact

    def _feature_scorer(self, ranker: LearnedRanker | None) -> CrossEncoderScorer | None:
        """The reranker's scorer when `ranker` reads its score and it can run now, else None."""
        if ranker is None or not ranker.reads_reranker or self._reranker is None or self.settings.fusion != "learned":
            return None
        if self.settings.rerank_mode != "feature":
            return None
        return self._reranker.scorer(self.model_wait)

    def _reranker_off(self) -> str:
        """Why the reranker cannot feed the learned ranker on this search (for `--explain`)."""
        settings = self.settings
        if self._reranker is None:
            return "the reranker is off"
        if settings.fusion != "learned":
            return "fusion is weighted RRF"
        if settings.rerank_mode != "feature":
            return f"the reranker runs after fusion ({settings.rerank_mode})"
        if self._reranker.error is not None:
            return f"the reranker is unavailable: {self._reranker.error}"
        return "the reranker is still loading"

    def _reranked(
        self, snapshot: _Snapshot, text: str, order: list[int], scores: dict[int, float], exact: list[int]
    ) -> tuple[list[int], dict[int, float], dict[int, float]]:
        """The first `rerank_depth` tools after the exact name matches, rescored by the reranker when
        it is loaded (`search.rerank`). Returns the order, the scores and the reranker's scores."""
        scorer = self._reranker.scorer(self.model_wait) if self._reranker is not None else None
        if scorer is None:
            return order, scores, {}
        pinned = set(exact)
        head = [p for p in order if p not in pinned][: self.settings.rerank_depth]
        rescored = scorer.scores(text, [dense_document(snapshot.tools[p]) for p in head])
        candidate_scores = {p: float(score) for p, score in zip(head, rescored)}
        order, scores = reranked(order, scores, candidate_scores, self.settings)
        return order, scores, candidate_scores

    def rankings(
        self, query: str, *, depth: int, servers: Collection[str] | None = None
    ) -> SignalRankings:
        """Each ready signal's best `depth` tools, before fusion, with this query's weight factors."""
        snapshot = self._snapshot
        signals = _ready_signals(snapshot)
        text = query.strip()
        if not text or not snapshot.tools:
            return SignalRankings({})
        ranked = self._rankings(snapshot, signals, text, depth, servers)
        tools = {name: [snapshot.tools[p] for p in positions] for name, positions in ranked.positions.items()}
        return SignalRankings(tools, ranked.weight_scale)

    def _rankings(
        self,
        snapshot: _Snapshot,
        signals: Mapping[str, _Signal],
        text: str,
        depth: int,
        servers: Collection[str] | None,
        embedding: np.ndarray | None = None,
    ) -> _Ranked:
        if embedding is None:
            # One query embedding, shared by every embedding signal.
            embedding = self._encode(snapshot, [text])
            embedding = None if embedding is None else embedding[0]
        request = Query(text=text, tokens=tuple(tokenize(text, stem=self.settings.stem)), embedding=embedding)
        allowed = np.isin(snapshot.servers, list(servers)) if servers is not None else None
        positions: dict[str, list[int]] = {}
        scores: dict[str, np.ndarray] = {}
        scale: dict[str, float] = {}
        for name, signal in signals.items():
            answer = signal(request)
            scores[name] = answer.scores
            positions[name] = _top(answer.scores, allowed, depth)
            if answer.confidence is not None:
                # A signal that reports its confidence is the intent vote. Both learned signals
                # read the same past requests: when none is close to this query, neither is
                # trusted (the zero-shot signals decide).
                scale = dict.fromkeys(LEARNED_SIGNALS, answer.confidence)
        return _Ranked(positions, scale, scores, request.tokens, allowed)

    def _encode(self, snapshot: _Snapshot, texts: Sequence[str]) -> np.ndarray | None:
        """Embeddings of `texts` when an embedding signal is ready, else None."""
        if (snapshot.dense is None and snapshot.intent is None) or self._embedder is None:
            return None
        encoder = self._embedder.encoder()
        return None if encoder is None else np.asarray(encoder.encode(list(texts)), dtype=np.float32)

    def _notice(self, snapshot: _Snapshot) -> str | None:
        if self._embedder is None or not snapshot.tools:
            return None
        # Vectors read from the cache at index time are no use if the model then fails to load.
        if self._embedder.error is not None:
            return f"semantic search is unavailable ({self._embedder.error}); results use keyword signals only"
        return None if snapshot.embedded else PENDING_NOTICE


class _RerankerColumn:
    """The reranker's logits of one request's first candidates, as the learned ranker's column:
    scored once, in one call, for the whole request (what the ranker was fitted on); each sentence's
    candidates reuse them, a tool outside the whole request's first N being unscored."""

    def __init__(self, text: str, snapshot: _Snapshot, scorer: CrossEncoderScorer | None) -> None:
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


def _candidates(
    snapshot: _Snapshot, ranked: _Ranked, signals: Sequence[str], sentences: int, depth: int
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
    cosines = ranked.scores["dense"] if ranked.allowed is None else ranked.scores["dense"][ranked.allowed]
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


def _ready_signals(snapshot: _Snapshot) -> dict[str, _Signal]:
    signals = {name: _unweighed(retriever) for name, retriever in snapshot.retrievers.items()}
    if snapshot.dense is not None:
        signals["dense"] = _unweighed(snapshot.dense)
    if snapshot.intent is not None:
        signals["intent"] = snapshot.intent.vote  # scores, and its confidence for this query
    return signals


def _unweighed(retriever: Retriever) -> _Signal:
    """A retriever that has no notion of confidence, as a signal: its scores, at full weight."""
    return lambda query: Retrieval(retriever.scores(query))


def _top(scores: np.ndarray, allowed: np.ndarray | None, depth: int) -> list[int]:
    """Positions of the best `depth` retrieved tools among the allowed ones, best first."""
    if allowed is not None:
        scores = np.where(allowed, scores, NOT_RETRIEVED)
    valid = np.flatnonzero(scores > NOT_RETRIEVED)
    if valid.size > depth:
        valid = valid[np.argpartition(-scores[valid], depth - 1)[:depth]]
    # Highest score first; equal scores in catalog order, so results are deterministic.
    return valid[np.lexsort((valid, -scores[valid]))].tolist()


def _exact_matches(snapshot: _Snapshot, text: str) -> list[int]:
    found = dict.fromkeys(snapshot.exact.get(text.strip("`'\" ").lower(), ()))
    for word in IDENTIFIER.findall(text):
        found.update(dict.fromkeys(snapshot.contained.get(word.lower(), ())))
    return list(found)
