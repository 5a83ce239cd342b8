"""The one retrieval interface the gateway, the CLI and the evaluation harness use.

    engine = ToolSearch(settings)
    engine.index(tools, examples=())  # sync, cheap: fits the keyword signals on a catalog snapshot
    engine.complete(progress)    # sync, heavy: embeddings; callers run it in a worker thread
    engine.search(query, limit=5, servers=None) -> SearchResponse

Each signal scores every tool, keeps its best `max(candidates, 4 x limit)` among the allowed servers,
and weighted Reciprocal Rank Fusion merges those rankings; with `fusion="learned"` the ranker beside
the embedding model (`toolscout.search.ranker`) also orders the union of the candidates, and its
order joins the fusion as one more vote wherever it can run (`toolscout.search.fusion.Fusion`
decides and says why: `SearchResponse.fusion`). Its match model judges every search it can, and
with the calibration beside it gives the confidence that the first result serves the request
(`toolscout.search.calibrated.first_result_match`). `index` may be called again at any time; a
search reads one immutable snapshot, swapped in atomically, and answers with keyword signals
(saying so in `notice`) until `complete` has embedded the latest catalog and its example requests
(the intent signal, `toolscout.index.intent`). No MCP imports here.

With example requests, the signals they feed (the intent vote and the expansion field) weigh their
weight x the query's intent confidence; where several close past requests agree, they and the
signals decide and the ranker (fitted without past requests) only judges (`pipeline.decide`).

One pipeline, whatever asks (the gateway's `search_tools`, `toolscout search` on a cached or fresh
catalog, `toolscout eval`, and the replays that fit and choose knobs):
1. signals: the table `SIGNAL_TABLE` (name; how a snapshot answers with it, built by
   `catalog_index` or `_embedded`; its weight is `SearchSettings.weights[name]`, scaled by the
   intent confidence for the learned signals), read in one order;
2. rank (`_request`): every ready signal's best tools for the whole request and for each of its
   sentences, into the typed per-request state `Request`. This is the cut point: the replays
   (`candidates`, what the learned ranker reads; `rankings`, what weight tuning fuses) stop here,
   on exactly what `search` goes on from;
3. decide (`_judged`, `pipeline.decide`): the learned ranker reads the whole request's candidates
   (`ranker_candidates`, the one place its inputs are computed) and one `Decision` says how its order
   takes part (not at all, a vote, alone), followed by every sentence;
4. fuse (`pipeline.fuse_ranked`) the whole request and each sentence, then every adjustment after fusion (the
   best sentence's bonus, the demotion of destructive tools, exact names first) in one place,
   `pipeline.adjusted`; last, a cross-encoder may rescore the first fused tools (`toolscout.search.rerank`;
   `Reranker.rescored`), unless the ranker reads its score as a column (`RerankerColumn`);
5. for a request not in English, the multilingual vote (`search.multilingual`), where it is on.

Adding a signal: give it a name in `toolscout.search.settings.SIGNALS` and a row in `SIGNAL_TABLE`,
build a `Retriever` (one score per tool) into the snapshot, and it is ranked, fused and explained
like the others. Signals over embeddings (e.g. nearest example requests) reuse `Query.embedding`,
computed once per search, and `Embedder.matrix`, which caches any texts by model and hash. A signal
that knows how sure it is of a query answers a `Retrieval` with its `confidence` (the intent vote);
the learned signals' weights are scaled by it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.index.base import Encoder, Query
from toolscout.index.dense import DenseRetriever
from toolscout.index.embeddings import Embedder
from toolscout.index.intent import IntentExamples, IntentRetriever, LabelledRequest
from toolscout.index.text import tokenize
from toolscout.search.base import ProgressCallback, SearchHit, SearchResponse
from toolscout.search.calibrated import KEYWORD_SIGNALS, first_result_match, keyword_match
from toolscout.search.catalog_index import catalog_index
from toolscout.search.confidence import MatchStrength, match_strength
from toolscout.search.fusion import Fusion
from toolscout.search.multilingual import MULTILINGUAL, multilingual_vote
from toolscout.search.pipeline import (
    EXACT_NAME,
    LEARNED,
    Judged,
    Ranked,
    RerankerColumn,
    Request,
    Signal,
    Snapshot,
    adjusted,
    decide,
    fuse_ranked,
    ranker_candidates,
    ready_signals,
    top_positions,
)
from toolscout.search.ranker import RANKER_SIGNALS, Candidates, LearnedRanker
from toolscout.search.rerank import Reranker
from toolscout.search.sentences import mean_direction, request_parts
from toolscout.search.settings import LEARNED_SIGNALS, SearchSettings
from toolscout.state.content import ContentStore

if TYPE_CHECKING:
    from toolscout.index.cross_encoder import CrossEncoderScorer
    from toolscout.index.tfidf import FitStore

__all__ = ["PENDING_NOTICE", "SignalRankings", "ToolSearch"]

log = logging.getLogger(__name__)

PENDING_NOTICE = "semantic index is still being built; results use keyword signals only"
MODEL_WAIT = 5.0

@dataclass(frozen=True)
class SignalRankings:
    """Each ready signal's best tools for one query, before fusion (what weight tuning replays)."""

    rankings: Mapping[str, list[ToolRecord]]
    # Factor on a signal's fusion weight for this query (the learned signals' intent confidence).
    weight_scale: Mapping[str, float] = field(default_factory=dict)

