"""Which tools destroy something, and whether a request asks for that.

Ranking a tool that deletes, resets or overwrites first, for a request that only wanted to make or
see something, costs more than any other mistake search can make: an agent that trusts the top
result may run it. Word-matching signals cannot tell "make a chart" from "remove a chart" when
both descriptions are mostly about charts, and short descriptions ("Remove a chart; its data
stays.") even win on length. So unless the request itself asks to remove something, a destructive
tool's fused score is lowered by a small factor (`SearchSettings.destructive_factor`): enough to
put a constructive tool that ranks just below it first, never enough to hide a destructive tool
that clearly fits better.

A tool is destructive when its name or its description begins with a destructive verb
("delete_chart", "Unstages all staged changes"): what the tool is *for*. MCP's `destructiveHint`
does not say that: it marks any tool that *may* overwrite something, and servers set it on
"Add or replace a chart" as on "Remove a chart", so it cannot tell them apart. Only
`readOnlyHint: true` is taken from the annotations: a read-only tool is never destructive.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolscout.catalog import ToolRecord
from toolscout.index.text import leading_verb, tokenize

__all__ = ["DESTRUCTIVE_STEMS", "REMOVAL_STEMS", "asks_to_destroy", "demote_destructive", "is_destructive"]

# Verbs whose effect cannot be taken back by running the tool again. Stemmed like every indexed
# word, so "deletes", "removing" and "reset" in any form match.
_DESTRUCTIVE_VERBS = """delete remove drop erase clear purge reset revert undo unstage wipe destroy
    uninstall discard truncate kill terminate overwrite unlink revoke unsubscribe unpublish
    deregister unregister""".split()
DESTRUCTIVE_STEMS = frozenset(tokenize(" ".join(_DESTRUCTIVE_VERBS), stem=True))
# More ways a request says it wants something gone. Only requests are read with these: a false
# match here merely leaves the ranking as fused, while on the tool side it would demote a tool.
_REMOVAL_WORDS = """clean cleanup rid prune trash dispose cancel eliminate expunge empty flush
    rollback evict abort unset unassign unfollow detach hangup close stop shut end""".split()
REMOVAL_STEMS = DESTRUCTIVE_STEMS | frozenset(tokenize(" ".join(_REMOVAL_WORDS), stem=True))


def is_destructive(tool: ToolRecord) -> bool:
    if (tool.annotations or {}).get("readOnlyHint") is True:
        return False
    return any(_leading_stem(text) in DESTRUCTIVE_STEMS for text in (tool.name, tool.description))


def _leading_stem(text: str) -> str:
    stems = tokenize(leading_verb(text), stem=True)
    return stems[0] if stems else ""


def asks_to_destroy(request: str) -> bool:
    """True when a request names a destructive action anywhere ("undo my last commit")."""
    return any(token in REMOVAL_STEMS for token in tokenize(request, stem=True))


def demote_destructive(
    fused: list[tuple[int, float]], destructive: Sequence[bool], factor: float
) -> list[tuple[int, float]]:
    """Fused (position, score) pairs, best first, with destructive tools' scores x `factor`."""
    if factor >= 1.0 or not any(destructive[position] for position, _ in fused):
        return fused
    scaled = [(position, score * factor if destructive[position] else score) for position, score in fused]
    # Stable: equal scores keep their fused order.
    return sorted(scaled, key=lambda pair: -pair[1])
