"""Fitting the learned ranker (`toolscout.search.ranker`) on training requests, never on dev sets.

    python -m toolscout.training.ranker_fit --train ../shared/train --model bundled \
        --out src/toolscout/index/model/ranker.json [--cache runs/ranker]

Catalogs of several sizes (5 to 4,000 tools) are drawn per source from the training folder: a
source's requests with their tools, filled with other tools of that source and then with tool-use
tools of other sources (never another everyday source's, whose weather, alarm and music tools
would serve the same request unlabelled). Each catalog also gets requests of its source whose tools
it lacks, so the probability learns what "nothing here serves it" looks like (the weak-match
notice reads it), and requests of two needs, two of its served requests joined ("A, then b"),
served by both tools: people ask for several things at once, and a ranker that only ever saw one
need per request learns to trust whichever signal likes the first. The engine's own candidate lists for every request (`ToolSearch.candidates`)
are extracted once per model and cached under `--cache`; the ranker is then fitted on
them, each request weighing the same. The weak-match threshold is chosen on the dev sets
(benchmarks/weak_match.py) and written into the same file. `--reranker-depth N` also fits a ranker
that reads the reranker's score of the first N candidates (`training.reranker_column`, its logits
cached under `--scores`) and stores the ranker without it beside it (measured, not shipped:
docs/benchmarks.md, "Reranker"). Progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import logging
import pickle
import random
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.training.data import EVERYDAY_SOURCES, LICENSED_SOURCES
from toolscout.search.ranker import (
    PRODUCT,
    RANKER_LOGIT,
    RERANKER_FEATURES,
    Candidates,
    LearnedRanker,
    Linear,
    feature_columns,
    feature_matrix,
    fused_scores,
)

__all__ = [
    "CONTEXT",
    "FEATURES",
    "MATCH_FEATURES",
    "RANKER_SOURCES",
    "SAYS",
    "SIZES",
    "SEVERAL",
    "TRAIN_SIZES",
    "Catalog",
    "Example",
    "design",
    "extract",
    "fit",
    "fit_gate",
    "fit_match",
    "model_digest",
    "ranking_scores",
    "reranker_features",
    "sample_catalogs",
    "two_needs",
    "vote_order",
]

log = logging.getLogger("toolscout.ranker_fit")

SIZES = (5, 20, 100, 500, 2000, 4000)
# Training catalogs stop at 2,000 tools (the dev sets check up to 4,000): every tool of a catalog
# is embedded, and 2 cores embed a few per second.
TRAIN_SIZES = SIZES[:-1]
# Filler tools: a fixed sample of the tool-use tools, and of each source's own.
POOL = 2000
OWN_POOL = 200
# Requests of two needs per catalog, and how two requests are joined into one.
SEVERAL = 20
JOINS = ("{a}. {b}", "{a}, then {b}", "{a} and {b}", "{a}; also {b}")
# What a request is like: the same for all its candidates, so alone it orders nothing; multiplied
# with what a signal said of each candidate, it sets that signal's say for this request.
CONTEXT = ("query_words", "sentences", "catalog", "dense_best", "dense_gap", "bm25_description_best", "tfidf_best")
# What the signals said of each candidate, whose say may change with the request.
SAYS = (
    "bm25_description_rrf", "tfidf_rrf", "dense_rrf", "dense_margin", "bm25_description_ratio", "tfidf_ratio",
    "name_share", "query_share",
)
# The features the shipped ranker reads: every per-candidate column of `feature_columns`, and each of
# SAYS times each of CONTEXT.
FEATURES = (
    "bm25_description_rrf", "bm25_description_log_rank", "bm25_description_first", "bm25_description_ratio",
    "tfidf_rrf", "tfidf_log_rank", "tfidf_first", "tfidf_ratio",
    "dense_rrf", "dense_log_rank", "dense_first", "dense_cosine", "dense_margin",
    "signals_first", "signals_top5", "name_shared", "name_share", "query_share",
    *(f"{say}{PRODUCT}{context}" for say in SAYS for context in CONTEXT),
)


def reranker_features(products: bool = True) -> tuple[str, ...]:
    """FEATURES, the reranker's columns (`search.ranker.reranker_columns`) and, with `products`, its
    logit and reciprocal rank times each of CONTEXT, as the signals' says have."""
    says = ("reranker_logit", "reranker_rrf")
    return (*FEATURES, *RERANKER_FEATURES,
            *((f"{say}{PRODUCT}{context}" for say in says for context in CONTEXT) if products else ()))


