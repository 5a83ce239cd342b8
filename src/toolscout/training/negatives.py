"""Hard negatives mined by toolscout's own keyword search: the tools it confuses with the right one.

Each request is searched in its own source's catalog (the tools it was written against), and one of
the best-ranked tools that does not serve it becomes its negative (a reworded version of a tool
that serves it, `variant_of`, serves it too). Choosing among the first few
rather than always the first keeps one near-duplicate tool (often an unlabelled right answer) from
being taught as wrong for every request.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence

from toolscout.search import SearchSettings, ToolSearch
from toolscout.training.data import Pair, Request, TrainingData

__all__ = ["mine_negatives"]

log = logging.getLogger(__name__)

_DEPTH = 10
# The negative is drawn from this many best-ranked wrong tools.
_CHOOSE_AMONG = 3


def mine_negatives(
    pairs: Sequence[tuple[Request, str]],
    data: TrainingData,
    *,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> list[Pair]:
    rng = random.Random(seed + 2)
    by_source = data.catalogs()
    engines: dict[str, ToolSearch] = {}
    mined: list[Pair] = []
    for done, (request, positive) in enumerate(pairs, start=1):
        engine = engines.get(request.source)
        if engine is None:
            engine = ToolSearch(SearchSettings.lexical_only())
            engine.index([data.tools[i] for i in by_source[request.source]])
            engines[request.source] = engine
        hits = engine.search(request.text, limit=_DEPTH).hits
        wrong = [hit.tool.id for hit in hits if not data.serves(request, hit.tool.id)]
        if wrong:
            negative = rng.choice(wrong[:_CHOOSE_AMONG])
        else:  # nothing ranked: any other tool of the same catalog
            negative = rng.choice([t for t in by_source[request.source] if not data.serves(request, t)])
        mined.append(Pair(request.text, positive, negative, request.source))
        if progress is not None and (done % 500 == 0 or done == len(pairs)):
            progress(done, len(pairs))
    return mined
