"""Top-1 on the bundled-registry dev set: the default engine, dense alone and lexical fusion.

`toolscout eval` reads only `queries.jsonl`; this script runs the same engine and scoring code
(`toolscout.eval`) on both query files of benchmarks/data/bundled (`queries.jsonl` and
`queries_translated.jsonl`) and prints markdown tables: Recall@1 (= MRR@1, top-1 accuracy),
Recall@5, MRR@10 and Full Recall@10, then per-slice top-1 and every top-1 miss of the default
engine (query -> what ranked first). Tools are indexed with their title and annotations, as the
gateway indexes them (the bench loader drops both). Progress goes to stderr.

    .venv/bin/python benchmarks/bundled_top1.py
    .venv/bin/python benchmarks/bundled_top1.py --json /tmp/bundled_runs.json   # per-query results too
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from toolscout.eval import Dataset, build_engine, engine_ranker, evaluate, load_queries
from toolscout.eval.ablation import alone, lexical_only
from toolscout.eval.dev_sets import load_bundled_tools
from toolscout.search.settings import LEXICAL_SIGNALS, SearchSettings

DATA = Path(__file__).resolve().parent / "data" / "bundled"
FILES = ("queries.jsonl", "queries_translated.jsonl")
K = 10


def log(message: str) -> None:
    print(f"[bundled_top1] {message}", file=sys.stderr, flush=True)


def configurations() -> dict[str, SearchSettings]:
    base = SearchSettings()
    lexical = [name for name in LEXICAL_SIGNALS if base.weights.get(name)]
    return {"default (hybrid)": base, "dense alone": alone(base, "dense"),
            "lexical fusion": lexical_only(base, lexical)}


def top1(outcome) -> float:
    return float(bool(outcome.retrieved) and outcome.retrieved[0] in outcome.query.answers)


def recall_at(outcome, k: int) -> float:
    return float(any(tool_id in outcome.query.answers for tool_id in outcome.retrieved[:k]))


def row_of(outcomes) -> dict[str, float]:
    n = len(outcomes)
    multi = [o for o in outcomes if o.query.kind == "multi"]
    return {"n": n, "top1": sum(map(top1, outcomes)) / n,
            "r5": sum(recall_at(o, 5) for o in outcomes) / n,
            "mrr": sum(o.mrr for o in outcomes) / n,
            "full": sum(o.full_recall for o in outcomes) / n,
            "multi_full": (sum(o.full_recall for o in multi) / len(multi)) if multi else None}


def fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path, help="also write every run's per-query top 10 here")
    args = parser.parse_args()
    tools = load_bundled_tools(args.data / "tools.jsonl")
    raw = {name: {json.loads(l)["id"]: json.loads(l) for l in (args.data / name).read_text().splitlines() if l.strip()}
           for name in FILES}
    queries = {name: load_queries(args.data / name) for name in FILES}
    known = {tool.id for tool in tools}
    for name, items in queries.items():
        for query in items:
            missing = query.answers - known
            if missing:
                raise SystemExit(f"{name}: {query.id} names unknown tools {sorted(missing)}")
    log(f"{len(tools)} tools; " + ", ".join(f"{len(v)} in {k}" for k, v in queries.items()))
    dataset = Dataset(name="bundled", tools=tools, queries=queries[FILES[0]])
    runs: dict[tuple[str, str], list] = {}
    for label, settings in configurations().items():
        log(f"{label}: building the index")
        engine, seconds = build_engine(settings, dataset)
        log(f"{label}: index built in {seconds:.1f} s")
        for name in FILES:
            started = time.perf_counter()
            run = evaluate(engine_ranker(engine), queries[name], K, label=label,
                           progress=lambda done, total, l=label, n=name: (
                               log(f"{l}: {n} {done}/{total}") if done == total or done % 25 == 0 else None))
            runs[(label, name)] = run.outcomes
            log(f"{label}: {name} done in {time.perf_counter() - started:.1f} s")

    print("| configuration | queries | n | Recall@1 (top-1) | Recall@5 | MRR@10 | Full Recall@10 | multi-step Full Recall@10 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (label, name), outcomes in runs.items():
        r = row_of(outcomes)
        print(f"| {label} | {name} | {r['n']} | {fmt(r['top1'])} | {fmt(r['r5'])} | {fmt(r['mrr'])} | "
              f"{fmt(r['full'])} | {fmt(r['multi_full'])} |")

    labels = list(configurations())
    for name, fields in ((FILES[0], ("server", "group", "style", "kind")), (FILES[1], ("lang",))):
        for field in fields:
            print(f"\nTop-1 by {field} ({name}):\n")
            print(f"| {field} | n | " + " | ".join(labels) + " |")
            print("|---|---:|" + "---:|" * len(labels))
            values = sorted({str(raw[name][q.id].get(field, "-")) for q in queries[name]})
            for value in values:
                cells = []
                for label in labels:
                    chosen = [o for o in runs[(label, name)] if str(raw[name][o.query.id].get(field, "-")) == value]
                    cells.append(fmt(sum(map(top1, chosen)) / len(chosen)))
                count = sum(1 for q in queries[name] if str(raw[name][q.id].get(field, "-")) == value)
                print(f"| {value} | {count} | " + " | ".join(cells) + " |")

    for name in FILES:
        print(f"\nTop-1 misses of the default engine ({name}): query -> first result (rank of first right tool)\n")
        for outcome in runs[(labels[0], name)]:
            if top1(outcome):
                continue
            rank = next((i for i, t in enumerate(outcome.retrieved, 1) if t in outcome.query.answers), None)
            first = outcome.retrieved[0] if outcome.retrieved else "(nothing)"
            wanted = ", ".join(outcome.query.relevant)
            print(f"- {outcome.query.id}: \"{outcome.query.text}\" -> {first} "
                  f"(wanted {wanted}; {'rank ' + str(rank) if rank else 'not in top 10'})")

    if args.json:
        payload = {f"{label}|{name}": [{"id": o.query.id, "query": o.query.text, "answers": sorted(o.query.answers),
                                        "retrieved": list(o.retrieved)} for o in outcomes]
                   for (label, name), outcomes in runs.items()}
        args.json.write_text(json.dumps(payload, ensure_ascii=False, indent=1))
        log(f"per-query results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