# What the weak-match model reads of the best candidate (and the ranker's logit of it).
MATCH_FEATURES = (
    "dense_cosine", "dense_best", "dense_gap", "bm25_description_ratio", "bm25_description_best", "tfidf_ratio",
    "tfidf_best", "signals_first", "signals_top5", "name_share", "query_share", "query_words", "sentences",
    "catalog", RANKER_LOGIT,
)


# Every licensed source once (tool-use and everyday): each gets the same catalogs and requests.
RANKER_SOURCES = LICENSED_SOURCES


@dataclass(frozen=True)
class Catalog:
    """One sampled catalog and the requests searched on it (answers: ids that serve each; empty: none)."""

    name: str
    tools: tuple[ToolRecord, ...]
    requests: tuple[tuple[str, frozenset[str]], ...]


@dataclass(frozen=True)
class Example:
    """One request's candidates as the engine listed them, and which of them serve it."""

    catalog: str
    text: str
    candidates: Candidates
    labels: np.ndarray  # [candidates] bool
    feasible: bool  # some tool of the catalog serves it


def sample_catalogs(
    folder: Path, sources: Sequence[str] = RANKER_SOURCES, sizes: Sequence[int] = TRAIN_SIZES,
    feasible: int = 80, infeasible: int = 20, seed: int = 0, several: int = SEVERAL,
) -> list[Catalog]:
    """Per source and size, one catalog with up to `feasible` served and `infeasible` unserved
    requests, and up to `several` requests of two needs (`two_needs`)."""
    from toolscout.training.data import load_training_folder

    # Every source is read (a request may name another source's tool as an alternative), then
    # only `sources`' requests and tools are kept.
    data = load_training_folder(folder, sorted(set(_all_sources(folder))))
    wanted = set(sources)
    rng = random.Random(seed)
    by_source: dict[str, list] = defaultdict(list)
    for request in data.requests:
        kept = tuple(t for t in request.tools if data.tool_source.get(t) in wanted)
        if request.source in wanted and kept:
            by_source[request.source].append(dataclasses.replace(request, tools=kept))
    tools_of: dict[str, list[str]] = defaultdict(list)
    for tool_id, source in data.tool_source.items():
        if tool_id in data.tools and source in wanted:
            tools_of[source].append(tool_id)
    # Fillers come from fixed pools, so the catalogs share most tools and each is embedded once.
    tool_use = rng.sample(sorted(t for s in sources if s not in EVERYDAY_SOURCES for t in tools_of[s]), POOL)
    for source in tools_of:
        # A source's own pool: the tools of some of its requests (about OWN_POOL), and only the
        # requests served inside it are asked.
        requests = sorted(by_source[source], key=lambda r: (r.text, r.tools))
        rng.shuffle(requests)
        own: dict[str, None] = {}
        for request in requests:
            if len(own) + len(request.tools) <= OWN_POOL:
                own.update(dict.fromkeys(request.tools))
        tools_of[source] = list(own)
        by_source[source] = [r for r in requests if set(r.tools) <= own.keys()]
    catalogs = []
    for source in sources:
        requests = list(by_source[source])
        if not requests:
            continue
        for size in sizes:
            rng.shuffle(requests)
            chosen: dict[str, None] = {}
            for request in requests[:feasible]:  # served requests' tools take up to 60% of the catalog
                if len(chosen) + len(request.tools) <= max(1, int(0.6 * size)):
                    chosen.update(dict.fromkeys(request.tools))
            for pool in (tools_of[source], tool_use):
                extra = [t for t in rng.sample(pool, min(len(pool), 2 * size)) if t not in chosen]
                chosen.update(dict.fromkeys(extra[: max(0, size - len(chosen))]))
            ids = set(chosen)
            served = [(r.text, frozenset(r.tools)) for r in requests if set(r.tools) <= ids][:feasible]
            unserved = [(r.text, frozenset()) for r in requests if not set(r.tools) & ids][:infeasible]
            catalogs.append(Catalog(f"{source}@{size}", tuple(data.tools[t] for t in chosen), tuple(served + unserved)))
    # A generator of its own: the catalogs and their single-need requests stay as they were drawn.
    joined = random.Random(seed + 1)
    return [dataclasses.replace(c, requests=c.requests + two_needs(c.requests, several, joined)) for c in catalogs]


