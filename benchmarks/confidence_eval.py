"""How well the calibrated confidence (`toolscout.search.calibrated`) tells served requests from unserved ones, per dev set.

For every dev set (everyday, devtools, bundled, bundled_translated, etom_mcp, toolbench_stb,
toollens_train), up to `--per-set` of its requests (evenly spread) are searched as `search_tools`
searches them (limit 5) twice:
- served: on the set's own catalog;
- unserved: on that catalog without the request's right tools (relevant and acceptable ids). The
  requests are grouped so that each group's right tools are at most a tenth of the catalog, and
  each group is searched on the catalog without them (re-indexed: nothing of a dropped tool stays).
etom_mcp's real infeasible requests (queries_infeasible.jsonl) are searched on its own catalog.

Per set it prints the expected calibration error (10 equal-width bins) of the confidence against
"the first result serves the request" over served and unserved requests together; the recall of
unserved requests at the threshold that flags at most 1%, 2% and 5% of the served ones (false
alarms); and at the shipped threshold (`weak_below`), its false alarms and recall. Nothing is
fitted on the dev sets: they only measure. The searched requests' features are cached under
runs/confidence (per model and ranker file), so a refitted confidence.json is measured in seconds.
The same table follows for the keyword-only confidence (`keyword_confidence.json`: every request
searched again with the model off, as during the first seconds of a first start).

Wording the fit never saw: with `--train`, each family of training sources (`FAMILIES`: developer,
everyday, API-style, MCP) is left out of a refit of both confidences (the training requests are
replayed from the cache the fit left, `python -m toolscout.training.confidence_fit`), and the ECE of
the refit on that family's dev sets is printed beside the shipped fit's.

    .venv/bin/python benchmarks/confidence_eval.py [--model bundled] [--ranker FILE] [--per-set 300] \
        [--train ../shared/train]

Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

from toolscout.eval.datasets import Dataset
from toolscout.eval.dev_sets import DevSet, dev_sets
from toolscout.eval.runner import sample_queries
from toolscout.search.calibrated import CONFIDENCE_FILE, FEATURES, KEYWORD_CONFIDENCE_FILE, KEYWORD_FEATURES, Calibration
from toolscout.training.confidence_fit import (
    Row,
    expected_calibration_error,
    fit,
    ranker_beside_model,
    recall_at_false_alarms,
    replay,
    training_catalogs,
    without_right_tools,
)
from toolscout.training.ranker_fit import Catalog

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
FALSE_ALARMS = (0.01, 0.02, 0.05)
log = logging.getLogger("confidence_eval")
# Families of training sources, and the dev sets worded like them (what a fit without them is measured on).
FAMILIES = {
    "developer (tldr)": (("tldr",), ("devtools",)),
    "everyday": (("clinc150", "clinc150_oos", "hwu64", "snips", "ha_intents", "star", "thingpedia"), ("everyday",)),
    "API-style": (("metatool", "bfcl", "gorilla_hub", "gorilla_apizoo", "seal_tools", "acebench", "toolalpaca", "restgpt"),
                  ("toolbench_stb", "toollens_train")),
    "MCP": (("azure_mcp",), ("etom_mcp", "bundled", "bundled_translated")),
}


def catalogs(dev: DevSet, per_set: int, seed: int = 0) -> list[Catalog]:
    """The set's own catalog with its sampled requests, and one catalog per group of requests
    without the group's right tools (those requests unserved there)."""
    dataset: Dataset = dev.dataset
    known = {t.id for t in dataset.tools}
    queries = [q for q in sample_queries(dataset.queries, per_set) if q.answers & known]
    own = tuple((q.text, q.answers) for q in queries)
    return [Catalog(f"{dev.name}@own", tuple(dataset.tools), own), *without_right_tools(f"{dev.name}@", dataset.tools, own, seed)]


def infeasible(bench: Path, dev: DevSet) -> Catalog:
    lines = (bench / "etom_mcp" / "queries_infeasible.jsonl").read_text(encoding="utf-8").splitlines()
    requests = tuple((json.loads(line)["query"], frozenset()) for line in lines if line.strip())
    return Catalog("etom_mcp infeasible@own", tuple(dev.dataset.tools), requests)


