"""False alarms and recall of the weak-match notice, on catalogs of 5 to 4,000 tools, and its threshold.

The notice fires when the learned ranker's probability that its best candidate serves the request
(its weak-match model's, fitted on training catalogs) is below the threshold stored in its
ranker.json (`toolscout.search.confidence`). Measured on
- etom_mcp's infeasible requests (queries_infeasible.jsonl: no tool serves them), searched on
  etom_mcp's catalog and on samples of it of 5 to 2,000 tools (4,000: filled with other dev tools):
  recall = share flagged;
- feasible requests of every dev set, on its own catalog (all its queries) and on catalogs of 5 to
  4,000 tools holding each request's tools, filled with its set's tools then other dev tools: false
  alarms = share flagged.
The threshold chosen is the highest whose false alarms stay within `--max-false-alarms` on every
dev set (all its catalogs together); `--write` stores it in the ranker file. The cosine rule (the
fallback where the ranker cannot run: best cosine and gap below two thresholds) gets its own
thresholds under the same bound, the pair of a 0.01 grid that flags the most infeasible requests;
`--write` stores them beside the ranker's. With `--reranker N`
the cross-encoder's best logit among the first N candidates of the signals' weighted RRF (its
own threshold, chosen under the same bound). The engine's candidate
lists are cached under runs/ranker (once per model). Prints markdown; progress on stderr.

    .venv/bin/python benchmarks/weak_match.py [--model bundled] [--ranker FILE] [--write]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from toolscout.eval.dev_sets import dev_sets
from toolscout.search.confidence import GAP_RANK, CosineRule
from toolscout.search.ranker import RANKER_FILE, LearnedRanker
from toolscout.training.ranker_fit import SIZES, Catalog, Example, extract

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
PER_SIZE = 40  # feasible requests per dev set and catalog size
log = logging.getLogger("weak_match")


def catalogs(bench: Path, seed: int = 0) -> list[Catalog]:
    rng = random.Random(seed)
    sets = dev_sets(bench)
    pool = sorted({t.id: t for s in sets for t in s.dataset.tools}.values(), key=lambda t: t.id)
    out = []
    etom = next(s for s in sets if s.name == "etom_mcp")
    lines = (bench / "etom_mcp" / "queries_infeasible.jsonl").read_text(encoding="utf-8").splitlines()
    infeasible = tuple((json.loads(line)["query"], frozenset()) for line in lines if line.strip())
    for size in SIZES:
        tools = rng.sample(list(etom.dataset.tools), min(size, len(etom.dataset.tools)))
        tools += _fill(rng, pool, {t.id for t in tools}, size - len(tools))
        out.append(Catalog(f"etom_mcp infeasible@{size}", tuple(tools), infeasible))
    for dev in sets:
        own = list(dev.dataset.tools)
        by_id = {t.id: t for t in pool}
        out.append(Catalog(f"{dev.name}@own", tuple(own), tuple((q.text, q.answers) for q in dev.dataset.queries)))
        for size in SIZES:
            queries = [q for q in rng.sample(list(dev.dataset.queries), len(dev.dataset.queries)) if len(q.relevant) <= size]
            taken = 0
            while taken < min(PER_SIZE, len(queries)):
                chosen: dict[str, None] = {}
                requests = []
                for query in queries[taken:]:
                    full = len(chosen) + len(query.answers) > max(1, int(0.6 * size))
                    if requests and (full or taken + len(requests) >= PER_SIZE):
                        break
                    chosen.update(dict.fromkeys(sorted(query.answers)))
                    requests.append((query.text, query.answers))
                taken += len(requests)
                tools = [by_id[t] for t in chosen if t in by_id][:size]
                ids = {t.id for t in tools}
                tools += _fill(rng, own, ids, size - len(tools))
                tools += _fill(rng, pool, ids | {t.id for t in tools}, size - len(tools))
                kept = tuple((text, answers) for text, answers in requests if answers & {t.id for t in tools})
                out.append(Catalog(f"{dev.name}@{size}", tuple(tools), kept))
    return out


def _fill(rng: random.Random, pool: list, taken: set[str], count: int) -> list:
    if count <= 0:
        return []
    free = [t for t in pool if t.id not in taken]
    return rng.sample(free, min(count, len(free)))


def best_probability(ranker: LearnedRanker, example: Example) -> float:
    return ranker.scored(example.candidates)[1]


def cosines(example: Example) -> tuple[float, float]:
    """The best cosine and the gap the cosine rule reads (inf where the catalog is too small to judge)."""
    c = example.candidates
    return (c.best["dense"], c.dense_gap) if c.catalog >= GAP_RANK else (np.inf, np.inf)


def flags(rule: CosineRule, values: np.ndarray) -> np.ndarray:
    return (values[:, 0] < rule.max_cosine) & (values[:, 1] < rule.max_gap)


def best_cosine_rule(infeasible: np.ndarray, feasible: dict[str, np.ndarray], max_false_alarms: float) -> CosineRule:
    """The thresholds (0.01 grid) flagging the most infeasible requests with at most
    `max_false_alarms` of every dev set's feasible ones flagged; ties go to the lower thresholds."""
    chosen, recall = CosineRule(0.0, 0.0), -1.0
    for max_cosine in np.round(np.arange(0.0, 1.0, 0.01), 2):
        for max_gap in np.round(np.arange(0.0, 0.5, 0.01), 2):
            rule = CosineRule(float(max_cosine), float(max_gap))
            if all(flags(rule, values).mean() <= max_false_alarms for values in feasible.values()):
                flagged = flags(rule, infeasible).mean()
                if flagged > recall:
                    chosen, recall = rule, flagged
    return chosen