def two_needs(requests: Sequence[tuple[str, frozenset[str]]], count: int, rng: random.Random) -> tuple[tuple[str, frozenset[str]], ...]:
    """Up to `count` requests made of two served `requests` whose tools differ, joined as one
    sentence or two, served by the tools of both."""
    served = [(text, answers) for text, answers in requests if answers]
    if len(served) < 4:
        return ()
    joined = []
    for _ in range(count):
        (first, first_tools), (second, second_tools) = rng.sample(served, 2)
        if first_tools & second_tools:
            continue
        second = second.strip()
        # "Then book a table" reads "then book a table" mid-sentence; an acronym keeps its case.
        second = second if second[:2].isupper() else second[:1].lower() + second[1:]
        text = rng.choice(JOINS).format(a=first.strip().rstrip(".?!"), b=second)
        joined.append((text, first_tools | second_tools))
    return tuple(joined)


def _all_sources(folder: Path) -> set[str]:
    import json

    with (folder / "tools.jsonl").open(encoding="utf-8") as lines:
        return {json.loads(line).get("source", "") for line in lines if line.strip()}


def model_digest(model: str) -> str:
    """sha256 of the embedding model's file (what a ranker is fitted for)."""
    from toolscout.index.model_files import file_digest, resolve_model

    location = resolve_model(model)
    assert location is not None, "the learned ranker needs an embedding model"
    source = location.onnx_file or location.weights_file
    assert source is not None, f"model {model} has no ONNX or weights file"
    return file_digest(source)


def extract(
    model: str, catalogs: Sequence[Catalog], cache: Path | None, progress: Callable[[str], None] | None = None
) -> list[Example]:
    """The engine's candidates for every request of every catalog, read from `cache` when it has them."""
    from toolscout.search import SearchSettings, ToolSearch

    key = _key(catalogs)
    path = None
    if cache is not None:
        path = cache / model_digest(model)[:12] / f"{key[:16]}.pkl"
        if path.is_file():
            with path.open("rb") as stream:  # our own cache, written just below
                return pickle.load(stream)
    # The multilingual vote comes after the cut point these replays stop at: never embed for it.
    settings = SearchSettings(model=model, fusion="rrf", multilingual="off")
    examples = []
    for number, catalog in enumerate(catalogs, start=1):
        engine = ToolSearch(settings)
        engine.index(catalog.tools)
        engine.complete()
        for text, answers in catalog.requests:
            candidates = engine.candidates(text)
            if candidates is None:
                continue
            labels = np.array([tool_id in answers for tool_id in candidates.ids], dtype=bool)
            examples.append(Example(catalog.name, text, candidates, labels, bool(answers)))
        if progress is not None:
            progress(f"{number}/{len(catalogs)} catalogs ({catalog.name}, {len(catalog.tools)} tools): "
                     f"{len(examples)} requests")
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as stream:
            pickle.dump(examples, stream)
    return examples


