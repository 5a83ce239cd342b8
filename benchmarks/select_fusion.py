"""Choosing the fusion knobs honestly: leave one family of dev sets out, and never below dense alone.

    .venv/bin/python benchmarks/select_fusion.py [--model bundled] [--ranker FILE] [--train ../shared/train]
        [--devtools 3000] [--toollens 2000]

Every knob that is chosen rather than learned (the lexical signals' weight in weighted RRF beside
the dense signal, the learned ranker's vote weight, the threshold of its gate) is chosen here, by
one rule, from replays of the engine's cached candidates on the dev sets' own catalogs:

1. A variant is admissible on a dev set when its top-1 is not below the dense signal alone by more
   than run-to-run noise: twice the standard error of the paired difference (the requests where
   exactly one of the two is right, sqrt(d) / n).
2. Among the variants admissible on every set used for choosing, the one with the best mean top-1
   over the families wins (each family the mean of its sets, so a family of three sets weighs as
   much as one of one).
3. It replaces the shipped knobs (the ranker file's own vote, gate and threshold) only with
   evidence: better beyond noise on some dev set and worse beyond noise on none.

The families are API-style (etom_mcp, toolbench_stb, toollens_train), everyday assistant
(everyday), developer tools (devtools) and the bundled registry (its English and translated
requests). Leaving each family out in turn, the rule chooses on the other three and the table shows
what that choice gives on the family left out, beside dense alone there: the honest estimate of how
the rule does on requests nobody tuned for. The last line is the choice on all four (what ships).

The learned ranker is fitted on training catalogs only (`toolscout.training.ranker_fit`); dev sets
only choose among these few variants. Replays leave out the sentence bonus, destructive demotion
and exact names (`benchmarks/fusion_eval.py` measures the real engine with the chosen knobs).
Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from toolscout.eval.dev_sets import dev_sets
from toolscout.eval.metrics import paired_noise
from toolscout.search.ranker import LearnedRanker, load_ranker
from toolscout.search.settings import DEFAULT_WEIGHTS
from toolscout.training.ranker_fit import Catalog, Example, extract, fit_gate, sample_catalogs, vote_order

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
FAMILIES: Mapping[str, tuple[str, ...]] = {
    "API-style": ("etom_mcp", "toolbench_stb", "toollens_train"),
    "everyday": ("everyday",),
    "devtools": ("devtools",),
    "bundled": ("bundled", "bundled_translated"),
}
LEXICAL = ("bm25_description", "tfidf")
# The ranker file's own vote, gate and threshold, as the engine runs them.
SHIPPED = "shipped"
log = logging.getLogger("select_fusion")

Order = Callable[[Example], np.ndarray]


@dataclasses.dataclass(frozen=True)
class Variant:
    lexical: float  # the lexical signals' RRF weights, times this
    vote: float | None  # the ranker's vote weight; None: no ranker
    alone_above: float | None = None  # the gate's threshold above which the ranker orders alone
    gate: str | None = None  # whose gate: None, the one fitted here for this vote weight
    name: str | None = None

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.vote is None:
            return f"weighted RRF, lexical x{self.lexical:g}"
        gate = "" if self.alone_above is None else f", alone above {self.alone_above:g}"
        return f"lexical x{self.lexical:g}, ranker vote {self.vote:g}{gate}"


def weights(lexical: float) -> dict[str, float]:
    return {s: w * (lexical if s in LEXICAL else 1.0) for s, w in DEFAULT_WEIGHTS.items()}


def order_of(variant: Variant, ranker: LearnedRanker | None, gate_p: Mapping[int, float],
             probabilities: Mapping[int, np.ndarray]) -> Order:
    def order(example: Example) -> np.ndarray:
        if variant.vote is None or ranker is None:
            return vote_order(example, weights=weights(variant.lexical))
        p = probabilities[id(example)]
        if variant.alone_above is not None and gate_p[id(example)] > variant.alone_above:
            return np.argsort(-p, kind="stable")
        return vote_order(example, p, variant.vote, weights(variant.lexical))

    return order


def dense_order(example: Example) -> np.ndarray:
    return np.argsort(np.asarray(example.candidates.ranks["dense"]), kind="stable")


def first_right(example: Example, order: np.ndarray) -> bool:
    return bool(len(order)) and bool(example.labels[order[0]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--ranker", type=Path, help="ranker.json (default: the one beside the model)")
    parser.add_argument("--train", type=Path, default=ROOT.parent / "shared" / "train",
                        help="training folder, to fit the gate at each vote weight")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "ranker")
    parser.add_argument("--devtools", type=int, default=3000, help="devtools queries (evenly spread; 0: all)")
    parser.add_argument("--toollens", type=int, default=2000, help="toollens_train queries (evenly spread)")
    parser.add_argument("--lexical", default="1,0.75,0.5,0.25", help="lexical weight scales to try")
    parser.add_argument("--votes", default="0.5,1,1.5,2,3", help="ranker vote weights to try")
    parser.add_argument("--alone-above", default="none,0.5,0.65,0.8", help="gate thresholds to try (none: never alone)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)

    examples = dev_examples(args)
    ranker = (load_ranker(args.ranker.parent, args.ranker.name) if args.ranker else _shipped_ranker(args.model))[0]
    if ranker is None:
        parser.error("no usable ranker: give --ranker FILE, or a model with its ranker.json")
    probabilities = {id(e): ranker.probabilities(e.candidates) for es in examples.values() for e in es}
    votes = [float(v) for v in args.votes.split(",")]
    thresholds = [None if t == "none" else float(t) for t in args.alone_above.split(",")]
    gates = {}
    if any(t is not None for t in thresholds):
        train = extract(args.model, sample_catalogs(args.train), args.cache, log.info)
        for vote in votes:
            log.info("fitting the gate for vote %g", vote)
            gate = fit_gate(train, vote, _l2(ranker))
            gates[vote] = {id(e): float(gate.probabilities(_context_row(e, gate))[0])
                           for es in examples.values() for e in es if len(e.candidates)}
    shipped = f"shipped: lexical x1, ranker vote {ranker.weight:g}" + (
        f", its own gate, alone above {ranker.alone_above:g}" if ranker.gate is not None else "")
    gates[SHIPPED] = {id(e): float(ranker.gate.probabilities(_context_row(e, ranker.gate))[0]) if ranker.gate else 0.0
                      for es in examples.values() for e in es if len(e.candidates)}
    variants = [Variant(1.0, ranker.weight, ranker.alone_above, gate=SHIPPED, name=shipped)]
    variants += [Variant(lex, None) for lex in map(float, args.lexical.split(","))]
    variants += [Variant(lex, vote, above) for lex, vote, above
                 in itertools.product(map(float, args.lexical.split(",")), votes, thresholds)]
    right = {"dense alone": {s: [first_right(e, dense_order(e)) for e in es] for s, es in examples.items()}}
    for variant in variants:
        order = order_of(variant, ranker, gates.get(variant.gate or variant.vote, {}), probabilities)
        right[variant.label] = {s: [first_right(e, order(e)) for e in es] for s, es in examples.items()}
        log.info("%s: %s", variant.label, {s: round(float(np.mean(r)), 3) for s, r in right[variant.label].items()})
    print_report(right, [v.label for v in variants], examples, shipped)
    return 0


def dev_examples(args: argparse.Namespace) -> dict[str, list[Example]]:
    """Each dev set's candidates on its own catalog (devtools and toollens_train: evenly spread samples)."""
    from toolscout.eval.runner import sample_queries

    out = {}
    for dev in dev_sets(BENCH, toollens_limit=args.toollens):
        queries = dev.dataset.queries
        if dev.name == "devtools" and args.devtools and args.devtools < len(queries):
            queries = sample_queries(queries, args.devtools)
        catalog = Catalog(f"{dev.name}@own", tuple(dev.dataset.tools), tuple((q.text, q.answers) for q in queries))
        out[dev.name] = [e for e in extract(args.model, [catalog], args.cache, log.info)]
    return out


