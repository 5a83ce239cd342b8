"""Hard negatives mined by toolscout's own search: the tools it confuses with the right one.

By default the search is keyword-only; given an embedding model, it is the full hybrid engine with
that model, whose confusions are the semantic near-misses a dense model has to learn apart. Each request is searched in its own source's catalog (the tools it was written against), and one of
the best-ranked tools that does not serve it becomes its negative. Choosing among the first few
rather than always the first keeps one near-duplicate tool (often an unlabelled right answer) from
being taught as wrong for every request. A tool named like one that serves the request is never a
negative: sources such as BFCL document one function several times with slightly different words,
and teaching those twins apart would teach the model to split hairs over wording.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
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
    model: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Pair]:
    """One negative per pair; `model` None mines with keyword search alone."""
    rng = random.Random(seed + 2)
    by_source: dict[str, list[str]] = defaultdict(list)
    for tool_id, source in data.tool_source.items():
        by_source[source].append(tool_id)
    engines: dict[str, ToolSearch] = {}
    mined: list[Pair] = []
    for done, (request, positive) in enumerate(pairs, start=1):
        engine = engines.get(request.source)
        if engine is None:
            engine = ToolSearch(SearchSettings.lexical_only() if model is None else SearchSettings(model=model))
            engine.index([data.tools[i] for i in by_source[request.source]])
            if model is not None:
                log.info("embedding the %s catalog (%d tools) to mine with", request.source, len(by_source[request.source]))
                engine.complete(None)
            engines[request.source] = engine
        served = {_name_key(data.tools[t].name) for t in request.tools}

        def wrong_for_request(tool_id: str, served: set[str] = served, request: Request = request) -> bool:
            return tool_id not in request.tools and _name_key(data.tools[tool_id].name) not in served

        hits = engine.search(request.text, limit=_DEPTH).hits
        wrong = [hit.tool.id for hit in hits if wrong_for_request(hit.tool.id)]
        if wrong:
            negative = rng.choice(wrong[:_CHOOSE_AMONG])
        else:  # nothing ranked: any other tool of the same catalog
            negative = rng.choice([t for t in by_source[request.source] if wrong_for_request(t)])
        mined.append(Pair(request.text, positive, negative, request.source))
        if progress is not None and (done % 500 == 0 or done == len(pairs)):
            progress(done, len(pairs))
    return mined


def _name_key(name: str) -> str:
    return name.strip().lower()
