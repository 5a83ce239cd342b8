"""Train the learned reader of the intent screen (`src/toolscout/data/intent_screen.json`).

    python scripts/train_intent_screen.py [--cache DIR] [--out FILE]

Sentences (`toolscout.security.order_classifier.order_units`) are embedded with the bundled
model and a multinomial logistic regression (scikit-learn) learns benign / call-tool / data /
conceal. Progress goes to stderr.

- Orders: the attack rows of tests/data/intent/intent.jsonl whose split is `dev`, `heldout1` or
  `train`. Rounds `heldout2` and `heldout3` are never read here: they stay held out for
  benchmarks/intent_eval.py. A definition's order is one or two of its sentences, not all of them
  ("Returns the weather. Then call ..."), so the positives are found as in multiple-instance
  learning: first every sentence of an attack row counts, then only those the previous fit
  scores as orders (at least the best one of each row), twice.
- Benign: the benign rows of the same splits, and the tools of ../shared/train whose id hashes
  even. Those whose id hashes odd are never trained on: they calibrate the two thresholds, so
  that the reader alone (`flag_at`) flags none of them, and adds enough to a rule's finding
  (`support_at`) to flag none of them either. The benign catalogs the benchmark reports (the
  bundled registry and ../shared/bench) are never read here.
- `--calibrate-on-bench` calibrates on the two largest dev sets' tools instead (etom_mcp and
  toolbench_stb, 6,348 MCP and REST definitions), the way to 0 false alarms on them by
  construction: the thresholds then rise to 0.999 and the reader adds almost nothing (5-fold:
  172/251 orders against 165/251 for the rules alone). That is why the reader is opt-in.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from poisoning_eval import load  # noqa: E402  (the reader of tools.jsonl rows)

from toolscout.catalog import ToolRecord  # noqa: E402
from toolscout.index.model_files import resolve_model  # noqa: E402
from toolscout.security.order_classifier import (  # noqa: E402
    CATEGORIES,
    WEIGHTS_FILE,
    ClassifierWeights,
    OrderClassifier,
    open_vector_cache,
    order_units,
)
from toolscout.security.poisoning import assess_tool  # noqa: E402

LABELLED = ROOT / "tests" / "data" / "intent" / "intent.jsonl"
TRAIN_TOOLS = ROOT.parent / "shared" / "train" / "tools.jsonl"
BENCH_CALIBRATION = [ROOT.parent / "shared" / "bench" / name / "tools.jsonl" for name in ("etom_mcp", "toolbench_stb")]
TRAIN_SPLITS = ("dev", "heldout1", "train")
_MARGIN = 0.02  # above the highest calibration score, so a near twin of it stays unflagged


def _even(tool_id: str) -> bool:
    return hashlib.sha256(tool_id.encode("utf-8")).digest()[0] % 2 == 0


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def embed(reader: OrderClassifier, sentences: list[str], what: str) -> np.ndarray:
    unique = list(dict.fromkeys(sentences))
    say(f"{what}: {len(unique):,} distinct sentences")
    step = 512
    for start in range(0, len(unique), step):
        reader.vectors(unique[start : start + step])
        say(f"  {what}: {min(start + step, len(unique)):,}/{len(unique):,} embedded")
    return reader.vectors(sentences)


def fit(vectors: np.ndarray, labels: np.ndarray, c: float, order_weight: float) -> LogisticRegression:
    # Orders are few (hundreds of sentences against thousands of benign ones): each weighs more,
    # but less than "balanced" would make it, which pushed plain benign sentences to the top.
    weights = {0: 1.0, **{label: order_weight for label in range(1, len(CATEGORIES))}}
    model = LogisticRegression(C=c, max_iter=3000, class_weight=weights)
    model.fit(vectors, labels)
    return model


def train(bags: list[tuple[int, np.ndarray]], benign: np.ndarray, c: float,
          order_weight: float) -> tuple[LogisticRegression, list[np.ndarray]]:
    """Fit on every bag's sentences, then (twice) only on those the fit reads as orders, at least
    each bag's best one: "Returns the weather." is not an order however hostile its neighbour."""
    chosen = [np.ones(len(vectors), dtype=bool) for _, vectors in bags]
    for round_ in range(3):
        orders = np.concatenate([vectors[keep] for (_, vectors), keep in zip(bags, chosen)])
        labels = np.concatenate([np.full(keep.sum(), label) for (label, _), keep in zip(bags, chosen)])
        model = fit(np.concatenate([benign, orders]), np.concatenate([np.zeros(len(benign), dtype=int), labels]),
                    c, order_weight)
        say(f"round {round_ + 1}: {len(orders)} order sentences, {len(benign):,} benign")
        for index, (_, vectors) in enumerate(bags):
            order = 1.0 - model.predict_proba(vectors)[:, 0]
            keep = order >= 0.5
            keep[int(order.argmax())] = True
            chosen[index] = keep
    assert list(model.classes_) == list(range(len(CATEGORIES)))
    return model, chosen