def _shipped_ranker(model: str) -> tuple[LearnedRanker | None, str]:
    from toolscout.index.model_files import resolve_model

    location = resolve_model(model)
    assert location is not None
    return load_ranker(location.folder)


def _l2(ranker: LearnedRanker) -> float:
    return float(ranker.about.get("l2", 10.0))


def _context_row(example: Example, gate) -> np.ndarray:
    from toolscout.search.ranker import feature_columns, feature_matrix

    return feature_matrix(feature_columns(example.candidates), gate.features)[:1]


def admissible(right: Mapping[str, Mapping[str, list[bool]]], label: str, sets: Sequence[str]) -> bool:
    dense = right["dense alone"]
    return all(np.mean(right[label][s]) >= np.mean(dense[s]) - paired_noise(right[label][s], dense[s]) for s in sets)


def family_mean(right: Mapping[str, list[bool]], families: Sequence[str], present: set[str]) -> float:
    means = [np.mean([np.mean(right[s]) for s in FAMILIES[f] if s in present]) for f in families]
    return float(np.mean(means))


def choose(right: Mapping[str, Mapping[str, list[bool]]], labels: Sequence[str], families: Sequence[str],
           present: set[str]) -> str:
    sets = [s for f in families for s in FAMILIES[f] if s in present]
    allowed = [label for label in labels if admissible(right, label, sets)] or ["dense alone"]
    return max(allowed, key=lambda label: family_mean(right[label], families, present))