def highest_threshold(infeasible: np.ndarray, feasible: dict[str, np.ndarray], max_false_alarms: float) -> float:
    """The highest score below which a request is flagged, with at most `max_false_alarms` of every
    dev set's feasible requests flagged."""
    candidates = np.unique(np.concatenate([infeasible, *feasible.values()]))
    allowed = [t for t in candidates if all((p < t).mean() <= max_false_alarms for p in feasible.values())]
    return float(max(allowed)) if allowed else float(candidates.min()) if candidates.size else 0.0


def reranker_best(examples: list[Example], tested: list[Catalog], model: str, depth: int) -> dict[tuple[str, str], float]:
    """The reranker's best logit among each request's first `depth` candidates (weighted-RRF order),
    cached under runs/reranker-scores."""
    from toolscout.index.cross_encoder import load_cross_encoder
    from toolscout.index.model_files import file_digest, resolve_reranker
    from toolscout.search.settings import SearchSettings
    from toolscout.training.ranker_fit import model_digest
    from toolscout.training.reranker_column import ScoreCache, documents_of, score_heads

    location = resolve_reranker("bundled")
    assert location is not None and location.onnx_file is not None
    cache = ScoreCache.of(ROOT / "runs" / "reranker-scores", model_digest(model), file_digest(location.onnx_file), "weak")
    scorer = load_cross_encoder(location, work_dir=SearchSettings().resolved_cache_dir)
    tools = {t.id: t for c in tested for t in c.tools}
    score_heads(scorer.logits, examples, documents_of(list(tools.values())), cache, depth, "weak-match requests")
    return {key: float(np.max(logits[:depth])) for key, (_, logits) in cache.rows.items() if len(logits)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--ranker", type=Path, help=f"ranker file (default: {RANKER_FILE} beside the model)")
    parser.add_argument("--max-false-alarms", type=float, default=0.01)
    parser.add_argument("--write", action="store_true", help="store the chosen threshold in the ranker file")
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "ranker")
    parser.add_argument("--reranker", type=int, default=0, metavar="N",
                        help="also measure the reranker's best logit among the first N candidates as the signal")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    path = args.ranker or _beside_model(args.model)
    ranker = LearnedRanker.from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
    tested = catalogs(args.bench)
    examples = extract(args.model, tested, args.cache, log.info)
    logits = reranker_best(examples, tested, args.model, args.reranker) if args.reranker else {}
    # dev set -> (size, probability, (best cosine, gap), reranker's best logit)
    groups: dict[str, list[tuple[str, float, tuple[float, float], float]]] = defaultdict(list)
    for example in examples:
        name, size = example.catalog.rsplit("@", 1)
        groups[name].append((size, best_probability(ranker, example), cosines(example),
                             logits.get((example.catalog, example.text), np.inf)))

    def split(column: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        infeasible = np.array([r[column] for r in groups["etom_mcp infeasible"]])
        return infeasible, {n: np.array([r[column] for r in rows]) for n, rows in groups.items() if n != "etom_mcp infeasible"}

    threshold = highest_threshold(*split(1), args.max_false_alarms)
    chosen_rule = best_cosine_rule(*split(2), args.max_false_alarms)
    print(f"Learned ranker {path.name} ({args.model}); threshold chosen: best probability < {threshold:.4f} "
          f"(false alarms <= {args.max_false_alarms:.0%} on every dev set; stored: {ranker.weak_below})\n")
    print(f"Cosine rule (where the ranker cannot run), same bound: best cosine < {chosen_rule.max_cosine:.2f} and gap < "
          f"{chosen_rule.max_gap:.2f} (stored: {ranker.cosine_rule})\n")
    rules = [("ranker", lambda r: r[1] < threshold),
             ("cosine rule", lambda r: bool(flags(chosen_rule, np.array([r[2]]))[0]))]
    if ranker.cosine_rule is not None and ranker.cosine_rule != chosen_rule:
        rules.append(("cosine rule (stored)", lambda r: bool(flags(ranker.cosine_rule, np.array([r[2]]))[0])))
    if args.reranker:
        below = highest_threshold(*split(3), args.max_false_alarms)
        print(f"Reranker: best logit among the first {args.reranker} < {below:.2f} (same bound)\n")
        rules.append((f"reranker, first {args.reranker}", lambda r: r[3] < below))
    sizes = ["own", *map(str, SIZES)]
    print("| requests | rule | " + " | ".join(f"{s} tools" if s != "own" else "own catalog" for s in sizes) + " | all |")
    print("|---|---|" + "---:|" * (len(sizes) + 1))
    for name, rows in groups.items():
        label = "recall" if name == "etom_mcp infeasible" else "false alarms"
        for rule, flagged in rules:
            cells = []
            for size in sizes:
                chosen = [r for r in rows if r[0] == size]
                cells.append(f"{np.mean([flagged(r) for r in chosen]):.3f} ({len(chosen)})" if chosen else "-")
            total = np.mean([flagged(r) for r in rows])
            print(f"| {name} ({label}) | {rule} | " + " | ".join(cells) + f" | **{total:.3f}** |")
    if args.write:
        dataclasses.replace(ranker, weak_below=round(threshold, 4), cosine_rule=chosen_rule).write(path)
        log.info("stored weak_below=%.4f and %s in %s", threshold, chosen_rule, path)
    return 0


def _beside_model(model: str) -> Path:
    from toolscout.index.model_files import resolve_model

    location = resolve_model(model)
    assert location is not None
    return location.folder / RANKER_FILE


if __name__ == "__main__":
    sys.exit(main())
