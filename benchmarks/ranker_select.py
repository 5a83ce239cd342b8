"""Choosing the learned ranker: variants fitted on training catalogs, checked on every dev set.

    .venv/bin/python benchmarks/ranker_select.py [--model bundled] [--train ../shared/train]

Fits each variant (regularisation C, with or without the training requests no catalog tool
serves, feature groups left out, and a gradient-boosted model as a reference that is not
shippable as JSON) on the engine's cached candidate lists of the training catalogs
(`toolscout.training.ranker_fit`), and replays its order on the dev sets' own catalogs (cached by
benchmarks/weak_match.py's catalogs): top-1, Recall@5 and MRR@10 per dev set, next to weighted RRF
replayed over the same candidates. Replays leave out the sentence bonus, destructive demotion and
exact names (`benchmarks/fusion_eval.py` measures the real engine). Dev sets only choose: nothing
is fitted on them. Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from toolscout.search.settings import DEFAULT_WEIGHTS
from toolscout.training.ranker_fit import FEATURES, design, extract, fit, sample_catalogs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from weak_match import BENCH, catalogs  # noqa: E402 - a sibling script

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("ranker_select")
GROUPS = {
    "no lexical scores": [f for f in FEATURES if f.endswith(("_ratio", "_best")) and not f.startswith("dense")],
    "no name words": ["name_shared", "name_share", "query_share"],
}


def scores(order_of, examples) -> tuple[float, float, float]:
    top1 = r5 = mrr = 0.0
    for example in examples:
        order = order_of(example)
        hits = np.flatnonzero(example.labels[order])
        first = int(hits[0]) + 1 if hits.size else 10**9
        top1 += first == 1
        r5 += first <= 5
        mrr += 1.0 / first if first <= 10 else 0.0
    n = max(len(examples), 1)
    return top1 / n, r5 / n, mrr / n


def rrf_order(example) -> np.ndarray:
    c = example.candidates
    fused = sum(DEFAULT_WEIGHTS[s] / (5.0 + np.asarray(c.ranks[s])) for s in c.ranks)
    return np.argsort(-fused, kind="stable")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--train", type=Path, default=ROOT.parent / "shared" / "train")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "ranker")
    parser.add_argument("--boosted", action="store_true", help="also fit a gradient-boosted reference")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    train = extract(args.model, sample_catalogs(args.train), args.cache, log.info)
    dev = [e for e in extract(args.model, catalogs(BENCH), args.cache, log.info) if e.catalog.endswith("@own")]
    sets = sorted({e.catalog for e in dev}, key=lambda name: [e.catalog for e in dev].index(name))
    served = [e for e in train if e.feasible]
    variants = {"weighted RRF (replayed)": None}
    for c in (0.1, 1.0):
        variants[f"logistic C={c:g}"] = fit(train, c=c)
    variants["logistic C=1, served requests only"] = fit(served, c=1.0)
    for label, dropped in GROUPS.items():
        variants[f"logistic C=1, {label}"] = fit(train, [f for f in FEATURES if f not in dropped], c=1.0)
    print("| variant | " + " | ".join(f"{s.removesuffix('@own')} top-1 / R@5 / MRR@10" for s in sets) + " | mean top-1 |")
    print("|---|" + "---|" * (len(sets) + 1))
    for label, ranker in variants.items():
        cells, tops = [], []
        for name in sets:
            examples = [e for e in dev if e.catalog == name]
            if ranker is None:
                t, r, m = scores(rrf_order, examples)
            else:
                t, r, m = scores(lambda e, rk=ranker: np.argsort(-rk.probabilities(e.candidates), kind="stable"), examples)
            tops.append(t)
            cells.append(f"{t:.3f} / {r:.3f} / {m:.3f}")
        print(f"| {label} | " + " | ".join(cells) + f" | {np.mean(tops):.3f} |", flush=True)
    if args.boosted:
        from sklearn.ensemble import HistGradientBoostingClassifier

        matrix, labels, weights, _ = design(train, FEATURES)
        model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, random_state=0)
        model.fit(matrix, labels, sample_weight=weights * np.where(labels, (~labels).sum() / labels.sum(), 1.0))
        cells, tops = [], []
        for name in sets:
            examples = [e for e in dev if e.catalog == name]
            t, r, m = scores(lambda e: np.argsort(-model.predict_proba(design([e], FEATURES)[0])[:, 1], kind="stable"),
                             examples)
            tops.append(t)
            cells.append(f"{t:.3f} / {r:.3f} / {m:.3f}")
        print("| gradient-boosted trees (reference, not shipped) | " + " | ".join(cells) + f" | {np.mean(tops):.3f} |")
    print("\nRequests whose tools no signal listed among its candidates count as misses for every variant.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
