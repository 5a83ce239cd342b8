"""The confidence of answers the multilingual vote reached (`search.multilingual.VoteCalibration`).

The engine's confidence was fitted without the vote: where the vote puts another tool first, the
engine's features describe a tool that no longer stands first, and the confidence comes out too
low (docs/confidence.md, "With the multilingual vote"). This fits a second small model for those
answers, on what the vote saw of requests it was never fitted on: the requests of the commands
held out of the request map's trial fit (`toolscout.training.multilingual_map` keeps that map and
their names in its run folder), searched as the engine searches them.

Two kinds of catalogs, one document per function. Developer catalogs hold some of the held-out
commands (their requests are served) and filler from the map's other functions; requests of
held-out commands left out of it are unserved. Everyday catalogs are an assistant's: the everyday
functions with requests in other languages (the Home Assistant intents), in two folds, each held
out of a map fitted without it, among the other everyday functions (`EVERYDAY_SOURCES`). Without
them the fit saw almost only command-line catalogs, where the vote's margin over its second means
more than among an assistant's near-twins. Each request is searched by the engine without the
vote, then the catalog's map's vote is blended in as `MultilingualVote.blend` does, and labelled
by whether the first tool that stands serves it. A logistic model over `VOTE_FEATURES` (scikit-learn) gives
the confidence; its weak-match threshold is the highest below which at most 5% of the served
requests fall, as for the engine's. Written into the map's file, beside the map.

    python -m toolscout.training.multilingual_confidence --train ../shared/train \
        --run ~/.cache/toolscout/runs/multilingual-map [--write]

Needs `toolscout[train,multilingual]` and the map's run folder (vectors, trial map, held-out names);
the everyday requests and documents the map's fit did not embed are embedded into it (about a minute).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.index.multilingual import MultilingualEncoder, english_probability, map_about, request_map
from toolscout.index.text import dense_document
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.multilingual import ENGLISH_AT_MOST, VOTE_FEATURES, VoteCalibration, vote_on
from toolscout.search.pipeline import EXACT_NAME
from toolscout.training.confidence_fit import expected_calibration_error
from toolscout.training.data import EVERYDAY_SOURCES, Request, TrainingData, load_training_folder
from toolscout.training.multilingual_map import (
    HELD_OUT_FILE, MULTILINGUAL_SOURCES, SHIPPED_MAP, TRIAL_FILE, MapPlan, VectorCache, first_tools, fit_without,
    requests_not_in_english, write_map,
)

__all__ = [
    "Drawn", "Searched", "developer_catalogs", "draw_catalog", "everyday_catalogs", "fit_vote_calibration", "main",
    "search_catalogs",
]

log = logging.getLogger(__name__)

# Catalog sizes drawn, as an agent's registries come: a few servers to a large developer catalog.
CATALOG_SIZES = (50, 200, 1000, 100, 500, 1000, 30, 300) * 3
SERVED_PER_CATALOG = 40
# Everyday catalogs (a home or phone assistant's functions) are smaller; the everyday functions
# with requests in other languages are held out of a map of their own, fold by fold.
EVERYDAY_CATALOG_SIZES = (30, 60, 120, 250) * 2
EVERYDAY_FOLDS = 2
# Requests searched per function and catalog: every function some, none most of the rows (an
# assistant's few intents have many requests each, a developer catalog's many commands a few).
REQUESTS_PER_FUNCTION = {"developer": 3, "everyday": 8}
# The engine's order read for the blend: more than search_tools returns, as the engine blends its
# whole candidate list.
ORDER_DEPTH = 30


@dataclass(frozen=True)
class Searched:
    """One request searched on one catalog: what the vote's confidence reads, and the label."""

    catalog: int
    kind: str
    features: dict[str, float]
    first_serves: bool
    served: bool


@dataclass(frozen=True)
class Drawn:
    """One catalog of the fit: its functions, its requests (served or not), and the request map
    that never saw them."""

    kind: str
    functions: list[str]
    asked: list[tuple[Request, bool]]
    trial: np.ndarray


