"""Signal ablation: each signal alone, the lexical signals fused, and the full configuration.

Single-signal rows run without the exact-name fast path (it is not a signal); the fused rows keep
the configuration's own setting.

Which signals take part is read from the engine itself (the signals its answer reports), so a
signal that is configured but cannot run here (no examples for `intent`, no model) is not listed.
A signal that retrieves nothing on the data set (e.g. `bm25_expansion` before any tool has
expansions) is left out of the table, and the log says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from toolscout.errors import ToolscoutError
from toolscout.eval.datasets import Dataset, Query
from toolscout.eval.runner import EvalRun, build_engine, engine_ranker, evaluate, run_engine
from toolscout.learning.examples import Example
from toolscout.search.settings import LEARNED_SIGNALS, LEXICAL_SIGNALS, SearchSettings

__all__ = ["HYBRID", "LEXICAL_FUSION", "Reporter", "alone", "configurations", "lexical_only", "run_ablation"]

log = logging.getLogger(__name__)

# (label, phase, done, total): phase is "embedding" (index build) or "queries".
Reporter = Callable[[str, str, int, int], None]
LEXICAL_FUSION = "lexical fusion"
HYBRID = "hybrid"


def configurations(
    base: SearchSettings, signals: Sequence[str], *, with_examples: bool = False
) -> dict[str, SearchSettings]:
    """Settings per ablation row, in table order; `signals` are the ones the engine runs.

    `with_examples`: the run has example requests, so the hybrid is also shown without each signal
    they feed (what each adds).
    """
    rows = {name: alone(base, name) for name in signals}
    lexical = [name for name in signals if name in LEXICAL_SIGNALS]
    if len(lexical) > 1:
        rows[LEXICAL_FUSION] = lexical_only(base, lexical)
    if len(signals) > 1 and len(lexical) < len(signals):
        # What each signal learned from examples adds: the hybrid with and without it.
        for name in LEARNED_SIGNALS if with_examples else ():
            if name in signals:
                rows[f"{HYBRID} without {name}"] = base.with_weights(
                    {signal: w for signal, w in base.weights.items() if signal != name}
                )
        rows[HYBRID] = base
    return rows


def alone(base: SearchSettings, signal: str) -> SearchSettings:
    # Without the exact-name fast path, so the row measures the signal and nothing else.
    settings = replace(base.with_weights({signal: base.weights.get(signal) or 1.0}), exact_name_boost=False)
    return settings if signal not in LEXICAL_SIGNALS else _without_model(settings)


def lexical_only(base: SearchSettings, signals: Sequence[str]) -> SearchSettings:
    return _without_model(base.with_weights({name: base.weights[name] for name in signals}))


def run_ablation(
    base: SearchSettings,
    dataset: Dataset,
    k: int,
    *,
    queries: Sequence[Query] | None = None,
    reporter: Reporter | None = None,
    examples: Sequence[Example] = (),
) -> list[EvalRun]:
    """Evaluate every ablation row on the data set; rows come back in table order."""
    queries = dataset.queries if queries is None else queries
    engine, seconds = build_engine(base, dataset, _bind(reporter, HYBRID, "embedding"), examples)
    signals = [name for name in engine.search(queries[0].text, limit=k).signals if base.weights.get(name)]
    if not signals:
        raise ToolscoutError("no signal of these settings can run; give at least one positive weight")
    rows = configurations(base, signals, with_examples=bool(examples))
    # The engine already built is the full configuration: the widest row of the table.
    full_label = next((label for label in (HYBRID, LEXICAL_FUSION) if label in rows), signals[0])
    full = evaluate(engine_ranker(engine), queries, k, label=full_label, index_seconds=seconds,
                    progress=_bind(reporter, full_label, "queries"))
    runs = []
    for label, settings in rows.items():
        if label == full_label:
            runs.append(full)
            continue
        run = run_engine(settings, dataset, k, queries=queries, label=label, examples=examples,
                         index_progress=_bind(reporter, label, "embedding"),
                         progress=_bind(reporter, label, "queries"))
        if label in signals and run.summary.recall == 0:
            log.info("%s retrieved nothing on %s (no data for it); left out", label, dataset.name)
            continue
        runs.append(run)
    return runs


def _without_model(settings: SearchSettings) -> SearchSettings:
    return replace(settings, model=None)


def _bind(reporter: Reporter | None, label: str, phase: str) -> Callable[[int, int], None] | None:
    if reporter is None:
        return None
    return lambda done, total: reporter(label, phase, done, total)
