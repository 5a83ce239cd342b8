"""Fitting the calibrated confidence (`toolscout.search.calibrated`) on training requests, never on dev sets.

    python -m toolscout.training.confidence_fit --train ../shared/train [--model bundled] \
        [--ranker FILE] [--out FILE]

It reads the ranker file beside the model (or `--ranker`) and writes `confidence.json` beside it:
run it again whenever the model or the ranker is refitted (a confidence fitted with another ranker
file is not used). It searches the learned ranker's own training catalogs (5 to 2,000 tools per
licensed source, drawn as `ranker_fit` draws them, so the ranker's fit has embedded their tools for
the same model), each with up to `--per-catalog` requests it serves and every request it was drawn
with whose right tools it lacks (nothing in it serves them), plus the clinc150 catalog with
CLINC150's out-of-scope requests (`unserved.jsonl`) and as many of its served ones. Every request
is searched by the real engine (`ToolSearch.search`, limit 5, as `search_tools` does) and labelled
by whether its first result serves it. A logistic model over `calibrated.FEATURES` is fitted on
all of them, served and unserved requests weighing the same, and a sigmoid on its scores of
held-out sources (Platt scaling: scikit-learn's CalibratedClassifierCV, folds by source); the
weak-match threshold is the highest confidence below which at most `--max-false-alarms` of the
served training requests fall. The keyword-only confidence (`calibrated.KEYWORD_FEATURES`, what a search has while the dense
signal is not ready) is fitted the same way on the same requests searched with the model off, and
written as `keyword_confidence.json` beside it (`--keyword-only` fits only that one). Minutes on two cores where the ranker's fit embedded the catalogs
(else the first run embeds them: about half an hour); the searched requests are kept under
`--cache`. Progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.search.calibrated import (
    CONFIDENCE_FILE,
    FEATURES,
    KEYWORD_CONFIDENCE_FILE,
    KEYWORD_FEATURES,
    Calibration,
    ranker_digest,
)
from toolscout.training.ranker_fit import RANKER_SOURCES, TRAIN_SIZES, Catalog, _key, model_digest, sample_catalogs

__all__ = [
    "Row",
    "expected_calibration_error",
    "fit",
    "ranker_beside_model",
    "replay",
    "recall_at_false_alarms",
    "training_catalogs",
]

log = logging.getLogger("toolscout.confidence_fit")

UNSERVED_FILE = "unserved.jsonl"


@dataclass(frozen=True)
class Row:
    """One searched request: what the confidence read, and whether the first result served it."""

    catalog: str
    text: str
    features: dict[str, float]
    first_serves: bool
    feasible: bool  # some tool of the catalog serves it
    confidence: float | None = None  # the calibrated confidence the engine answered with, if any


# The right tools dropped at once are at most this share of a catalog (`without_right_tools`).
DROP_SHARE = 0.1


def without_right_tools(
    prefix: str, tools: Sequence[ToolRecord], requests: Sequence[tuple[str, frozenset[str]]], seed: int = 0
) -> list[Catalog]:
    """Served requests made unserved: grouped so that each group's right tools are at most
    `DROP_SHARE` of the catalog, each group on the catalog without them (named prefix + "drop" +
    its number). What stays is the rest of the catalog, siblings of the dropped tools included:
    the hard case, a near twin of the right tool still there."""
    cap = max(1, int(DROP_SHARE * len(tools)))
    left = list(requests)
    random.Random(seed).shuffle(left)
    out = []
    while left:
        dropped: set[str] = set()
        for _, answers in left:
            if not dropped or len(dropped | answers) <= cap:
                dropped |= answers
        inside = [r for r in left if r[1] <= dropped]
        left = [r for r in left if not r[1] <= dropped]
        kept = tuple(t for t in tools if t.id not in dropped)
        out.append(Catalog(f"{prefix}drop{len(out) + 1}", kept, tuple((text, frozenset()) for text, _ in inside)))
    return out


def training_catalogs(folder: Path, per_catalog: int, unserved: int, seed: int = 0, *, dropped: bool = False) -> list[Catalog]:
    """The learned ranker's training catalogs, drawn as `ranker_fit` draws them (so a model's ranker
    fit has embedded their tools already), each with up to `per_catalog` of its served requests and
    all it does not serve (their tools left out); and the clinc150 catalog with up to `unserved` of
    CLINC150's out-of-scope requests and as many served ones. `dropped`: besides, each catalog's
    served requests made unserved by dropping their right tools (`without_right_tools`)."""
    catalogs = [
        dataclasses.replace(c, requests=tuple(r for r in c.requests if r[1])[:per_catalog] + tuple(r for r in c.requests if not r[1]))
        for c in sample_catalogs(folder, RANKER_SOURCES, TRAIN_SIZES, seed=seed, several=0)
    ]
    if dropped:
        catalogs += [d for c in list(catalogs)
                     for d in without_right_tools(f"{c.name}~", c.tools, [r for r in c.requests if r[1]], seed)]
    from toolscout.training.data import load_training_folder

    clinc = load_training_folder(folder, ["clinc150"], english_only=True)
    rng = random.Random(seed)
    rows = [json.loads(line) for line in (folder / UNSERVED_FILE).read_text(encoding="utf-8").splitlines() if line.strip()]
    out_of_scope = rng.sample([r["query"] for r in rows if r.get("catalog") == "clinc150"], k=min(unserved, len(rows)))
    served = rng.sample(list(clinc.requests), k=min(len(out_of_scope), len(clinc.requests)))
    requests = tuple((r.text, frozenset(r.tools)) for r in served) + tuple((q, frozenset()) for q in out_of_scope)
    tools = tuple(sorted(clinc.tools.values(), key=lambda t: t.id))
    return [*catalogs, Catalog("clinc150_oos@own", tools, requests)]


def replay(
    catalogs: Sequence[Catalog], model: str, ranker: Path, cache: Path | None = None,
    progress: Callable[[str], None] | None = None, *, keyword_only: bool = False,
) -> list[Row]:
    """Every request of every catalog searched as `search_tools` searches it (limit 5), with the
    features its confidence read; requests the learned ranker could not judge are left out. The
    features depend on the model and the ranker only: they are kept under `cache` for those two.
    `keyword_only`: searched with the model off, with what the keyword-only confidence reads."""
    path = None
    if cache is not None:
        what = "keyword-only" if keyword_only else f"{model_digest(model)} {ranker_digest(ranker)}"
        key = hashlib.sha256(f"{_key(catalogs)} {what}".encode()).hexdigest()
        path = cache / f"{key[:24]}.jsonl"
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            return [Row(**{**json.loads(line), "confidence": None}) for line in lines if line.strip()]
    rows = _searched(catalogs, "none" if keyword_only else model, ranker, progress)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(dataclasses.asdict(row)) + "\n" for row in rows), encoding="utf-8")
    return rows


def _searched(
    catalogs: Sequence[Catalog], model: str, ranker: Path, progress: Callable[[str], None] | None
) -> list[Row]:
    from toolscout.search import SearchSettings, ToolSearch

    # The engine as the wheel alone answers: the fit does not depend on which extras are installed.
    settings = SearchSettings(model=model, ranker_file=ranker, multilingual="off")
    rows: list[Row] = []
    for number, catalog in enumerate(catalogs, start=1):
        engine = ToolSearch(settings)
        engine.index(catalog.tools)
        engine.complete()
        for text, answers in catalog.requests:
            response = engine.search(text, limit=5)
            match = response.match
            if not response.hits or match is None or not match.features:
                continue
            rows.append(Row(catalog.name, text, dict(match.features), response.hits[0].tool.id in answers,
                            bool(answers), match.confidence))
        if progress is not None:
            progress(f"{number}/{len(catalogs)} catalogs ({catalog.name}, {len(catalog.tools)} tools): {len(rows)} requests")
    return rows


def design(rows: Sequence[Row], features: Sequence[str] = FEATURES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature matrix, labels, and weights that give served and unserved requests equal say."""
    matrix = np.array([[row.features[name] for name in features] for row in rows], dtype=np.float64)
    labels = np.array([row.first_serves for row in rows])
    feasible = np.array([row.feasible for row in rows])
    weights = np.where(feasible, 0.5 / max(feasible.sum(), 1), 0.5 / max((~feasible).sum(), 1)) * len(rows)
    return matrix, labels, weights


