"""Learning from use: which tool an agent ran after which search, kept as local example requests.

When, in one session, `execute_tool` succeeds on a tool that a recent `search_tools` call returned,
that (query, tool) pair is evidence of what the tool is for in the user's own words, if the search
itself would have put the tool near the top (`UsageTracker` says exactly what counts). The tracker
links the two events; the store keeps the pairs in the state store (bounded, deduplicated, sent
nowhere but the deployment's own Postgres when replicas share one). `UsageStore.examples()` feeds the next index build.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolscout.learning.examples import Example
from toolscout.learning.phrases import MAX_PHRASE_CHARS, clean_phrase, phrase_key
from toolscout.errors import StateError
from toolscout.learning.storage import LearningStore
from toolscout.state.files import data_dir

__all__ = [
    "EVIDENCE_RANK",
    "MAX_ROWS",
    "USAGE_FILE",
    "Evidence",
    "RankCheck",
    "UsageEntry",
    "UsageStore",
    "UsageTracker",
    "default_usage_path",
]

logger = logging.getLogger(__name__)

USAGE_FILE = "usage.sqlite3"
MAX_ROWS = 10_000
# A tool counts as found by a query only when the unfiltered search ranks it this high.
EVIDENCE_RANK = 5

_COLUMNS = "query, tool_id, server, count, first_seen, last_seen"
_ALL_COLUMNS = ("query_key", "tool_id", "query", "server", "count", "first_seen", "last_seen")


def default_usage_path() -> Path:
    """Where an earlier version kept learned examples (imported into the state store on first start)."""
    return data_dir() / USAGE_FILE


def _bounded_query(query: str) -> str:
    # Long requests are still worth keeping; cut at a word boundary so the phrase stays readable.
    text = clean_phrase(query)
    if len(text) <= MAX_PHRASE_CHARS:
        return text
    return text[:MAX_PHRASE_CHARS].rsplit(" ", 1)[0]


@dataclass(frozen=True)
class UsageEntry:
    """One learned (query, tool) pair; `count` is how many times it was observed."""

    query: str
    tool_id: str
    server: str
    count: int
    first_seen: float
    last_seen: float


class UsageStore(LearningStore):
    """A bounded table of learned (query, tool) pairs in the state store at `location` (None: the
    default; a SQLite file or `postgresql://...`); least recently used evicted first."""

    KIND = "usage"

    def __init__(
        self,
        location: str | Path | None = None,
        *,
        max_rows: int = MAX_ROWS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(location, clock)
        self.max_rows = max_rows
        self._import(default_usage_path(), "usage", _ALL_COLUMNS)

    def record(self, query: str, tool_id: str, server: str = "") -> None:
        """Count one observation of `tool_id` serving `query` (same normalised query: count + 1)."""
        text = _bounded_query(query)
        if not text:
            return
        now = self._clock()
        with self.state.sql(self.KIND) as sql:
            sql.execute(
                "INSERT INTO usage (query_key, tool_id, query, server, count, first_seen, last_seen)"
                " VALUES (?, ?, ?, ?, 1, ?, ?)"
                " ON CONFLICT (query_key, tool_id) DO UPDATE SET count = usage.count + 1,"
                " query = excluded.query, server = excluded.server, last_seen = excluded.last_seen",
                (phrase_key(text), tool_id, text, server, now, now),
            )
            excess = int(sql.execute("SELECT count(*) FROM usage").fetchone()[0]) - self.max_rows
            if excess > 0:
                sql.execute(
                    "DELETE FROM usage WHERE (query_key, tool_id) IN (SELECT query_key, tool_id FROM usage"
                    " ORDER BY last_seen ASC, first_seen ASC, query_key, tool_id LIMIT ?)",
                    (excess,),
                )
            sql.changed = True

    def withdraw(self, query: str, tool_id: str) -> None:
        """Take back one observation of `tool_id` serving `query` (the agent corrected it)."""
        key = phrase_key(_bounded_query(query))
        with self.state.sql(self.KIND) as sql:
            sql.changed = sql.execute(
                "UPDATE usage SET count = count - 1 WHERE query_key = ? AND tool_id = ?", (key, tool_id)
            ).rowcount > 0
            sql.execute("DELETE FROM usage WHERE query_key = ? AND tool_id = ? AND count <= 0", (key, tool_id))

    def remove(self, query: str, tool_id: str) -> bool:
        """Delete one learned pair however often it was seen (a person judged it wrong); False if
        it was not there."""
        key = phrase_key(_bounded_query(query))
        with self.state.sql(self.KIND) as sql:
            removed = sql.execute("DELETE FROM usage WHERE query_key = ? AND tool_id = ?", (key, tool_id)).rowcount > 0
            sql.changed = removed
        return removed

    def _where(self, tool_id: str | None, older_than: float | None) -> tuple[str, list[object]]:
        clauses, params = [], []
        if tool_id is not None:
            clauses.append("tool_id = ?")
            params.append(tool_id)
        if older_than is not None:
            clauses.append("last_seen < ?")
            params.append(older_than)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def entries(self, *, tool_id: str | None = None, older_than: float | None = None) -> list[UsageEntry]:
        """Stored pairs, most recently used first; filtered by tool and/or last use before a time."""
        where, params = self._where(tool_id, older_than)
        with self.state.sql(self.KIND) as sql:
            rows = sql.execute(
                f"SELECT {_COLUMNS} FROM usage{where} ORDER BY last_seen DESC, query_key, tool_id", params
            ).fetchall()
        return [UsageEntry(*row) for row in rows]

    def examples(self) -> list[Example]:
        """One example per distinct query, its tools most-used first; most-used queries first."""
        with self.state.sql(self.KIND) as sql:
            rows = sql.execute(
                "SELECT query_key, query, tool_id, count, last_seen FROM usage"
                " ORDER BY query_key, count DESC, last_seen DESC, tool_id"
            ).fetchall()
        grouped: dict[str, tuple[str, list[str], int, float]] = {}
        for key, query, tool_id, count, last_seen in rows:
            if key not in grouped:
                grouped[key] = (query, [], 0, last_seen)
            text, tools, total, latest = grouped[key]
            tools.append(tool_id)
            grouped[key] = (text, tools, total + count, max(latest, last_seen))
        order = sorted(grouped.items(), key=lambda item: (-item[1][2], -item[1][3], item[0]))
        return [Example(query=text, tool_ids=tuple(tools)) for _, (text, tools, _, _) in order]

    def prune(self, *, tool_id: str | None = None, older_than: float | None = None) -> int:
        """Delete pairs of `tool_id` and/or last used before `older_than` (epoch seconds)."""
        if tool_id is None and older_than is None:
            raise ValueError("prune needs a tool id or a cut-off time; use clear() to delete all")
        where, params = self._where(tool_id, older_than)
        with self.state.sql(self.KIND) as sql:
            removed = int(sql.execute(f"DELETE FROM usage{where}", params).rowcount)
            sql.changed = removed > 0
        return removed

    def clear(self) -> int:
        with self.state.sql(self.KIND) as sql:
            removed = int(sql.execute("DELETE FROM usage").rowcount)
            sql.changed = removed > 0
        return removed


@dataclass
class _Search:
    query: str
    at: float
    # The ids it returned, best first.
    returned: tuple[str, ...]
    # Restricted to some servers (`servers=`): its ranking says nothing about the whole catalog.
    filtered: bool = False
    recorded: set[str] = field(default_factory=set)


def _words(query: str) -> frozenset[str]:
    return frozenset(phrase_key(query).split())


def _rephrases(a: str, b: str) -> bool:
    """Two requests for the same thing: the same words, or most of them shared."""
    wa, wb = _words(a), _words(b)
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= 0.5


# Given a query and a tool id: does the unfiltered search rank the tool within EVIDENCE_RANK?
RankCheck = Callable[[str, str], bool]


@dataclass(frozen=True)
class Evidence:
    """A successful execution matched to the search that found the tool (`UsageTracker.match`)."""

    query: str
    tool_id: str
    server: str
    # Within EVIDENCE_RANK of a search over the whole catalog; otherwise the unfiltered search must say so.
    ranked_high: bool
    # (query, tool id) pairs this execution corrects: the agent asked again and ran another tool.
    corrects: tuple[tuple[str, str], ...] = ()


class UsageTracker:
    """Links a session's successful tool executions to the search that found the tool.

    Only real successes are evidence. A pair is recorded when:
    - the call succeeded (the caller reports successes only; an error result is never one);
    - the executed tool was among the results of a search made in the same session at most
      `window_s` seconds before (the most recent such search wins): a tool no recent search
      returned was not found by the query;
    - that search ranks it high for the query itself: within its first EVIDENCE_RANK results when
      it searched the whole catalog; when it was restricted to some servers (`servers=`), only if
      the unfiltered search (`ranks_high`) ranks it that high too. A time tool found by "show me
      the git log" among the time server's tools alone says nothing about git requests;
    - once per search and tool: repeated calls after one search are one piece of evidence.
    A later correction takes it back: when the session then searches again with a rephrasing of
    that query (most words shared) and succeeds with another tool, the first pair is withdrawn.
    """

    SEARCHES_PER_SESSION = 8
    MAX_SESSIONS = 256

    def __init__(
        self,
        store: UsageStore | None,
        *,
        window_s: float = 300.0,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.window_s = window_s
        self.enabled = enabled and store is not None
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: OrderedDict[Hashable, deque[_Search]] = OrderedDict()

    def on_search(
        self, session_key: Hashable, query: str, returned_ids: Sequence[str], *, filtered: bool = False
    ) -> None:
        """Remember a search_tools call, the tool ids it returned (best first), and whether it was
        restricted to some servers."""
        if not self.enabled or not returned_ids or not clean_phrase(query):
            return
        search = _Search(query=query, at=self._clock(), returned=tuple(returned_ids), filtered=filtered)
        with self._lock:
            searches = self._sessions.pop(session_key, None)
            if searches is None:
                searches = deque(maxlen=self.SEARCHES_PER_SESSION)
            searches.append(search)
            self._sessions[session_key] = searches
            while len(self._sessions) > self.MAX_SESSIONS:
                self._sessions.popitem(last=False)

    def on_execute_success(
        self, session_key: Hashable, tool_id: str, server: str = "", *, ranks_high: RankCheck | None = None
    ) -> bool:
        """Record (query, tool) if it is evidence (see the class); True if recorded."""
        evidence = self.match(session_key, tool_id, server)
        return evidence is not None and self.commit(evidence, ranks_high=ranks_high)

    def match(self, session_key: Hashable, tool_id: str, server: str = "") -> Evidence | None:
        """The search a successful execution answers, and what it corrects; in memory, quick.

        Call it when the execution is seen (later searches of the session must not be taken for
        the one that found the tool); `commit` then writes, off the event loop."""
        if not self.enabled or self.store is None:
            return None
        now = self._clock()
        with self._lock:
            recent = [s for s in self._sessions.get(session_key, ()) if now - s.at <= self.window_s]
            search = next((s for s in reversed(recent) if tool_id in s.returned), None)
            if search is None or tool_id in search.recorded:
                return None
            search.recorded.add(tool_id)
            # Earlier searches for the same thing whose tool this one replaces: corrected.
            rephrased = [s for s in recent if s is not search and _rephrases(s.query, search.query)]
            corrected = tuple((s.query, other) for s in rephrased for other in sorted(s.recorded - {tool_id}))
            for s in rephrased:
                s.recorded.intersection_update({tool_id})
        return Evidence(
            query=search.query, tool_id=tool_id, server=server,
            ranked_high=not search.filtered and search.returned.index(tool_id) < EVIDENCE_RANK,
            corrects=corrected,
        )

    def commit(self, evidence: Evidence, *, ranks_high: RankCheck | None = None) -> bool:
        """Withdraw what `evidence` corrects, then record it if it is evidence; True if recorded.

        `ranks_high` may search: call this from a worker thread."""
        if self.store is None or phrase_key(evidence.query) == evidence.tool_id.casefold():
            return False  # the agent searched for the id itself: nothing learned about wording
        try:
            for query, other in evidence.corrects:
                self.store.withdraw(query, other)
            if not evidence.ranked_high and (ranks_high is None or not ranks_high(evidence.query, evidence.tool_id)):
                return False
            self.store.record(evidence.query, evidence.tool_id, evidence.server)
        except StateError as exc:
            # Learning is best effort; a full disk or a lost database must never fail the agent's tool call.
            logger.warning("could not record tool usage in %s: %s", self.store.location, exc)
            return False
        return True
