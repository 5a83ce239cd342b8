"""The confidence of answers the multilingual vote reached (`search.multilingual.VoteCalibration`).

The engine's confidence was fitted without the vote: where the vote puts another tool first, the
engine's features describe a tool that no longer stands first, and the confidence comes out too
low (docs/confidence.md, "With the multilingual vote"). This fits a second small model for those
answers, on what the vote saw of requests it was never fitted on: the requests of the commands
held out of the request map's trial fit (`toolscout.training.multilingual_map` keeps that map and
their names in its run folder), searched as the engine searches them.

Catalogs are drawn from the same training functions (one document each): each holds some of the
held-out commands (their requests are served) and filler from the rest; requests of held-out
commands left out of it are unserved. Each request is searched by the engine without the vote,
then the trial map's vote is blended in as `MultilingualVote.blend` does, and labelled by whether
the first tool that stands serves it. A logistic model over `VOTE_FEATURES` (scikit-learn) gives
the confidence; its weak-match threshold is the highest below which at most 5% of the served
requests fall, as for the engine's. Written into the map's file, beside the map.

    python -m toolscout.training.multilingual_confidence --train ../shared/train \
        --run ~/.cache/toolscout/runs/multilingual-map [--write]

Needs `toolscout[train,multilingual]` and the map's run folder (vectors, trial map, held-out names).
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
from toolscout.index.multilingual import english_probability, map_about, request_map
from toolscout.index.text import dense_document
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.multilingual import ENGLISH_AT_MOST, VOTE_FEATURES, VoteCalibration, vote_on
from toolscout.search.pipeline import EXACT_NAME
from toolscout.training.confidence_fit import expected_calibration_error
from toolscout.training.data import Request, TrainingData, load_training_folder
from toolscout.training.multilingual_map import (
    HELD_OUT_FILE, MULTILINGUAL_SOURCES, SHIPPED_MAP, TRIAL_FILE, MapPlan, first_tools, requests_not_in_english,
    stored_vectors, write_map,
)

__all__ = ["Searched", "fit_vote_calibration", "main"]

log = logging.getLogger(__name__)

# Catalog sizes drawn, as an agent's registries come: a few servers to a large developer catalog.
CATALOG_SIZES = (50, 200, 1000, 100, 500, 1000, 30, 300) * 3
SERVED_PER_CATALOG = 40
# The engine's order read for the blend: more than search_tools returns, as the engine blends its
# whole candidate list.
ORDER_DEPTH = 30


@dataclass(frozen=True)
class Searched:
    """One request searched on one catalog: what the vote's confidence reads, and the label."""

    catalog: int
    features: dict[str, float]
    first_serves: bool
    served: bool


def _catalogs(data: TrainingData, held: Sequence[str], names: Sequence[str], requests: Sequence[Request],
              seed: int) -> list[tuple[list[str], list[tuple[Request, bool]]]]:
    """(functions, [(request, served)]) per catalog: served requests of the held-out functions in
    it, and as many of held-out functions not in it."""
    rng = random.Random(seed)
    by_need: dict[str, list[Request]] = {}
    for request in requests:
        by_need.setdefault(data.need_of(request.tools[0]), []).append(request)
    held_set = set(held)
    others = [n for n in names if n not in held_set]
    out = []
    for size in CATALOG_SIZES:
        inside = rng.sample(list(held), min(SERVED_PER_CATALOG, size // 3 or 1))
        functions = inside + rng.sample(others, size - len(inside))
        chosen = set(inside)
        outside = [n for n in held if n not in chosen]
        served = [(r, True) for n in inside for r in by_need.get(n, [])[:3]]
        unserved = [(r, False) for n in rng.sample(outside, len(inside)) for r in by_need.get(n, [])[:3]]
        out.append((functions, served + unserved))
    return out


def search_catalogs(data: TrainingData, run: Path, seed: int = 0) -> list[Searched]:
    """Every catalog's requests searched without the vote, the trial map's vote blended in."""
    plan = MapPlan()
    held = json.loads((run / HELD_OUT_FILE).read_text())
    trial = np.load(run / TRIAL_FILE)
    query_vectors, document_vectors = stored_vectors(run, "query"), stored_vectors(run, "passage")
    first_tool = first_tools(data)
    requests = [r for r in requests_not_in_english(data, plan.per_need, plan.seed)
                if r.text in query_vectors and english_probability(r.text) <= ENGLISH_AT_MOST]
    # The functions the map's fit embedded: those with requests not in English.
    names = [n for n in sorted(first_tool) if dense_document(data.tools[first_tool[n]]) in document_vectors]
    settings = SearchSettings(multilingual="off")
    rows: list[Searched] = []
    for number, (functions, asked) in enumerate(_catalogs(data, held, names, requests, seed)):
        tools: list[ToolRecord] = [data.tools[first_tool[n]] for n in functions]
        engine = ToolSearch(settings)
        engine.index(tools)
        engine.complete()
        documents = np.stack([document_vectors[dense_document(t)] for t in tools])
        position = {t.id: i for i, t in enumerate(tools)}
        for request, served in asked:
            row = _searched(engine, tools, position, documents, trial @ query_vectors[request.text], request, data,
                            settings)
            if row is not None:
                rows.append(Searched(number, row[0], row[1], served))
        log.info("catalog %d of %d (%d tools): %d requests", number + 1, len(CATALOG_SIZES), len(tools), len(asked))
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


def _checked(rows: Sequence[Searched]) -> dict:
    """Calibration error of fits that left each catalog out, measured on it (all rows pooled)."""
    confidences, labels = [], []
    for left in sorted({row.catalog for row in rows}):
        fitted = fit_vote_calibration([row for row in rows if row.catalog != left])
        for row in rows:
            if row.catalog == left:
                confidences.append(fitted.confidence(row.features))
                labels.append(row.first_serves)
    return {"rows": len(rows), "first_serves": round(float(np.mean(labels)), 4),
            "ece_catalog_left_out": round(expected_calibration_error(np.array(confidences), np.array(labels, float)), 4)}


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
    data = load_training_folder(args.train, MULTILINGUAL_SOURCES)
    rows = search_catalogs(data, args.run)
    calibration = fit_vote_calibration(rows)
    checked = _checked(rows)
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
