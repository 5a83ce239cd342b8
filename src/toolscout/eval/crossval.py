"""Evaluating with example requests: examples from a file, or the other folds of the query file.

Examples must never contain the evaluated requests themselves, or the intent signal would simply
look the answer up. Two requests are the same when their normalised texts are (case, punctuation
and spacing ignored; `toolscout.index.intent.normalise_request`): examples matching an evaluated
query are dropped, and the fold split keeps every copy of a request in one fold, so a request
repeated in the file is never both evaluated and an example.

An examples file is JSON Lines, each line `{"query": ..., "tools": [ids]}` (the examples format)
or a benchmark query line `{"query": ..., "relevant": [ids]}` (its relevant tools are the tools).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from toolscout.errors import DatasetError
from toolscout.eval.datasets import Query, _rows
from toolscout.eval.runner import EvalRun, summarize
from toolscout.index.intent import normalise_request
from toolscout.learning.examples import Example

__all__ = [
    "SPLITS",
    "Fold",
    "about_other_tools",
    "cross_validation_folds",
    "examples_of",
    "load_eval_examples",
    "pooled",
    "split_folds",
    "without_overlap",
]

# How queries are split into folds: by request text, by set of relevant tools, or by set of relevant
# tools with the examples then limited to requests sharing no tool with the evaluated ones.
SPLITS = ("request", "tools", "other-tools")


@dataclass(frozen=True)
class Fold:
    """One fold: the queries evaluated and the examples the engine learns from meanwhile."""

    number: int
    queries: tuple[Query, ...]
    examples: tuple[Example, ...]
    # Examples dropped because an evaluated query has the same normalised text.
    dropped: int = 0


def load_eval_examples(path: str | Path) -> list[Example]:
    """Examples from a JSON Lines file in the examples or the benchmark query format."""
    examples = []
    # The benchmark files' reader: one JSON object per line, errors naming the file and line.
    for where, row in _rows(Path(path)):
        tools = row.get("tools", row.get("relevant"))
        query = row.get("query")
        if not isinstance(query, str) or not query.strip():
            raise DatasetError(f'{where}: needs a "query" string (lines are {{"query": ..., "tools": [ids]}})')
        if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
            raise DatasetError(f'{where}: needs "tools" (or "relevant"): a non-empty list of tool ids')
        examples.append(Example(query=query.strip(), tool_ids=tuple(dict.fromkeys(tools))))
    return examples


def examples_of(queries: Sequence[Query]) -> list[Example]:
    """Benchmark queries as examples: each request with its relevant tools."""
    return [Example(query=query.text, tool_ids=query.relevant) for query in queries]


def without_overlap(examples: Sequence[Example], queries: Sequence[Query]) -> tuple[list[Example], int]:
    """The examples whose request is none of `queries`, and how many were dropped."""
    evaluated = {normalise_request(query.text) for query in queries}
    kept = [example for example in examples if normalise_request(example.query) not in evaluated]
    return kept, len(examples) - len(kept)


def split_folds(
    queries: Sequence[Query], folds: int, *, seed: int = 0, by: str = "request"
) -> list[tuple[Query, ...]]:
    """`folds` disjoint parts of `queries`, deterministic for a seed; copies of a request stay together.

    `by="tools"` keeps every request with the same set of relevant tools in one fold instead, so
    no evaluated request's tool set is ever among the examples: past requests are about other
    things (or other combinations of things), the hard case for learning from use.
    """
    if folds < 2:
        raise DatasetError("--folds needs at least 2 folds")
    by = "tools" if by == "other-tools" else by
    if by not in SPLITS:
        raise DatasetError(f"unknown fold split {by!r}; choose one of {', '.join(SPLITS)}")
    groups: dict[object, list[Query]] = {}
    for query in queries:
        key = normalise_request(query.text) if by == "request" else frozenset(query.relevant)
        groups.setdefault(key, []).append(query)
    if len(groups) < folds:
        raise DatasetError(f"{len(groups)} distinct {'queries' if by == 'request' else 'tool sets'} "
                           f"cannot be split into {folds} folds")
    keys = list(groups)
    random.Random(seed).shuffle(keys)
    parts: list[list[Query]] = [[] for _ in range(folds)]
    for index, key in enumerate(keys):
        parts[index % folds].extend(groups[key])
    return [tuple(part) for part in parts]


def cross_validation_folds(
    queries: Sequence[Query], folds: int, *, seed: int = 0, by: str = "request"
) -> list[Fold]:
    """Each fold evaluated with the other folds' queries as examples (`split_folds` says how split)."""
    parts = split_folds(queries, folds, seed=seed, by=by)
    result = []
    for number, part in enumerate(parts, start=1):
        others = [query for index, other in enumerate(parts, start=1) if index != number for query in other]
        # The split already keeps equal requests together; this only guards the invariant.
        examples, dropped = without_overlap(examples_of(others), part)
        result.append(Fold(number=number, queries=part, examples=tuple(examples), dropped=dropped))
    return result


def about_other_tools(fold: Fold) -> Fold:
    """`fold` with only the examples that share no tool with any of its queries.

    The harshest learning-from-use case: every past request is about other tools, so the learned
    signals can only mislead, and the best a search can do is what it does without examples.
    """
    used = frozenset().union(*(query.answers for query in fold.queries))
    kept = tuple(example for example in fold.examples if used.isdisjoint(example.tool_ids))
    return replace(fold, examples=kept, dropped=fold.dropped + len(fold.examples) - len(kept))


def pooled(runs: Sequence[EvalRun], label: str) -> EvalRun:
    """One run over every query of `runs` (the folds of one configuration)."""
    outcomes = tuple(outcome for run in runs for outcome in run.outcomes)
    k = runs[0].k
    return EvalRun(label=label, k=k, outcomes=outcomes, summary=summarize(outcomes, k))
