"""Measure the poisoning scan: recall on labelled poisoned tools, false positives on real ones.

    python benchmarks/poisoning_eval.py                       # poisoned set vs etom_mcp (benign)
    python benchmarks/poisoning_eval.py --benign PATH ...     # other benign tools.jsonl files

Poisoned: tests/data/poisoning/poisoned.jsonl, split into `dev` (written before any rule existed)
and rounds `heldout1`..`heldout8`, each written after freezing the rules, measured, and only then
used to revise them (docs/security.md has the figure of each round when first measured; heldout8
hides instructions in output schemas and titles). Benign:
the real MCP tool descriptions of ../shared/bench/etom_mcp/tools.jsonl, read in place.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from toolscout.catalog import ToolRecord
from toolscout.security.poisoning import assess_tool, summarize

ROOT = Path(__file__).resolve().parent.parent
POISONED = ROOT / "tests" / "data" / "poisoning" / "poisoned.jsonl"
ETOM = ROOT.parent / "shared" / "bench" / "etom_mcp" / "tools.jsonl"


def load(path: Path) -> list[tuple[dict, ToolRecord]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            record = ToolRecord(
                id=str(row.get("id", row["name"])),
                name=row["name"],
                server=row.get("server", ""),
                description=row.get("description") or "",
                input_schema=row.get("input_schema") or {},
                title=row.get("title"),
                annotations=row.get("annotations"),
                output_schema=row.get("output_schema"),
            )
            rows.append((row, record))
    return rows


def _short(text: str, width: int = 110) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def report_poisoned(rows: list[tuple[dict, ToolRecord]], show: bool) -> None:
    by_split: dict[str, list[bool]] = {}
    misses = []
    for row, record in rows:
        assessment = assess_tool(record)
        by_split.setdefault(row.get("split", "dev"), []).append(assessment.flagged)
        if not assessment.flagged:
            misses.append((row, assessment))
    everything = [flag for flags in by_split.values() for flag in flags]
    for split, flags in sorted(by_split.items()) + [("all", everything)]:
        print(f"recall [{split}]: {sum(flags) / len(flags):.3f} ({sum(flags)}/{len(flags)})")
    if show:
        for row, assessment in misses:
            rules = ", ".join(sorted({f.rule for f in assessment.findings})) or "nothing"
            print(f"  MISS {row['id']} ({row.get('style')}), score {assessment.score}: {rules}")


def report_benign(name: str, rows: list[tuple[dict, ToolRecord]], show: bool) -> None:
    flagged = []
    near = Counter()
    for _, record in rows:
        assessment = assess_tool(record)
        if assessment.flagged:
            flagged.append((record, assessment))
        for rule in {f.rule for f in assessment.findings}:
            near[rule] += 1
    rate = len(flagged) / len(rows) if rows else 0.0
    print(f"false positives [{name}]: {rate:.4f} ({len(flagged)}/{len(rows)})")
    if show:
        for record, assessment in flagged:
            print(f"  FP {record.server}::{record.name} score {assessment.score}: "
                  f"{summarize(assessment.findings)}")
            print(f"     {_short(record.description)}")
        print(f"  rules triggered on {name} (tools): {dict(near.most_common())}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--poisoned", type=Path, default=POISONED)
    parser.add_argument("--benign", type=Path, nargs="*", default=[ETOM])
    parser.add_argument("--quiet", action="store_true", help="figures only, no lists")
    args = parser.parse_args(argv)
    report_poisoned(load(args.poisoned), show=not args.quiet)
    for path in args.benign:
        if not path.exists():
            print(f"benign set not found: {path}", file=sys.stderr)
            return 2
        name = path.parent.name if path.name == "tools.jsonl" else path.stem
        report_benign(name, load(path), show=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