def _key(catalogs: Sequence[Catalog]) -> str:
    """The same catalogs give the same key in every process (sets are sorted: their order is not)."""
    rows = [(c.name, [t.id for t in c.tools], [(text, sorted(answers)) for text, answers in c.requests]) for c in catalogs]
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def design(examples: Sequence[Example], features: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stacked feature rows, labels, sample weights (each request weighs 1) and each row's request."""
    rows, labels, weights, owner = [], [], [], []
    for number, example in enumerate(examples):
        n = len(example.candidates)
        if not n:
            continue
        rows.append(feature_matrix(feature_columns(example.candidates), features))
        labels.append(example.labels)
        weights.append(np.full(n, 1.0 / n))
        owner.append(np.full(n, number))
    return np.concatenate(rows), np.concatenate(labels), np.concatenate(weights), np.concatenate(owner)


def fit(examples: Sequence[Example], features: Sequence[str] = FEATURES, l2: float = 1.0,
        about: dict | None = None, digest: str | None = None) -> LearnedRanker:
    """A linear score over the candidates' features, fitted for the order it gives each request: a
    softmax over the request's candidates whose target is its served ones (each request weighs the
    same; requests nothing serves have no order to learn). Features are standardised; `l2` is the
    penalty on the coefficients (per request)."""
    from scipy.optimize import minimize

    served = [e for e in examples if e.labels.any()]
    matrix, labels, _, owner = design(served, features)
    mean = matrix.mean(axis=0)
    scale = matrix.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    x = (matrix - mean) / scale
    n = len(served)
    owner = np.unique(owner, return_inverse=True)[1]
    target = labels / np.bincount(owner, labels.astype(np.float64), n)[owner]
    pulled = x.T @ target

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w
        top = np.full(n, -np.inf)
        np.maximum.at(top, owner, z)
        exp = np.exp(z - top[owner])
        total = np.bincount(owner, exp, n)
        value = (np.sum(np.log(total) + top) - w @ pulled + 0.5 * l2 * w @ w) / n
        softmax = exp / total[owner]
        return value, (x.T @ softmax - pulled + l2 * w) / n

    result = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    ranking = Linear(tuple(features), mean, scale, result.x.astype(np.float64), 0.0)
    return LearnedRanker(ranking, model_digest=digest, about=about or {})


def fit_match(examples: Sequence[Example], ranker: LearnedRanker, features: Sequence[str] = MATCH_FEATURES,
              c: float = 1.0) -> Linear:
    """The weak-match model: P(some tool of the catalog serves the request) from the ranker's best
    candidate, fitted on served and unserved training requests (each class weighing the same)."""
    from sklearn.linear_model import LogisticRegression

    rows, labels = [], []
    for example in examples:
        if not len(example.candidates):
            continue
        columns = feature_columns(example.candidates)
        probabilities = ranker.probabilities_of(feature_matrix(columns, ranker.features))
        best = int(np.argmax(probabilities))
        p = float(np.clip(probabilities[best], 1e-12, 1 - 1e-12))
        row = {name: values[best : best + 1] for name, values in columns.items()}
        row[RANKER_LOGIT] = np.array([np.log(p / (1 - p))])
        rows.append(feature_matrix(row, features)[0])
        labels.append(example.feasible)
    matrix, target = np.array(rows), np.array(labels)
    mean, scale = matrix.mean(axis=0), matrix.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced").fit((matrix - mean) / scale, target)
    return Linear(tuple(features), mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0]))


