"""Does learning from use take right answers away? A dev set searched without and with a handful of
learned examples: how many first tools went from right to wrong, and from wrong to right.

    .venv/bin/python benchmarks/learning_safety.py        # bundled, translated, everyday, devtools
    .venv/bin/python benchmarks/learning_safety.py --sets bundled --examples FILE

The examples stand for one short agent session on each catalog (benchmarks/data/learned/
<set>_session.jsonl; the translated set reuses the bundled registry's): requests written for this
check from the catalog's tools, none taken from a dev set; an example equal to an evaluated request
is dropped all the same. They reach the engine as a gateway passes learned examples
(expansion phrases and the intent signal). Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from toolscout.eval.crossval import load_eval_examples, without_overlap
from toolscout.eval.dev_sets import dev_sets
from toolscout.eval.runner import build_engine
from toolscout.search.settings import SearchSettings

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
SESSIONS = ROOT / "benchmarks" / "data" / "learned"
# A set whose catalog is another's uses that one's session.
SAME_CATALOG = {"bundled_translated": "bundled"}


def session_of(name: str) -> Path:
    return SESSIONS / f"{SAME_CATALOG.get(name, name)}_session.jsonl"


def first_tools(settings: SearchSettings, dataset, queries, examples) -> list[str | None]:
    """Each query's first tool (None: no answer), on an engine given `examples` as learned."""
    engine, _ = build_engine(settings, dataset, examples=examples)
    return [next((hit.tool.id for hit in engine.search(q.text, limit=1).hits), None) for q in queries]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="bundled,bundled_translated,everyday,devtools",
                        help="dev sets (comma-separated)")
    parser.add_argument("--examples", type=Path,
                        help="learned examples for every set (JSON Lines; default: each set's session file)")
    parser.add_argument("--bench", type=Path, default=BENCH)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    settings = SearchSettings()
    print("| dev set | queries | examples | right before | right after | right -> wrong | wrong -> right | first tool changed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    wanted = args.sets.split(",")
    for dev in (d for d in dev_sets(args.bench) if d.name in wanted):
        dataset, queries = dev.dataset, dev.dataset.queries
        examples, _ = without_overlap(load_eval_examples(args.examples or session_of(dev.name)), queries)
        print(f"{dataset.name}: searching without and with {len(examples)} examples", file=sys.stderr)
        before = first_tools(settings, dataset, queries, ())
        after = first_tools(settings, dataset, queries, examples)
        right = [[tool in q.answers for tool, q in zip(run, queries)] for run in (before, after)]
        lost = sum(b and not a for b, a in zip(*right))
        gained = sum(a and not b for b, a in zip(*right))
        changed = sum(b != a for b, a in zip(before, after))
        print(f"| {dataset.name} | {len(queries)} | {len(examples)} | {sum(right[0])} | {sum(right[1])} "
              f"| {lost} | {gained} | {changed} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
