"""Choosing the learned ranker: variants fitted on training catalogs, checked on every dev set.

    .venv/bin/python benchmarks/ranker_select.py [--model bundled] [--train ../shared/train]
        [--l2 1,10] [--weights 0.5,1,1.5,2]

Fits the ranker (`toolscout.training.ranker_fit.fit`) at each penalty `--l2` on the engine's cached
candidate lists of the training catalogs, and replays, on the dev sets' own catalogs (cached by
benchmarks/weak_match.py's catalogs): weighted RRF alone, the dense signal alone, the ranker's order
alone, and the ranker's order as one more vote in weighted RRF at each weight of `--weights` (what
the engine does), and with `--alone-above` that vote where the ranker's gate (fitted on the training
catalogs, `ranker_fit.fit_gate`) is below each threshold and its order alone above it. Top-1,
MRR@10 and Full Recall@10 per dev set. Replays leave out the sentence
bonus, destructive demotion and exact names (`benchmarks/fusion_eval.py` measures the real
engine). Dev sets only choose among these few variants: nothing is fitted on them. The chosen
penalty and weight are `python -m toolscout.training.ranker_fit`'s defaults, which writes the
ranker; benchmarks/weak_match.py --write then stores its threshold.
Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

import numpy as np

from toolscout.training.ranker_fit import extract, fit, fit_gate, sample_catalogs, vote_order

sys.path.insert(0, str(Path(__file__).resolve().parent))
from weak_match import BENCH, catalogs  # noqa: E402 - a sibling script

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("ranker_select")


def scores(order_of, examples, steps: dict[str, tuple[frozenset[str], ...]]) -> tuple[float, float, float]:
    """Top-1, MRR@10 and Full Recall@10 of `order_of(example)` (candidate indices, best first);
    `steps`: each request's groups of interchangeable tools (Full Recall: the share covered)."""
    top1 = mrr = full = 0.0
    for example in examples:
        order = order_of(example)
        hits = np.flatnonzero(example.labels[order])
        first = int(hits[0]) + 1 if hits.size else 10**9
        top1 += first == 1
        mrr += 1.0 / first if first <= 10 else 0.0
        shown = {example.candidates.ids[i] for i in order[:10]}
        groups = steps[example.text]
        full += sum(bool(group & shown) for group in groups) / len(groups)
    n = max(len(examples), 1)
    return top1 / n, mrr / n, full / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--train", type=Path, default=ROOT.parent / "shared" / "train")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "ranker")
    parser.add_argument("--l2", default="1,10", help="penalties to fit (comma-separated)")
    parser.add_argument("--weights", default="0.5,1,1.5,2", help="weights of the ranker's vote in RRF (comma-separated)")
    parser.add_argument("--alone-above", default="", help="gate thresholds above which the ranker's order alone "
                                                           "decides, per weight (comma-separated; none by default)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    penalties = [float(v) for v in args.l2.split(",")]
    weights = [float(v) for v in args.weights.split(",")]
    thresholds = [float(v) for v in args.alone_above.split(",") if v]
    train = extract(args.model, sample_catalogs(args.train), args.cache, log.info)
    dev = [e for e in extract(args.model, catalogs(BENCH), args.cache, log.info) if e.catalog.endswith("@own")]
    steps = _steps()
    sets = list(dict.fromkeys(e.catalog for e in dev))
    variants = {"weighted RRF": lambda e: vote_order(e), "dense alone": lambda e: np.argsort(np.asarray(e.candidates.ranks["dense"]), kind="stable")}
    for l2 in penalties:
        log.info("fitting l2=%g", l2)
        ranker = fit(train, l2=l2)
        variants[f"ranker l2={l2:g} alone"] = lambda e, r=ranker: np.argsort(-r.probabilities(e.candidates), kind="stable")
        for w in weights:
            variants[f"RRF + ranker l2={l2:g} vote {w:g}"] = (
                lambda e, r=ranker, w=w: vote_order(e, r.probabilities(e.candidates), w))
            gate = fit_gate(train, w, l2) if thresholds else None
            for above in thresholds:
                variants[f"RRF + ranker l2={l2:g} vote {w:g}, alone above {above:g}"] = (
                    lambda e, r=dataclasses.replace(ranker, gate=gate, alone_above=above), w=w: (
                        np.argsort(-r.probabilities(e.candidates), kind="stable") if r.orders_alone(e.candidates)
                        else vote_order(e, r.probabilities(e.candidates), w)))
    print("| variant | " + " | ".join(f"{s.removesuffix('@own')} top-1 / MRR@10 / FR@10" for s in sets) + " |")
    print("|---|" + "---|" * len(sets))
    for label, order_of in variants.items():
        cells = []
        for name in sets:
            t, m, f = scores(order_of, [e for e in dev if e.catalog == name], steps[name])
            cells.append(f"{t:.3f} / {m:.3f} / {f:.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    print("\nRequests whose tools no signal listed among its candidates count as misses for every variant.")
    return 0


def _steps() -> dict[str, dict[str, tuple[frozenset[str], ...]]]:
    """Per dev set catalog, each request's groups of interchangeable tools."""
    from toolscout.eval.dev_sets import dev_sets

    return {f"{s.name}@own": {q.text: tuple(map(frozenset, q.relevant_groups)) for q in s.dataset.queries}
            for s in dev_sets(BENCH)}


if __name__ == "__main__":
    sys.exit(main())
