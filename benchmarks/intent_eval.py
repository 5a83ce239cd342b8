"""Measure whether the poisoning scan reads intent: precision and recall per category of order,
and the false-alarm rate on benign catalogs, for the phrase rules alone and for the rules with
the learned reader (`toolscout.security.order_classifier`) as the gateway runs them.

    python benchmarks/intent_eval.py            # the labelled set and every benign catalog
    python benchmarks/intent_eval.py --misses   # also list what the scan misses or flags wrongly
    python benchmarks/intent_eval.py --timing   # also the screen's cost on a cold start
    python benchmarks/intent_eval.py --cache DIR   # where sentence vectors are kept between runs

Labelled set: tests/data/intent/intent.jsonl. Each row is a tool definition with a `category`:
`call-tool` (tells the model to call another tool, often through execute_tool), `data` (to read
or send files or secrets), `conceal` (to hide something from the user), or `benign`; a `style`
(polite, operator policy, a language, a numbered workflow, a parameter, a default, an enum, a
title, an output schema, split across fields ...), and a `split`: `dev` rows were written before
the rules were revised for them, `heldout` rows after (measured once, not used to revise);
`train` rows were written to train the learned reader, which also learns from `dev` and
`heldout1` but never sees `heldout2` or `heldout3` (scripts/train_intent_screen.py). Benign
rows mention tools, files, secrets or hiding in honest ways; `lookalike` names the category each
resembles, so each category's precision counts the benign rows that look like it.

Benign catalogs (false alarms): the bundled registry's tools (benchmarks/data/bundled) and the dev
sets' tools (../shared/bench/*/tools.jsonl, read in place); neither is read by the training script
(it trains and calibrates on ../shared/train).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from poisoning_eval import load  # noqa: E402  (the same reader of tools.jsonl rows)

from toolscout.catalog import ToolRecord  # noqa: E402
from toolscout.security.order_classifier import OrderClassifier  # noqa: E402
from toolscout.security.poisoning import Finding, assess_tool, summarize  # noqa: E402
from toolscout.security.screens import PoisoningScreen  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "data" / "intent" / "intent.jsonl"
CATALOGS = {
    "bundled registry": ROOT / "benchmarks" / "data" / "bundled" / "tools.jsonl",
    **{path.parent.name: path for path in sorted((ROOT.parent / "shared" / "bench").glob("*/tools.jsonl"))},
}
CATEGORIES = ("call-tool", "data", "conceal")
# A scan: the findings that flag each tool ((), not flagged), for a batch of tools.
Scan = Callable[[list[ToolRecord]], list[tuple[Finding, ...]]]


def rules_scan(records: list[ToolRecord]) -> list[tuple[Finding, ...]]:
    return [a.findings if (a := assess_tool(record)).flagged else () for record in records]


def screen_scan(screen: PoisoningScreen) -> Scan:
    def scan(records: list[ToolRecord]) -> list[tuple[Finding, ...]]:
        screen.screen(records)
        return [screen.findings(record) for record in records]

    return scan


def _ratio(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.3f} ({numerator}/{denominator})" if denominator else "-"


def labelled_table(scans: dict[str, Scan], show: bool) -> None:
    labelled = load(LABELLED)
    results = {name: scan([record for _, record in labelled]) for name, scan in scans.items()}
    print("| split | category | scan | recall | precision (vs. benign lookalikes) |")
    print("|---|---|---|---:|---:|")
    for split in sorted({row.get("split", "dev") for row, _ in labelled}) + ["all"]:
        for category in (*CATEGORIES, "all orders", "benign flagged"):
            for name, found in results.items():
                chosen = [(row, bool(f)) for (row, _), f in zip(labelled, found)
                          if split == "all" or row.get("split", "dev") == split]
                benign = [flag for row, flag in chosen if row["category"] == "benign"]
                if category == "benign flagged":
                    print(f"| {split} | benign flagged | {name} | {_ratio(sum(benign), len(benign))} | |")
                    continue
                if category == "all orders":
                    hits = [flag for row, flag in chosen if row["category"] != "benign"]
                    false = benign
                else:
                    hits = [flag for row, flag in chosen if row["category"] == category]
                    false = [flag for row, flag in chosen if row["category"] == "benign" and row.get("lookalike") == category]
                tp, fp = sum(hits), sum(false)
                print(f"| {split} | {category} | {name} | {_ratio(tp, len(hits))} | {_ratio(tp, tp + fp)} |")
    if show:
        for name, found in results.items():
            for (row, _), findings in zip(labelled, found):
                if bool(findings) == (row["category"] == "benign"):
                    kind = "FALSE ALARM" if findings else "MISS"
                    why = summarize(findings) if findings else "nothing that flags"
                    print(f"  [{name}] {kind} {row['id']} ({row['split']}, {row['category']}, {row['style']}): {why}")


def catalog_table(scans: dict[str, Scan], show: bool) -> None:
    print()
    print("| benign catalog | tools | " + " | ".join(f"flagged, {name}" for name in scans) + " |")
    print("|---|---:|" + "---:|" * len(scans))
    totals = dict.fromkeys(scans, 0)
    size = 0
    for catalog, path in CATALOGS.items():
        if not path.exists():
            print(f"| {catalog} | (not found: {path}) |" + " |" * len(scans))
            continue
        rows = load(path)
        size += len(rows)
        cells = []
        for name, scan in scans.items():
            found = scan([record for _, record in rows])
            flagged = [(row, f) for (row, _), f in zip(rows, found) if f]
            totals[name] += len(flagged)
            cells.append(f"{len(flagged)} ({len(flagged) / len(rows):.4f})")
            if show:
                for row, findings in flagged:
                    print(f"  [{name}] FLAGGED {row.get('id', row['name'])}: {summarize(findings)}")
        print(f"| {catalog} | {len(rows):,} | " + " | ".join(cells) + " |")
    print(f"| all | {size:,} | " + " | ".join(f"{n} ({n / max(size, 1):.4f})" for n in totals.values()) + " |")


def timing_table() -> None:
    """The learned reader's cost as a gateway meets a catalog for the first time: model loaded,
    no sentence vector cached anywhere (a fresh cache folder)."""
    print()
    print("| catalog | tools | sentences read | load model (s) | screen (s) | ms per tool |")
    print("|---|---:|---:|---:|---:|---:|")
    from toolscout.security.order_classifier import order_units

    for catalog in ("bundled registry", "toolbench_stb"):
        path = CATALOGS.get(catalog)
        if path is None or not path.exists():
            continue
        records = [record for _, record in load(path)]
        with tempfile.TemporaryDirectory() as empty:
            started = time.perf_counter()
            reader = OrderClassifier.bundled(Path(empty))
            loaded = time.perf_counter() - started
            assert reader is not None, "the learned reader could not be loaded"
            screen = PoisoningScreen(lambda: reader)
            started = time.perf_counter()
            screen(records)
            took = time.perf_counter() - started
        units = sum(len(order_units(record)) for record in records)
        print(f"| {catalog} | {len(records):,} | {units:,} | {loaded:.2f} | {took:.1f} | {1000 * took / len(records):.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list misses, false alarms and flagged catalog tools")
    parser.add_argument("--timing", action="store_true", help="also time the learned reader on a cold start")
    parser.add_argument("--cache", type=Path, default=None,
                        help="folder of the sentence vectors kept between runs (default: the user's embedding cache)")
    args = parser.parse_args()
    from toolscout.search.settings import SearchSettings

    cache = args.cache or SearchSettings().resolved_cache_dir
    reader = OrderClassifier.bundled(cache)
    scans: dict[str, Scan] = {"rules": rules_scan}
    if reader is None:
        print("the learned reader is unavailable (see the warning above); rules only", file=sys.stderr)
    else:
        # One screen per table: each reads its whole batch at once, as a gateway does a catalog.
        scans["rules + learned"] = screen_scan(PoisoningScreen(lambda: reader))
    labelled_table(scans, args.misses)
    catalog_table(scans, args.misses)
    if args.timing:
        timing_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
