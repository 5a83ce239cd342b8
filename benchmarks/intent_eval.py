"""Measure whether the poisoning scan reads intent: precision and recall per category of order,
and the false-alarm rate on benign catalogs.

    python benchmarks/intent_eval.py            # the labelled set and every benign catalog
    python benchmarks/intent_eval.py --misses   # also list what the scan misses or flags wrongly

Labelled set: tests/data/intent/intent.jsonl. Each row is a tool definition with a `category`:
`call-tool` (tells the model to call another tool, often through execute_tool), `data` (to read
or send files or secrets), `conceal` (to hide something from the user), or `benign`; a `style`
(polite, operator policy, a language, a numbered workflow, a parameter, a default, an enum, a
title, an output schema, split across fields ...), and a `split`: `dev` rows were written before
the rules were revised for them, `heldout` rows after (measured once, not used to revise). Benign
rows mention tools, files, secrets or hiding in honest ways; `lookalike` names the category each
resembles, so each category's precision counts the benign rows that look like it.

Benign catalogs (false alarms): the bundled registry's tools (benchmarks/data/bundled) and the dev
sets' tools (../shared/bench/*/tools.jsonl, read in place).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from poisoning_eval import load  # noqa: E402  (the same reader of tools.jsonl rows)

from toolscout.security.poisoning import assess_tool, summarize  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "data" / "intent" / "intent.jsonl"
CATALOGS = {
    "bundled registry": ROOT / "benchmarks" / "data" / "bundled" / "tools.jsonl",
    **{path.parent.name: path for path in sorted((ROOT.parent / "shared" / "bench").glob("*/tools.jsonl"))},
}
CATEGORIES = ("call-tool", "data", "conceal")


def _ratio(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.3f} ({numerator}/{denominator})" if denominator else "-"


def labelled_table(show: bool) -> None:
    rows = [(row, assess_tool(record)) for row, record in load(LABELLED)]
    print("| split | category | recall | precision (vs. benign lookalikes) |")
    print("|---|---|---:|---:|")
    for split in sorted({row.get("split", "dev") for row, _ in rows}) + ["all"]:
        chosen = [(row, a) for row, a in rows if split == "all" or row.get("split", "dev") == split]
        for category in CATEGORIES:
            hits = [a.flagged for row, a in chosen if row["category"] == category]
            false = [a.flagged for row, a in chosen if row["category"] == "benign" and row.get("lookalike") == category]
            tp, fp = sum(hits), sum(false)
            print(f"| {split} | {category} | {_ratio(tp, len(hits))} | {_ratio(tp, tp + fp)} |")
        attacks = [a.flagged for row, a in chosen if row["category"] != "benign"]
        benign = [a.flagged for row, a in chosen if row["category"] == "benign"]
        tp, fp = sum(attacks), sum(benign)
        print(f"| {split} | all orders | {_ratio(tp, len(attacks))} | {_ratio(tp, tp + fp)} |")
        print(f"| {split} | benign flagged | {_ratio(fp, len(benign))} | |")
    if show:
        for row, assessment in rows:
            wrong = assessment.flagged == (row["category"] == "benign")
            if wrong:
                kind = "FALSE ALARM" if assessment.flagged else "MISS"
                print(f"  {kind} {row['id']} ({row['category']}, {row['style']}), score {assessment.score:.2g}: "
                      f"{summarize(assessment.findings) or 'nothing'}")


def catalog_table(show: bool) -> None:
    print()
    print("| benign catalog | tools | flagged | false-alarm rate |")
    print("|---|---:|---:|---:|")
    total = flagged_total = 0
    for name, path in CATALOGS.items():
        if not path.exists():
            print(f"| {name} | (not found: {path}) | | |")
            continue
        rows = load(path)
        flagged = [(row, a) for row, a in ((row, assess_tool(record)) for row, record in rows) if a.flagged]
        total += len(rows)
        flagged_total += len(flagged)
        print(f"| {name} | {len(rows):,} | {len(flagged)} | {len(flagged) / len(rows):.4f} |")
        if show:
            for row, assessment in flagged:
                print(f"  FLAGGED {row.get('id', row['name'])}: {summarize(assessment.findings)}")
    print(f"| all | {total:,} | {flagged_total} | {flagged_total / max(total, 1):.4f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list misses, false alarms and flagged catalog tools")
    args = parser.parse_args()
    labelled_table(args.misses)
    catalog_table(args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
