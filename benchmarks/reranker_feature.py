"""The reranker's score as a feature of the learned ranker, not a vote after it: fitted on training
catalogs, chosen on every dev set.

    .venv/bin/python benchmarks/reranker_feature.py [--model bundled] [--reranker bundled]
        [--train ../shared/train] [--cache runs/ranker] [--scores runs/reranker-scores]
        [--depth 5] [--depths 3,5] [--l2 10] [--weights 1]

For every training request (`toolscout.training.ranker_fit.sample_catalogs`, the engine's cached
candidate lists) and every dev-set request on its own catalog, the cross-encoder scores the first
`--depth` candidates in the signals' weighted-RRF order (what the engine can compute before the
ranker runs); the logits are cached under `--scores`, keyed by the embedding model's and the
reranker's digests, and written as they come, so a stopped run resumes. Candidates beyond the first
N are "unscored" (`toolscout.search.ranker.reranker_columns`).

Variants, each fitted on the training catalogs only (`ranker_fit.fit`) and replayed on the dev sets
as one vote in weighted RRF (what the engine does) at each weight of `--weights`:
- the ranker without the reranker (the shipped one: refitted here with the same defaults);
- with the reranker's columns at depth N for each of `--depths`, with and without their products
  with the request-context columns (`ranker_fit.CONTEXT`);
- the same fitted only on training requests the reranker never trained on (its 2% held back and
  the requests its per-tool caps left out), since on the others its score is in-sample.
Top-1, MRR@10 and Full Recall@10 per dev set. Replays leave out the sentence bonus, destructive
demotion and exact names, as benchmarks/ranker_select.py does. Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from toolscout.index.cross_encoder import load_cross_encoder
from toolscout.index.model_files import file_digest, resolve_reranker
from toolscout.search.ranker import LearnedRanker
from toolscout.search.settings import SearchSettings
from toolscout.training.ranker_fit import (
    Catalog,
    Example,
    extract,
    fit,
    model_digest,
    reranker_features,
    sample_catalogs,
    vote_order,
)
from toolscout.training.reranker_column import ScoreCache, documents_of, reranker_seen, score_heads, with_reranker_column

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ranker_select import scores  # noqa: E402 - a sibling script

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
log = logging.getLogger("reranker_feature")


def dev_catalogs(bench: Path) -> tuple[list[Catalog], dict[str, dict[str, tuple[frozenset[str], ...]]]]:
    """Each dev set on its own catalog (as benchmarks/weak_match.py's "@own" catalogs), and each
    request's groups of interchangeable tools (for Full Recall)."""
    from toolscout.eval.dev_sets import dev_sets

    sets = dev_sets(bench)
    catalogs = [Catalog(f"{s.name}@own", tuple(s.dataset.tools), tuple((q.text, q.answers) for q in s.dataset.queries))
                for s in sets]
    steps = {f"{s.name}@own": {q.text: tuple(map(frozenset, q.relevant_groups)) for q in s.dataset.queries}
             for s in sets}
    return catalogs, steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--reranker", default="bundled")
    parser.add_argument("--train", type=Path, default=ROOT.parent / "shared" / "train")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "ranker", help="training candidate cache (read)")
    parser.add_argument("--dev-cache", type=Path, default=ROOT / "runs" / "ranker", help="dev candidate cache")
    parser.add_argument("--scores", type=Path, default=ROOT / "runs" / "reranker-scores")
    parser.add_argument("--depth", type=int, default=5, help="candidates the reranker scores per request")
    parser.add_argument("--depths", default="3,5", help="depths N of the variants (comma-separated)")
    parser.add_argument("--l2", type=float, default=10.0)
    parser.add_argument("--weights", default="1", help="weights of the ranker's vote in weighted RRF (comma-separated)")
    parser.add_argument("--score-only", choices=("train", "dev", "both"),
                        help="fill these score caches and stop (two processes may fill one each)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    depths = [int(v) for v in args.depths.split(",")]

    train_catalogs = sample_catalogs(args.train)
    train = extract(args.model, train_catalogs, args.cache, log.info)
    location = resolve_reranker(args.reranker)
    assert location is not None and location.onnx_file is not None, "the reranker needs its ONNX file"
    scorer = load_cross_encoder(location, work_dir=SearchSettings().resolved_cache_dir)
    digests = (model_digest(args.model), file_digest(location.onnx_file))
    documents = documents_of([t for c in train_catalogs for t in c.tools])
    train_scores = ScoreCache.of(args.scores, *digests, "train")
    if args.score_only != "dev":
        score_heads(scorer.logits, train, documents, train_scores, args.depth, "training")
    if args.score_only == "train":
        return 0

    catalogs, steps = dev_catalogs(BENCH)
    dev = extract(args.model, catalogs, args.dev_cache, log.info)
    documents.update(documents_of([t for c in catalogs for t in c.tools]))
    dev_scores = ScoreCache.of(args.scores, *digests, "dev")
    score_heads(scorer.logits, dev, documents, dev_scores, args.depth, "dev")
    if args.score_only:
        return 0

    seen = reranker_seen(args.train)
    unseen = [e for e in train if e.text not in seen]
    log.info("%d of %d training requests (%d of %d served) were not in the reranker's training",
             len(unseen), len(train), sum(e.feasible for e in unseen), sum(e.feasible for e in train))
    sets = list(dict.fromkeys(e.catalog for e in dev))
    variants: dict[str, tuple[LearnedRanker, int | None]] = {}
    log.info("fitting the ranker without the reranker")
    variants["ranker (as shipped)"] = (fit(train, l2=args.l2), None)
    for depth in depths:
        fitted = with_reranker_column(train, train_scores, depth)
        for products in (False, True):
            label = f"+ reranker top {depth}{', with products' if products else ''}"
            log.info("fitting %s", label)
            variants[label] = (fit(fitted, reranker_features(products), l2=args.l2), depth)
        label = f"+ reranker top {depth}, with products, fitted on requests it never saw"
        log.info("fitting %s", label)
        kept = [e for e in fitted if e.text not in seen]
        variants[label] = (fit(kept, reranker_features(True), l2=args.l2), depth)

    print(f"Dev sets replayed on their own catalogs; every ranker a vote in weighted RRF (weight {args.weights}), "
          f"l2 = {args.l2:g}. Training requests: {len(train)} ({len(unseen)} not in the reranker's training).\n")
    print("| variant | " + " | ".join(f"{s.removesuffix('@own')} top-1 / MRR@10 / FR@10" for s in sets) + " |")
    print("|---|" + "---|" * len(sets))
    weights = [float(v) for v in args.weights.split(",")]
    rows = [("weighted RRF", None, None, 0.0)] + [
        (label if len(weights) == 1 else f"{label}, vote {w:g}", ranker, depth, w)
        for label, (ranker, depth) in variants.items() for w in weights]
    for label, ranker, depth, weight in rows:
        examples = dev if depth is None else with_reranker_column(dev, dev_scores, depth)
        if ranker is None:
            order_of = vote_order
        else:
            def order_of(e: Example, r: LearnedRanker = ranker, w: float = weight) -> np.ndarray:
                return vote_order(e, r.probabilities(e.candidates), w)
        cells = []
        for name in sets:
            t, m, f = scores(order_of, [e for e in examples if e.catalog == name], steps[name])
            cells.append(f"{t:.3f} / {m:.3f} / {f:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