class ToolSearch:
    """Hybrid tool search over a replaceable catalog snapshot (a `SearchEngine`)."""

    def __init__(
        self, settings: SearchSettings | None = None, *, encoder: Encoder | None = None, model_wait: float = MODEL_WAIT
    ) -> None:
        self.settings = settings or SearchSettings()
        # How long a search waits for the embedding model another thread is loading, before it
        # answers from the keyword signals (with a notice) instead.
        self.model_wait = model_wait
        self._snapshot = Snapshot()
        self._swap = threading.Lock()
        # One complete() at a time: a second caller waits, then finds the work done.
        self._completing = threading.Lock()
        self._dense_on = self.settings.enabled("dense")
        self._intent_on = self.settings.enabled("intent")
        wants_model = self._dense_on or self._intent_on
        self._content = ContentStore(self.settings.shared_vectors, self.settings.resolved_cache_dir)
        self._embedder = Embedder(self.settings, encoder, self._content) if wants_model else None
        self._reranker = None if self.settings.rerank_disabled else Reranker(self.settings)
        # Its one role, chosen once by `rerank_mode`: a column the learned ranker reads ("feature"),
        # or a rescoring of the first tools after fusion (the other modes).
        self._ranker_column = self._reranker if self.settings.rerank_mode == "feature" else None
        self._after_fusion = self._reranker if self.settings.rerank_mode != "feature" else None
        self._fusion = Fusion(self.settings)
        # Needs the dense documents; a caller's own encoder is a stand-in, so no second model beside it.
        self._multilingual = multilingual_vote(self.settings, self._content) if self._dense_on and encoder is None else None
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
        snapshot = Snapshot(
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
        if self._multilingual is not None and snapshot.dense_texts:
            snapshot = replace(snapshot, multilingual=self._multilingual.retriever(snapshot.dense_texts, cached=True))
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
            if self._after_fusion is not None:
                self._after_fusion.scorer()
            elif self._ranker_column is not None and self._fusion.wants_reranker():
                self._ranker_column.scorer()
            if self._embedder is not None:
                self._complete(self._embedder, progress)
            if self._multilingual is not None:
                self._complete_multilingual()

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

    def _complete_multilingual(self) -> None:
        """Embed the latest catalog for the multilingual vote, after the embedding signals; stop
        when `index` replaces the catalog meanwhile (the next `complete` goes on from the store)."""
        assert self._multilingual is not None
        snapshot = self._snapshot
        if snapshot.multilingual is not None or not snapshot.dense_texts:
            return
        retriever = self._multilingual.retriever(
            snapshot.dense_texts, cached=False, wanted=lambda: self._snapshot.tools is snapshot.tools
        )
        with self._swap:
            if retriever is not None and self._snapshot is snapshot:
                self._snapshot = replace(snapshot, multilingual=retriever)

    def _embedded(
        self, snapshot: Snapshot, matrix: Callable[[Sequence[str]], np.ndarray | None]
    ) -> Snapshot | None:
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
        signals = ready_signals(snapshot)
        text = query.strip()
        notice = self._notice(snapshot)
        if text and notice is None and self._multilingual is not None and snapshot.multilingual is None and snapshot.dense_texts:
            notice = self._multilingual.missing(text)
        if not text or limit <= 0 or not snapshot.tools:
            return SearchResponse(hits=(), signals=tuple(signals), notice=notice)
        request = self._request(snapshot, signals, text, max(settings.candidates, 4 * limit), servers)
        encoder = self._embedder.encoder(self.model_wait) if "dense" in signals and self._embedder else None
        ranker, fusion = self._fusion.ranker(signals, encoder.model_id if encoder is not None else None)
        feature = RerankerColumn(text, snapshot, self._feature_scorer(ranker))
        if ranker is not None and ranker.reads_reranker and feature.scorer is None:
            ranker, fusion = self._fusion.without_reranker(ranker, self._reranker_off())

        def judge(ranked: Ranked, sentences: int) -> Judged | None:
            return None if ranker is None else self._judged(snapshot, ranked, ranker, sentences, request.depth, feature)

        judged = judge(request.whole, request.sentences)
        decision = decide(request, ranker, fusion, judged, self.settings)
        fused, learned = fuse_ranked(request.whole, decision, judged, self.settings)
        # Each sentence is fused as the whole request was decided (one sentence each).
        part_fusions = [
            fuse_ranked(part, decision, judge(part, 1) if decision.orders else None, self.settings)[0] for part in request.parts
        ]
        order, scores, exact = adjusted(snapshot, text, servers, fused, part_fusions, self.settings)
        if self._after_fusion is not None:
            order, scores, rerank_scores = self._after_fusion.rescored(
                snapshot.tools, text, order, scores, exact, self.model_wait
            )
        else:
            rerank_scores = feature.shown()
        votes = {**request.whole.positions, **({LEARNED: learned} if learned else {})}
        voted = None
        if self._multilingual is not None and snapshot.multilingual is not None:
            order, scores, voted = self._multilingual.blend(snapshot.multilingual, text, request.whole.allowed,
                                                            request.depth, order, scores, exact, votes)
        positions = {name: {p: rank for rank, p in enumerate(r, start=1)} for name, r in votes.items()}
        hits = []
        for position in order[:limit]:
            ranks = {name: ranked[position] for name, ranked in positions.items() if position in ranked}
            if position in exact:
                ranks[EXACT_NAME] = 1
            hits.append(
                SearchHit(snapshot.tools[position], scores.get(position, 0.0), ranks, rerank_scores.get(position))
            )
        first = voted.judged_first if voted is not None else order[0] if order else None
        strength = self._strength(snapshot, request, signals, judged, ranker, encoder, first)
        strength = voted.judged(strength) if voted is not None else strength
        return SearchResponse(
            hits=tuple(hits), signals=(*signals, MULTILINGUAL) if MULTILINGUAL in votes else tuple(signals),
            notice=notice, match=strength, fusion=decision.fusion,
        )

    def _strength(
        self, snapshot: Snapshot, request: Request, signals: Collection[str], judged: Judged | None,
        ranker: LearnedRanker | None, encoder: Encoder | None, first: int | None,
    ) -> MatchStrength | None:
        """How well the first result (catalog position `first`) matches: the calibrated confidence
        where the ranker judged, else the cosine rule with the dense signal, else (keyword only:
        the dense signal is off or not ready yet) the keyword-only confidence."""
        if judged is not None and ranker is not None:
            return first_result_match(judged.candidates, judged.probabilities, judged.probability, first,
                                      self._fusion.calibration(), ranker.weak_below)
        if "dense" in request.whole.scores:
            cosines, allowed = request.whole.scores["dense"], request.whole.allowed
            rule = self._fusion.cosine_rule(encoder.model_id if encoder is not None else None)
            return match_strength(cosines if allowed is None else cosines[allowed], rule)
        keyword = [name for name in KEYWORD_SIGNALS if name in signals]
        candidates = ranker_candidates(snapshot, request.whole, keyword, request.sentences, request.depth)
        return keyword_match(candidates, first, self._fusion.keyword_calibration())

    def _request(
        self,
        snapshot: Snapshot,
        signals: Mapping[str, Signal],
        text: str,
        depth: int,
        servers: Collection[str] | None,
    ) -> Request:
        """`text` up to the cut point: every ready signal's ranking of the whole request and of each
        of its sentences. What `search` fuses and the replays (`candidates`, `rankings`) read."""
        parts = request_parts(text) if self.settings.sentence_weight > 0 else []
        vectors = self._encode(snapshot, parts) if parts else None
        # One encoder call for all sentences; their mean direction stands for the whole request.
        whole = mean_direction(vectors) if vectors is not None else None
        if whole is None:
            encoded = self._encode(snapshot, [text])
            whole = None if encoded is None else encoded[0]
        elif snapshot.dense is not None and vectors is not None:
            # The whole request's and every sentence's cosines in one pass over the catalog.
            snapshot.dense.prepare(np.vstack([whole, vectors]))
        return Request(
            whole=self._rankings(snapshot, signals, text, depth, servers, whole),
            parts=tuple(
                self._rankings(snapshot, signals, part, depth, servers, None if vectors is None else vectors[i])
                for i, part in enumerate(parts)
            ),
            depth=depth,
        )

    def _judged(
        self,
        snapshot: Snapshot,
        ranked: Ranked,
        ranker: LearnedRanker,
        sentences: int,
        depth: int,
        feature: RerankerColumn,
    ) -> Judged | None:
        """What the ranker says of one ranked text's candidates; None when no signal listed any."""
        candidates = ranker_candidates(snapshot, ranked, ranker.signals, sentences, depth)
        if not len(candidates):
            return None
        if ranker.reads_reranker:
            assert ranker.reranker_depth is not None, "a ranker reading the reranker names its depth"
            candidates = feature.added(candidates, self.settings, ranker.reranker_depth)
        probabilities, served = ranker.scored(candidates)
        order = candidates.positions[np.argsort(-probabilities, kind="stable")].tolist()
        return Judged(candidates, served, order, probabilities)

    def candidates(
        self, query: str, *, depth: int | None = None, servers: Collection[str] | None = None
    ) -> Candidates | None:
        """What the learned ranker reads for `query` (the whole request, as `search` ranks it up to
        the cut point), or None while a signal it needs is not ready; fitting the ranker replays
        these (`toolscout.training.ranker_fit`)."""
        snapshot = self._snapshot
        signals = ready_signals(snapshot)
        text = query.strip()
        if not text or not snapshot.tools or not all(name in signals for name in RANKER_SIGNALS):
            return None
        request = self._request(snapshot, signals, text, depth or self.settings.candidates, servers)
        return ranker_candidates(snapshot, request.whole, RANKER_SIGNALS, request.sentences, request.depth)

    def _feature_scorer(self, ranker: LearnedRanker | None) -> CrossEncoderScorer | None:
        """The reranker's scorer when `ranker` reads its score and it can run now, else None."""
        column = self._ranker_column
        if ranker is None or not ranker.reads_reranker or column is None or self.settings.fusion != "learned":
            return None
        return column.scorer(self.model_wait)

    def _reranker_off(self) -> str:
        """Why the reranker cannot feed the learned ranker on this search (for `--explain`)."""
        settings = self.settings
        if self._reranker is None:
            return "the reranker is off"
        if settings.fusion != "learned":
            return "fusion is weighted RRF"
        if self._ranker_column is None:
            return f"the reranker runs after fusion ({settings.rerank_mode})"
        if self._reranker.error is not None:
            return f"the reranker is unavailable: {self._reranker.error}"
        return "the reranker is still loading"

    def rankings(
        self, query: str, *, depth: int, servers: Collection[str] | None = None
    ) -> SignalRankings:
        """Each ready signal's best `depth` tools for the whole request, before fusion (as `search`
        ranks it up to the cut point), with this query's weight factors."""
        snapshot = self._snapshot
        signals = ready_signals(snapshot)
        text = query.strip()
        if not text or not snapshot.tools:
            return SignalRankings({})
        ranked = self._request(snapshot, signals, text, depth, servers).whole
        tools = {name: [snapshot.tools[p] for p in positions] for name, positions in ranked.positions.items()}
        return SignalRankings(tools, ranked.weight_scale)

    def _rankings(
        self,
        snapshot: Snapshot,
        signals: Mapping[str, Signal],
        text: str,
        depth: int,
        servers: Collection[str] | None,
        embedding: np.ndarray | None = None,
    ) -> Ranked:
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
            positions[name] = top_positions(answer.scores, allowed, depth)
            if answer.confidence is not None:
                # A signal that reports its confidence is the intent vote. Both learned signals
                # read the same past requests: when none is close to this query, neither is
                # trusted (the zero-shot signals decide).
                scale = dict.fromkeys(LEARNED_SIGNALS, answer.confidence)
        return Ranked(positions, scale, scores, request.tokens, allowed)

    def _encode(self, snapshot: Snapshot, texts: Sequence[str]) -> np.ndarray | None:
        """Embeddings of `texts` when an embedding signal is ready, else None."""
        if (snapshot.dense is None and snapshot.intent is None) or self._embedder is None:
            return None
        encoder = self._embedder.encoder()
        return None if encoder is None else np.asarray(encoder.encode(list(texts)), dtype=np.float32)

    def _notice(self, snapshot: Snapshot) -> str | None:
        if self._embedder is None or not snapshot.tools:
            return None
        # Vectors read from the cache at index time are no use if the model then fails to load.
        if self._embedder.error is not None:
            return f"semantic search is unavailable ({self._embedder.error}); results use keyword signals only"
        return None if snapshot.embedded else PENDING_NOTICE