def vote_order(example: Example, probabilities: np.ndarray | None = None, weight: float = 0.0,
               weights: Mapping[str, float] | None = None) -> np.ndarray:
    """Candidate indices, best first, as the engine orders them by the zero-shot signals' weighted
    RRF (at the engine's weights, or `weights`), with the ranker's order (by `probabilities`) as one
    more vote of `weight` (a replay: no sentence bonus)."""
    from toolscout.search.rrf import RRF_K, reciprocal_rank
    from toolscout.search.settings import DEFAULT_WEIGHTS

    fused = fused_scores(example.candidates, DEFAULT_WEIGHTS if weights is None else weights, RRF_K)
    if probabilities is not None:
        order = np.argsort(-probabilities, kind="stable")
        ranks = np.empty(len(order))
        ranks[order] = np.arange(1, len(order) + 1)
        fused = fused + reciprocal_rank(ranks, weight)
    return np.argsort(-fused, kind="stable")


def fit_gate(examples: Sequence[Example], weight: float, l2: float, folds: int = 2) -> Linear:
    """P(the ranker's order alone puts a served tool higher than its vote of `weight` does), from
    the request's CONTEXT columns: a logistic model over the served training requests where the
    two differ. Each request is scored by a ranker fitted on the other folds' sources (a ranker
    scored on its own training requests looks better alone than it is)."""
    from sklearn.linear_model import LogisticRegression

    served = [e for e in examples if e.labels.any()]
    sources = sorted({e.catalog.split("@")[0] for e in served})
    fold_of = {source: number % folds for number, source in enumerate(sources)}
    rows, better = [], []
    for fold in range(folds):
        ranker = fit([e for e in served if fold_of[e.catalog.split("@")[0]] != fold], l2=l2)
        for example in (e for e in served if fold_of[e.catalog.split("@")[0]] == fold):
            probabilities = ranker.probabilities(example.candidates)
            alone = _first_served(example, np.argsort(-probabilities, kind="stable"))
            voted = _first_served(example, vote_order(example, probabilities, weight))
            if alone != voted:
                rows.append(feature_matrix(feature_columns(example.candidates), CONTEXT)[0])
                better.append(alone < voted)
    matrix, target = np.array(rows), np.array(better)
    mean, scale = matrix.mean(axis=0), matrix.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    model = LogisticRegression(C=1.0, max_iter=2000).fit((matrix - mean) / scale, target)
    return Linear(CONTEXT, mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0]))


def _first_served(example: Example, order: np.ndarray) -> int:
    hits = np.flatnonzero(example.labels[order])
    return int(hits[0]) + 1 if hits.size else len(order) + 1