def tool_score(reader: OrderClassifier, weights: ClassifierWeights, record: ToolRecord) -> float:
    """The tool's strongest order probability, as `OrderClassifier.findings` reads it."""
    units = [s for _, s in order_units(record)]
    return float((1.0 - weights.probabilities(reader.vectors(units))[:, 0]).max()) if units else 0.0


def calibrate(reader: OrderClassifier, weights: ClassifierWeights, calibration: list[ToolRecord]) -> tuple[float, float]:
    """(flag_at, support_at): just above the highest calibration tool, alone and with a rule's finding."""
    alone = support = 0.0
    for record in calibration:
        score = tool_score(reader, weights, record)
        alone = max(alone, score)
        if assess_tool(record).score >= 0.5:  # a rule's finding that the weak one would tip over
            support = max(support, score)
    flag_at = min(0.999, round(alone + _MARGIN, 3))
    support_at = min(flag_at, max(0.5, round(support + _MARGIN, 3)))
    say(f"highest benign score {alone:.3f} (flag_at {flag_at}), highest with a rule's finding {support:.3f} "
        f"(support_at {support_at})")
    return flag_at, support_at


def cross_validate(reader: OrderClassifier, labelled: list, benign: np.ndarray, calibration: list[ToolRecord],
                   args: argparse.Namespace) -> None:
    """Recall per category of the rules alone and with the reader, each attack row scored by a
    fit (and calibration) without it: how the settings were chosen, without the held-out rounds."""
    attacks = [(row, record) for row, record in labelled if row["category"] != "benign"]
    order = np.random.RandomState(0).permutation(len(attacks))
    hits: dict[str, list[int]] = {name: [0, 0, 0] for name in CATEGORIES[1:]}  # rules, both, rows
    for fold in range(args.folds):
        test = set(order[fold :: args.folds].tolist())
        bags = [(CATEGORIES.index(row["category"]), reader.vectors([s for _, s in order_units(record)]))
                for index, (row, record) in enumerate(attacks) if index not in test and order_units(record)]
        model, _ = train(bags, benign, args.c, args.order_weight)
        weights = ClassifierWeights("", model.coef_.astype(np.float32), model.intercept_.astype(np.float32), 1, 1)
        flag_at, support_at = calibrate(reader, weights, calibration)
        for index in test:
            row, record = attacks[index]
            rules, score = assess_tool(record).score, tool_score(reader, weights, record)
            learned = 1.0 if score >= flag_at else 0.5 if score >= support_at else 0.0
            counts = hits[row["category"]]
            counts[0] += rules >= 1.0
            counts[1] += rules + learned >= 1.0
            counts[2] += 1
        say(f"fold {fold + 1}/{args.folds} done")
    print(f"| {args.folds}-fold recall (C {args.c}, order weight {args.order_weight}) | rules | rules + learned |")
    print("|---|---:|---:|")
    for name, (rules, both, total) in hits.items():
        print(f"| {name} | {rules}/{total} | {both}/{total} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache folder (default: the user's)")
    parser.add_argument("--out", type=Path, default=WEIGHTS_FILE)
    parser.add_argument("--c", type=float, default=4.0, help="inverse regularisation strength")
    parser.add_argument("--order-weight", type=float, default=20.0, help="weight of an order sentence (benign: 1)")
    parser.add_argument("--calibrate-on-bench", action="store_true",
                        help="calibrate on ../shared/bench's etom_mcp and toolbench_stb (see above)")
    parser.add_argument("--folds", type=int, default=0, help="also print the cross-validated recall (how C and the weight were chosen)")
    args = parser.parse_args()

    from toolscout.search.settings import SearchSettings

    cache = args.cache or SearchSettings().resolved_cache_dir
    location = resolve_model("bundled")
    assert location is not None
    placeholder = ClassifierWeights(location.identity, np.zeros((4, 384), np.float32), np.zeros(4, np.float32), 1, 1)
    from toolscout.index.dense import load_encoder

    reader = OrderClassifier(placeholder, load_encoder(location, backend="onnx", work_dir=cache), open_vector_cache(cache))

    labelled = [(row, record) for row, record in load(LABELLED) if row.get("split", "dev") in TRAIN_SPLITS]
    tools = load(TRAIN_TOOLS)
    if args.calibrate_on_bench:
        negatives = [record for _, record in tools]
        calibration = [record for path in BENCH_CALIBRATION for _, record in load(path)]
    else:
        negatives = [record for row, record in tools if _even(str(row.get("id", row["name"])))]
        calibration = [record for row, record in tools if not _even(str(row.get("id", row["name"])))]
    say(f"labelled definitions {len(labelled)}, benign training tools {len(negatives):,}, "
        f"calibration tools {len(calibration):,}")

    # Bags: one per attack row (its sentences), and benign sentences.
    attacks = [(CATEGORIES.index(row["category"]), [s for _, s in order_units(record)])
               for row, record in labelled if row["category"] != "benign"]
    attacks = [(label, sentences) for label, sentences in attacks if sentences]
    benign = [s for row, record in labelled if row["category"] == "benign" for _, s in order_units(record)]
    benign += [s for record in negatives for _, s in order_units(record)]
    benign = list(dict.fromkeys(benign))
    embed(reader, [s for _, sentences in attacks for s in sentences], "order sentences")
    bags = [(label, reader.vectors(sentences)) for label, sentences in attacks]
    benign_vectors = embed(reader, benign, "benign sentences")
    embed(reader, [s for record in calibration for _, s in order_units(record)], "calibration sentences")

    model, chosen = train(bags, benign_vectors, args.c, args.order_weight)
    weights = ClassifierWeights(location.identity, model.coef_.astype(np.float32),
                                model.intercept_.astype(np.float32), 1.0, 1.0)
    flag_at, support_at = calibrate(reader, weights, calibration)
    if args.folds:
        cross_validate(reader, labelled, benign_vectors, calibration, args)

    payload = {
        "version": 1,
        "model": location.identity,
        "categories": list(CATEGORIES),
        "flag_at": flag_at,
        "support_at": support_at,
        "trained_on": {
            "order_definitions": len(bags),
            "order_sentences": int(sum(keep.sum() for keep in chosen)),
            "benign_sentences": len(benign_vectors),
            "calibration_tools": len(calibration),
            "calibrated_on": "shared/bench etom_mcp + toolbench_stb" if args.calibrate_on_bench else "shared/train, odd half",
            "splits": list(TRAIN_SPLITS),
            "c": args.c,
            "order_weight": args.order_weight,
        },
        "intercept": [round(float(v), 5) for v in model.intercept_],
        "coef": [[round(float(v), 5) for v in row] for row in model.coef_],
    }
    args.out.write_text(json.dumps(payload, separators=(",", ":")) + "\n", encoding="utf-8")
    say(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