def table(groups: dict[str, list[Row]], calibration: Calibration) -> str:
    fa = " | ".join(f"recall @{f:.0%} FA" for f in FALSE_ALARMS)
    lines = [
        f"| dev set | served | unserved | first right (served) | ECE | {fa} | shipped: FA | shipped: recall |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(FALSE_ALARMS) + "---:|---:|",
    ]
    threshold = calibration.weak_below if calibration.weak_below is not None else 0.0
    for name, rows in groups.items():
        confidence = np.array([calibration.confidence(r.features) for r in rows])
        labels = np.array([r.first_serves for r in rows])
        feasible = np.array([r.feasible for r in rows])
        served, unserved = confidence[feasible], confidence[~feasible]
        ece = expected_calibration_error(confidence, labels) if feasible.any() else float("nan")
        recalls = " | ".join(
            f"{recall_at_false_alarms(served, unserved, f):.2f}" if feasible.any() else "-" for f in FALSE_ALARMS
        )
        shipped_fa = f"{(served < threshold).mean():.3f}" if feasible.any() else "-"
        right = f"{labels[feasible].mean():.3f}" if feasible.any() else "-"
        lines.append(f"| {name} | {feasible.sum()} | {(~feasible).sum()} | {right} | {ece:.3f} | {recalls} | {shipped_fa} | "
                     f"{(unserved < threshold).mean():.2f} |")
    return "\n".join(lines)


def ece(rows: list[Row], calibration: Calibration) -> float:
    confidence = np.array([calibration.confidence(r.features) for r in rows])
    return expected_calibration_error(confidence, np.array([r.first_serves for r in rows]))


def held_out(train: list[Row], groups: dict[str, list[Row]], shipped: Calibration, features: tuple[str, ...]) -> str:
    """Per family: the ECE on its dev sets of the shipped fit and of a refit without the family."""
    lines = ["| family left out | training requests left | dev set | ECE, shipped fit | ECE, fit without it |",
             "|---|---:|---|---:|---:|"]
    for family, (sources, sets) in FAMILIES.items():
        kept = [r for r in train if r.catalog.split("@")[0] not in sources]
        refit = fit(kept, features=features)
        for name in sets:
            if name in groups:
                lines.append(f"| {family} | {len(kept)} of {len(train)} | {name} | {ece(groups[name], shipped):.3f} | "
                             f"{ece(groups[name], refit):.3f} |")
    return "\n".join(lines)


def searched(args: argparse.Namespace, ranker: Path, keyword_only: bool) -> dict[str, list[Row]]:
    """Every dev set's rows (served and unserved), and etom_mcp's real infeasible requests apart."""
    groups: dict[str, list[Row]] = {}
    for dev in dev_sets(args.bench):
        tested = catalogs(dev, args.per_set)
        if dev.name == "etom_mcp":
            tested.append(infeasible(args.bench, dev))
        rows = replay(tested, args.model, ranker, args.cache, log.info, keyword_only=keyword_only)
        groups[dev.name] = [r for r in rows if not r.catalog.startswith("etom_mcp infeasible")]
        if dev.name == "etom_mcp":
            own = [r for r in rows if r.catalog == "etom_mcp@own"]
            groups["etom_mcp (real infeasible)"] = own + [r for r in rows if r.catalog.startswith("etom_mcp infeasible")]
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--ranker", type=Path, help="ranker file (default: ranker.json beside the model)")
    parser.add_argument("--confidence", type=Path, help=f"calibration (default: {CONFIDENCE_FILE} beside the ranker)")
    parser.add_argument("--per-set", type=int, default=300, help="requests per dev set")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "confidence")
    parser.add_argument("--train", type=Path, help="training folder: also measure fits with a family of sources left out")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    ranker = args.ranker or ranker_beside_model(args.model)
    path = args.confidence or ranker.with_name(CONFIDENCE_FILE)
    for keyword_only, name, features in ((False, path.name, FEATURES), (True, KEYWORD_CONFIDENCE_FILE, KEYWORD_FEATURES)):
        groups = searched(args, ranker, keyword_only)
        # Read after the searches: they do not depend on it (the cache serves a refitted one at once).
        file = path.with_name(name)
        calibration = Calibration.from_json(json.loads(file.read_text(encoding="utf-8")), str(file))
        what = "Keyword-only confidence (model off)" if keyword_only else "Calibrated confidence"
        print(f"{what} {file.name} (ranker {ranker.name}, model {args.model}); shipped threshold "
              f"{calibration.weak_below}; up to {args.per_set} requests per set, each served (own catalog) and "
              f"unserved (its right tools dropped)\n")
        print(table(groups, calibration) + "\n", flush=True)
        if args.train is not None:
            train = replay(training_catalogs(args.train, 30, 400), args.model, ranker, args.cache, log.info,
                           keyword_only=keyword_only)
            print(f"{what}: each family of training sources left out of the fit, measured on its dev sets\n")
            print(held_out(train, groups, calibration, features) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