def ranking_scores(ranker: LearnedRanker, examples: Sequence[Example]) -> dict[str, float]:
    """Top-1, Recall@5 and MRR@10 of the ranker's order over feasible examples (replay, no sentence bonus)."""
    top1 = r5 = mrr = 0.0
    served = [e for e in examples if e.feasible]
    for example in served:
        probabilities = ranker.probabilities(example.candidates)
        order = np.argsort(-probabilities, kind="stable")
        hits = np.flatnonzero(example.labels[order])
        first = int(hits[0]) + 1 if hits.size else None
        top1 += first == 1
        r5 += first is not None and first <= 5
        mrr += 1.0 / first if first is not None and first <= 10 else 0.0
    n = max(len(served), 1)
    return {"top1": top1 / n, "r5": r5 / n, "mrr": mrr / n, "n": len(served)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, required=True, help="training folder (tools.jsonl, pairs.jsonl)")
    parser.add_argument("--model", default="bundled", help="embedding model the ranker is fitted for")
    parser.add_argument("--out", type=Path, required=True, help="where to write ranker.json")
    parser.add_argument("--cache", type=Path, default=Path("runs/ranker"), help="candidate cache folder")
    # The shipped ranker's choices, made with benchmarks/ranker_select.py (docs/benchmarks.md).
    parser.add_argument("--l2", type=float, default=10.0, help="penalty on the ranker's coefficients")
    parser.add_argument("--weight", type=float, default=1.5, help="weight of the ranker's vote in weighted RRF")
    parser.add_argument("--alone-above", type=float, default=0.8,
                        help="the gate's probability above which the ranker's order alone decides (1: never)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weak-below", type=float, default=None,
                        help="weak-match threshold to store (choose it with benchmarks/weak_match.py)")
    parser.add_argument("--reranker-depth", type=int, default=0,
                        help="also read the reranker's score of the first N candidates (0: not; the ranker "
                             "without it is stored beside, for when the reranker is off)")
    parser.add_argument("--reranker", default="bundled", help="the reranker whose score it reads")
    parser.add_argument("--scores", type=Path, default=Path("runs/reranker-scores"), help="reranker score cache folder")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    catalogs = sample_catalogs(args.train, seed=args.seed)
    log.info("%d catalogs, %d requests", len(catalogs), sum(len(c.requests) for c in catalogs))
    examples = extract(args.model, catalogs, args.cache, log.info)
    about = {
        "trained_on": f"{args.train.name}: {len(examples)} requests on {len(catalogs)} catalogs of "
                      f"{min(TRAIN_SIZES)}-{max(TRAIN_SIZES)} tools (each with up to {SEVERAL} requests of two needs), "
                      f"sources {', '.join(RANKER_SOURCES)}; seed {args.seed}",
        "l2": args.l2,
        "weight": f"{args.weight:g}, chosen with benchmarks/ranker_select.py on every dev set",
        "alone_above": f"{args.alone_above:g}, chosen with benchmarks/ranker_select.py on every dev set",
    }
    ranker = fit(examples, l2=args.l2, about=about, digest=model_digest(args.model)[:16])
    ranker = dataclasses.replace(ranker, weight=args.weight, match=fit_match(examples, ranker),
                                 gate=fit_gate(examples, args.weight, args.l2), alone_above=args.alone_above)
    if args.weak_below is not None:
        ranker = dataclasses.replace(ranker, weak_below=args.weak_below)
    log.info("training replay: %s", ranking_scores(ranker, examples))
    if args.reranker_depth > 0:
        ranker = with_reranker(ranker, examples, catalogs, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    ranker.write(args.out)
    log.info("wrote %s", args.out)
    return 0


def with_reranker(plain: LearnedRanker, examples: Sequence[Example], catalogs: Sequence[Catalog],
                  args: argparse.Namespace) -> LearnedRanker:
    """The ranker refitted with the reranker's columns at depth `args.reranker_depth` (and their
    products with CONTEXT), `plain` stored beside it for when the reranker is off."""
    from toolscout.index.cross_encoder import load_cross_encoder
    from toolscout.index.model_files import file_digest, resolve_reranker
    from toolscout.search.settings import SearchSettings
    from toolscout.training.reranker_column import ScoreCache, documents_of, score_heads, with_reranker_column

    location = resolve_reranker(args.reranker)
    assert location is not None and location.onnx_file is not None, "the reranker needs its ONNX file"
    scorer = load_cross_encoder(location, work_dir=SearchSettings().resolved_cache_dir)
    cache = ScoreCache.of(args.scores, model_digest(args.model), file_digest(location.onnx_file), "train")
    score_heads(scorer.logits, examples, documents_of([t for c in catalogs for t in c.tools]), cache,
                args.reranker_depth, "training")
    scored = with_reranker_column(examples, cache, args.reranker_depth)
    about = {**plain.about, "reranker": f"{location.identity}, its logit of the first {args.reranker_depth} "
                                        f"candidates by the signals' weighted RRF"}
    ranker = fit(scored, reranker_features(), l2=args.l2, about=about, digest=plain.model_digest)
    ranker = dataclasses.replace(ranker, weight=plain.weight, weak_below=plain.weak_below,
                                 match=fit_match(scored, ranker), reranker_depth=args.reranker_depth,
                                 without_reranker=plain)
    log.info("training replay with the reranker: %s", ranking_scores(ranker, scored))
    return ranker


if __name__ == "__main__":
    # Run as the importable module, so the cached examples unpickle wherever they are read.
    from toolscout.training.ranker_fit import main as module_main

    sys.exit(module_main())