def fit(rows: Sequence[Row], *, c: float = 1.0, max_false_alarms: float = 0.05, folds: int = 5,
        about: dict | None = None, ranker_sha256: str | None = None, features: Sequence[str] = FEATURES) -> Calibration:
    """The logistic model on every row, its sigmoid on held-out sources' scores, and the
    weak-match threshold (the highest confidence with at most `max_false_alarms` of the served
    rows below it)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    matrix, labels, weights = design(rows, features)
    mean, scale = matrix.mean(axis=0), matrix.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    x = (matrix - mean) / scale
    sources = np.array([row.catalog.split("@")[0] for row in rows])
    splits = list(GroupKFold(n_splits=folds).split(x, labels, sources))
    model = CalibratedClassifierCV(LogisticRegression(C=c, max_iter=5000), method="sigmoid", cv=splits,
                                   ensemble=False).fit(x, labels, sample_weight=weights)
    calibrated = model.calibrated_classifiers_[0]
    linear, sigmoid = calibrated.estimator, calibrated.calibrators[0]
    feasible = np.array([row.feasible for row in rows])
    reference_rows = random.Random(0).sample(range(len(rows)), k=min(8, len(rows)))
    reference = model.predict_proba(x[reference_rows])[:, 1]
    calibration = Calibration(
        tuple(features), mean, scale, linear.coef_[0].astype(np.float64), float(linear.intercept_[0]),
        float(sigmoid.a_), float(sigmoid.b_),
        ranker_sha256=ranker_sha256, about=about or {},
        reference=tuple((rows[i].features, float(p)) for i, p in zip(reference_rows, reference)),
    )
    confidences = np.array([calibration.confidence(row.features) for row in rows])
    threshold = weak_threshold(confidences[feasible], max_false_alarms)
    return dataclasses.replace(calibration, weak_below=threshold)


def weak_threshold(served: np.ndarray, max_false_alarms: float) -> float:
    """The highest confidence below which at most `max_false_alarms` of `served` fall."""
    values = np.unique(served)
    allowed = [float(t) for t in values if (served < t).mean() <= max_false_alarms]
    return max(allowed) if allowed else 0.0


def expected_calibration_error(confidences: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over `bins` equal-width bins: each bin's |mean confidence - share
    right|, weighted by its share of the answers."""
    confidences = np.asarray(confidences, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    which = np.minimum((confidences * bins).astype(int), bins - 1)
    error = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            error += inside.mean() * abs(confidences[inside].mean() - labels[inside].mean())
    return float(error)


def recall_at_false_alarms(served: np.ndarray, unserved: np.ndarray, false_alarms: float) -> float:
    """Share of `unserved` confidences below the highest threshold that leaves at most
    `false_alarms` of `served` below it."""
    threshold = weak_threshold(np.asarray(served), false_alarms)
    return float((np.asarray(unserved) < threshold).mean()) if len(unserved) else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, required=True, help="training folder (tools.jsonl, pairs.jsonl, unserved.jsonl)")
    parser.add_argument("--model", default="bundled", help="embedding model the ranker was fitted for")
    parser.add_argument("--ranker", type=Path, help="ranker file (default: ranker.json beside the model)")
    parser.add_argument("--out", type=Path, help=f"where to write it (default: {CONFIDENCE_FILE} beside the ranker; "
                                                 "the engine reads it only there)")
    parser.add_argument("--per-catalog", type=int, default=30, help="served (and as many unserved) requests per catalog")
    parser.add_argument("--unserved", type=int, default=400, help="CLINC150 out-of-scope requests (and as many served)")
    parser.add_argument("--max-false-alarms", type=float, default=0.05,
                        help="share of served training requests the weak-match notice may fire on")
    parser.add_argument("--c", type=float, default=1.0, help="inverse penalty of the logistic model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("runs/confidence"), help="searched-request cache folder")
    parser.add_argument("--keyword-only", action="store_true", help=f"fit only {KEYWORD_CONFIDENCE_FILE}")
    parser.add_argument("--with-dropped", action="store_true",
                        help="also fit on served requests made unserved by dropping their right tools (not shipped: "
                             "see docs/confidence.md)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    ranker = args.ranker or ranker_beside_model(args.model)
    catalogs = training_catalogs(args.train, args.per_catalog, args.unserved, args.seed, dropped=args.with_dropped)
    log.info("%d catalogs, %d requests", len(catalogs), sum(len(c.requests) for c in catalogs))
    out = args.out or ranker.with_name(CONFIDENCE_FILE)
    for keyword_only in (True,) if args.keyword_only else (False, True):
        rows = replay(catalogs, args.model, ranker, args.cache, log.info, keyword_only=keyword_only)
        calibration = fit(rows, c=args.c, max_false_alarms=args.max_false_alarms,
                          about=_about(args, rows, len(catalogs), keyword_only),
                          ranker_sha256=None if keyword_only else ranker_digest(ranker),
                          features=KEYWORD_FEATURES if keyword_only else FEATURES)
        confidences = np.array([calibration.confidence(row.features) for row in rows])
        labels = np.array([row.first_serves for row in rows])
        log.info("training%s: ECE %.3f, weak below %.3f", " (keyword only)" if keyword_only else "",
                 expected_calibration_error(confidences, labels), calibration.weak_below)
        written = out.with_name(KEYWORD_CONFIDENCE_FILE) if keyword_only else out
        written.parent.mkdir(parents=True, exist_ok=True)
        calibration.write(written)
        log.info("wrote %s", written)
    return 0


def _about(args: argparse.Namespace, rows: Sequence[Row], catalogs: int, keyword_only: bool) -> dict:
    """Provenance written into the fitted file (shown, never read)."""
    feasible = sum(row.feasible for row in rows)
    return {
        "trained_on": f"{args.train.name}: {len(rows)} requests ({feasible} served, {len(rows) - feasible} not) on "
                      f"{catalogs} catalogs of {min(TRAIN_SIZES)}-{max(TRAIN_SIZES)} tools, sources {', '.join(RANKER_SOURCES)}, "
                      f"and CLINC150's out-of-scope requests on the clinc150 catalog"
                      f"{', and served ones with their right tools dropped' if args.with_dropped else ''}; seed {args.seed}",
        "label": "the first result of search (limit 5) serves the request"
                 + (", searched with the embedding model off (keyword signals only)" if keyword_only else ""),
        "calibrated_on": "held-out sources' scores (5 folds), served and unserved requests weighing the same",
        "weak_below": f"at most {args.max_false_alarms:g} of the served training requests below it",
        "c": args.c,
    }


def ranker_beside_model(model: str) -> Path:
    """The ranker file beside the embedding model `model` names."""
    from toolscout.index.model_files import resolve_model
    from toolscout.search.ranker import RANKER_FILE

    location = resolve_model(model)
    assert location is not None, "the calibrated confidence needs an embedding model and its ranker"
    return location.folder / RANKER_FILE


if __name__ == "__main__":
    sys.exit(main())