def draw_catalog(kind: str, rng: random.Random, held: Sequence[str], others: Sequence[str],
                 by_need: dict[str, list[Request]], size: int, served_at_most: int, trial: np.ndarray) -> Drawn:
    """Some `held` functions in the catalog (their requests are served), filler from `others`,
    and as many held functions left out (their requests are unserved)."""
    inside = rng.sample(list(held), min(served_at_most, size // 3 or 1, len(held) // 2))
    functions = inside + rng.sample(list(others), min(size - len(inside), len(others)))
    chosen = set(inside)
    outside = rng.sample([n for n in held if n not in chosen], len(inside))
    per_function = REQUESTS_PER_FUNCTION[kind]
    served = [(r, True) for n in inside for r in by_need.get(n, [])[:per_function]]
    unserved = [(r, False) for n in outside for r in by_need.get(n, [])[:per_function]]
    return Drawn(kind, functions, served + unserved, trial)


def _by_need(data: TrainingData, requests: Sequence[Request], seed: int) -> dict[str, list[Request]]:
    by_need: dict[str, list[Request]] = {}
    for request in requests:
        by_need.setdefault(data.need_of(request.tools[0]), []).append(request)
    for need in sorted(by_need):
        random.Random(f"{seed}:{need}").shuffle(by_need[need])
    return by_need


def developer_catalogs(data: TrainingData, run: Path, taught: Sequence[Request], names: Sequence[str],
                       seed: int) -> list[Drawn]:
    """Catalogs of the map's functions (`names`), served requests those of the commands held out of
    its trial fit (among `taught`, the requests the map's fit draws)."""
    held = json.loads((run / HELD_OUT_FILE).read_text())
    trial = np.load(run / TRIAL_FILE)
    held_set = set(held)
    requests = [r for r in taught
                if data.need_of(r.tools[0]) in held_set and english_probability(r.text) <= ENGLISH_AT_MOST]
    by_need = _by_need(data, requests, seed)
    others = [n for n in names if n not in held_set]
    rng = random.Random(seed)
    return [draw_catalog("developer", rng, held, others, by_need, size, SERVED_PER_CATALOG, trial)
            for size in CATALOG_SIZES]


def everyday_catalogs(data: TrainingData, cache: VectorCache, taught: Sequence[Request], names: Sequence[str],
                      first_tool: dict[str, str], seed: int) -> list[Drawn]:
    """Catalogs of everyday functions (`EVERYDAY_SOURCES`): each fold of those with requests in
    other languages is held out of a map fitted without it, and its requests in other languages
    (all of them, not only those the map's fit draws) are served or unserved on catalogs filled
    from the other everyday functions."""
    plan = MapPlan()
    needs = [data.need_of(r.tools[0]) for r in taught]
    queries = cache.vectors("query", [r.text for r in taught], log.info)
    documents = cache.vectors("passage", [dense_document(data.tools[first_tool[n]]) for n in names], log.info)
    asked = [r for r in data.requests if r.source in EVERYDAY_SOURCES and r.lang != "en"
             and english_probability(r.text) <= ENGLISH_AT_MOST]
    intents = sorted({data.need_of(r.tools[0]) for r in asked})
    everyday = sorted({data.need_of(t) for t, source in data.tool_source.items() if source in EVERYDAY_SOURCES})
    by_need = _by_need(data, asked, seed)
    rng = random.Random(seed)
    rng.shuffle(intents)
    out = []
    for fold in range(EVERYDAY_FOLDS):
        held = intents[fold::EVERYDAY_FOLDS]
        held_set = set(held)
        trial = fit_without(held_set, queries, needs, documents, plan, log.info)
        others = [n for n in everyday if n not in held_set]
        out += [draw_catalog("everyday", rng, held, others, by_need, size, len(held), trial)
                for size in EVERYDAY_CATALOG_SIZES]
    return out


def search_catalogs(data: TrainingData, run: Path, seed: int = 0) -> list[Searched]:
    """Every catalog's requests searched without the vote, the catalog's own trial map's vote
    blended in: developer catalogs, then everyday ones."""
    plan = MapPlan()
    cache = VectorCache(run, MultilingualEncoder(mapped=False))
    first_tool = first_tools(data)
    taught = requests_not_in_english(data, plan.per_need, plan.seed)
    # The functions the map's fit embedded: those with requests not in English.
    names = sorted({data.need_of(r.tools[0]) for r in taught})
    catalogs = (developer_catalogs(data, run, taught, names, seed)
                + everyday_catalogs(data, cache, taught, names, first_tool, seed))
    settings = SearchSettings(multilingual="off")
    rows: list[Searched] = []
    for number, drawn in enumerate(catalogs):
        tools: list[ToolRecord] = [data.tools[first_tool[n]] for n in drawn.functions]
        engine = ToolSearch(settings)
        engine.index(tools)
        engine.complete()
        documents = cache.vectors("passage", [dense_document(t) for t in tools], log.info)
        queries = cache.vectors("query", [r.text for r, _ in drawn.asked], log.info)
        position = {t.id: i for i, t in enumerate(tools)}
        for (request, served), vector in zip(drawn.asked, queries):
            row = _searched(engine, tools, position, documents, drawn.trial @ vector, request, data, settings)
            if row is not None:
                rows.append(Searched(number, drawn.kind, row[0], row[1], served))
        log.info("catalog %d of %d (%d tools): %d requests", number + 1, len(catalogs), len(tools), len(drawn.asked))
    return rows


def _searched(engine: ToolSearch, tools: Sequence[ToolRecord], position: dict[str, int], documents: np.ndarray,
              mapped: np.ndarray, request: Request, data: TrainingData,
              settings: SearchSettings) -> tuple[dict[str, float], bool] | None:
    response = engine.search(request.text, limit=ORDER_DEPTH)
    if not response.hits or response.match is None or response.match.confidence is None:
        return None
    order = [position[h.tool.id] for h in response.hits]
    scores = {position[h.tool.id]: h.score for h in response.hits}
    pinned = [position[h.tool.id] for h in response.hits if EXACT_NAME in h.ranks]
    cosines = documents @ (mapped / np.linalg.norm(mapped))
    _, _, voted = vote_on(order, scores, cosines, None, ORDER_DEPTH, pinned, settings.multilingual_weight, settings.rrf_k)
    return voted.features(response.match.confidence), data.serves(request, tools[voted.first].id)


def fit_vote_calibration(rows: Sequence[Searched], max_false_alarms: float = 0.05) -> VoteCalibration:
    from sklearn.linear_model import LogisticRegression

    x = np.array([[row.features[name] for name in VOTE_FEATURES] for row in rows])
    y = np.array([row.first_serves for row in rows])
    means, scales = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=1.0, max_iter=1000).fit((x - means) / scales, y)
    calibration = VoteCalibration(tuple(means), tuple(scales), tuple(model.coef_[0]), float(model.intercept_[0]), 0.0)
    served = np.sort([calibration.confidence(row.features) for row in rows if row.served])
    weak_below = float(served[int(len(served) * max_false_alarms)]) if len(served) else 0.0
    return VoteCalibration(calibration.means, calibration.scales, calibration.coefficients, calibration.intercept, weak_below)


def _checked(rows: Sequence[Searched], weak_below: float) -> dict:
    """Calibration error of fits that left each catalog out, measured on it: all rows pooled, and
    per kind of catalog; and the share of each kind's unserved requests the notice fires on at
    `weak_below` (the fit on every row's)."""
    confidences, labels, kinds, served = [], [], [], []
    for left in sorted({row.catalog for row in rows}):
        fitted = fit_vote_calibration([row for row in rows if row.catalog != left])
        for row in rows:
            if row.catalog == left:
                confidences.append(fitted.confidence(row.features))
                labels.append(row.first_serves)
                kinds.append(row.kind)
                served.append(row.served)
    c, y, k, s = np.array(confidences), np.array(labels, float), np.array(kinds), np.array(served)
    checked = {"rows": len(rows), "first_serves": round(float(y.mean()), 4),
               "ece_catalog_left_out": round(expected_calibration_error(c, y), 4)}
    for kind in sorted(set(kinds)):
        at = k == kind
        checked[kind] = {"rows": int(at.sum()), "ece": round(expected_calibration_error(c[at], y[at]), 4),
                         "weak_on_served": round(float((c[at & s] < weak_below).mean()), 3),
                         "weak_on_unserved": round(float((c[at & ~s] < weak_below).mean()), 3)}
    return checked


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, required=True, help="training folder (tools.jsonl, pairs.jsonl)")
    parser.add_argument("--run", type=Path, required=True, help="the request map's run folder")
    parser.add_argument("--write", action="store_true", help="write the fit into the shipped map's file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    if not (args.run / TRIAL_FILE).is_file():
        parser.error(f"{args.run} has no {TRIAL_FILE}: run python -m toolscout.training.multilingual_map --run {args.run} first")
    data = load_training_folder(args.train, tuple(dict.fromkeys(MULTILINGUAL_SOURCES + EVERYDAY_SOURCES)))
    rows = search_catalogs(data, args.run)
    calibration = fit_vote_calibration(rows)
    checked = _checked(rows, calibration.weak_below)
    log.info("vote confidence: %s, weak below %.3f", checked, calibration.weak_below)
    if args.write:
        weight, about = request_map(), map_about()
        if weight is None or about is None:
            parser.error(f"no usable map at {SHIPPED_MAP}")
        write_map(weight, {**about, "confidence": calibration.as_json(), "confidence_fit": checked})
        log.info("wrote %s", SHIPPED_MAP)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