def print_report(right, labels: Sequence[str], examples: Mapping[str, list[Example]], shipped: str) -> None:
    present = set(examples)
    sets = [s for f in FAMILIES for s in FAMILIES[f] if s in present]
    print("| variant | " + " | ".join(f"{s} (n={len(examples[s])})" for s in sets) + " | admissible everywhere |")
    print("|---|" + "---:|" * len(sets) + "---|")
    for label in ["dense alone", *labels]:
        cells = [f"{np.mean(right[label][s]):.3f}" for s in sets]
        print(f"| {label} | " + " | ".join(cells) + f" | {'yes' if admissible(right, label, sets) else 'no'} |")
    print("\nLeave one family out: chosen on the other three, top-1 on the family left out\n")
    print("| left out | chosen on the rest | its top-1 there | dense alone there | admissible there |")
    print("|---|---|---:|---:|---|")
    families = [f for f in FAMILIES if any(s in present for s in FAMILIES[f])]
    for held in families:
        rest = [f for f in families if f != held]
        label = choose(right, labels, rest, present)
        held_sets = [s for s in FAMILIES[held] if s in present]
        mine = " / ".join(f"{np.mean(right[label][s]):.3f}" for s in held_sets)
        dense = " / ".join(f"{np.mean(right['dense alone'][s]):.3f}" for s in held_sets)
        print(f"| {held} ({', '.join(held_sets)}) | {label} | {mine} | {dense} | "
              f"{'yes' if admissible(right, label, held_sets) else 'no'} |")
    final = choose(right, labels, families, present)
    print(f"\nChosen on all four families: **{final}**\n")
    print("| dev set | shipped | chosen | difference | noise |")
    print("|---|---:|---:|---:|---:|")
    gains = losses = 0
    for s in sets:
        a, b = right[final][s], right[shipped][s]
        diff, band = float(np.mean(a) - np.mean(b)), paired_noise(a, b)
        gains += diff > band
        losses += diff < -band
        print(f"| {s} | {np.mean(b):.3f} | {np.mean(a):.3f} | {diff:+.3f} | {band:.3f} |")
    # A change of knobs needs evidence: better beyond noise somewhere, worse beyond noise nowhere.
    if gains and not losses:
        print("\nThe choice beats the shipped knobs beyond noise and loses nowhere: change them.")
    elif losses:
        print(f"\nThe choice loses to the shipped knobs beyond noise on {losses} set(s): keep the shipped knobs.")
    else:
        print("\nEvery difference from the shipped knobs is within noise: keep the shipped knobs.")


if __name__ == "__main__":
    sys.exit(main())
