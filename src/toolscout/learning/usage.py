"""Learning from use: which tool an agent ran after which search, kept as local example requests.

When, in one session, `execute_tool` succeeds on a tool that a recent `search_tools` call returned,
that (query, tool) pair is evidence of what the tool is for in the user's own words. The tracker
links the two events; the store keeps the pairs in a SQLite file in the user data directory
(bounded, deduplicated, never sent anywhere). `UsageStore.examples()` feeds the next index build.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolscout.learning.examples import Example
from toolscout.learning.phrases import MAX_PHRASE_CHARS, clean_phrase, phrase_key
from toolscout.learning.storage import SqliteStore, data_dir

logger = logging.getLogger(__name__)

USAGE_FILE = "usage.sqlite3"
MAX_ROWS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    query_key  TEXT NOT NULL,
    tool_id    TEXT NOT NULL,
    query      TEXT NOT NULL,
    server     TEXT NOT NULL DEFAULT '',
    count      INTEGER NOT NULL DEFAULT 1,
    first_seen REAL NOT NULL,
    last_seen  REAL NOT NULL,
    PRIMARY KEY (query_key, tool_id)
);
CREATE INDEX IF NOT EXISTS usage_last_seen ON usage (last_seen);
"""
_COLUMNS = "query, tool_id, server, count, first_seen, last_seen"


def default_usage_path() -> Path:
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


class UsageStore(SqliteStore):
    """A bounded SQLite table of learned (query, tool) pairs; oldest (by last use) evicted first."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        max_rows: int = MAX_ROWS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(path or default_usage_path(), _SCHEMA, clock)
        self.max_rows = max_rows

    def record(self, query: str, tool_id: str, server: str = "") -> None:
        """Count one observation of `tool_id` serving `query` (same normalised query: count + 1)."""
        text = _bounded_query(query)
        if not text:
            return
        now = self._clock()
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO usage (query_key, tool_id, query, server, count, first_seen, last_seen)"
                " VALUES (?, ?, ?, ?, 1, ?, ?)"
                " ON CONFLICT (query_key, tool_id) DO UPDATE SET count = count + 1,"
                " query = excluded.query, server = excluded.server, last_seen = excluded.last_seen",
                (phrase_key(text), tool_id, text, server, now, now),
            )
            self._db.execute(
                "DELETE FROM usage WHERE rowid IN (SELECT rowid FROM usage"
                " ORDER BY last_seen ASC, rowid ASC"
                " LIMIT max(0, (SELECT count(*) FROM usage) - ?))",
                (self.max_rows,),
            )

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
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM usage{where} ORDER BY last_seen DESC, query_key, tool_id",
                params,
            ).fetchall()
        return [UsageEntry(*row) for row in rows]

    def examples(self) -> list[Example]:
        """One example per distinct query, its tools most-used first; most-used queries first."""
        with self._lock:
            rows = self._db.execute(
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
        with self._lock, self._db:
            return self._db.execute(f"DELETE FROM usage{where}", params).rowcount

    def clear(self) -> int:
        with self._lock, self._db:
            return self._db.execute("DELETE FROM usage").rowcount


@dataclass
class _Search:
    query: str
    at: float
    returned: frozenset[str]
    recorded: set[str] = field(default_factory=set)


class UsageTracker:
    """Links a session's successful tool executions to the search that found the tool.

    A pair is recorded when the executed tool was among the results of a search made in the same
    session at most `window_s` seconds before (the most recent such search wins), once per search
    and tool: repeated calls after one search are one piece of evidence, not many. Executions of
    tools no recent search returned are not recorded: the query did not lead to them.
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

    def on_search(self, session_key: Hashable, query: str, returned_ids: Sequence[str]) -> None:
        """Remember a search_tools call and the tool ids it returned."""
        if not self.enabled or not returned_ids or not clean_phrase(query):
            return
        search = _Search(query=query, at=self._clock(), returned=frozenset(returned_ids))
        with self._lock:
            searches = self._sessions.pop(session_key, None)
            if searches is None:
                searches = deque(maxlen=self.SEARCHES_PER_SESSION)
            searches.append(search)
            self._sessions[session_key] = searches
            while len(self._sessions) > self.MAX_SESSIONS:
                self._sessions.popitem(last=False)

    def on_execute_success(self, session_key: Hashable, tool_id: str, server: str = "") -> bool:
        """Record (query, tool) if a recent search of this session returned the tool; True if recorded."""
        if not self.enabled or self.store is None:
            return False
        now = self._clock()
        with self._lock:
            search = next(
                (
                    search
                    for search in reversed(self._sessions.get(session_key, ()))
                    if now - search.at <= self.window_s and tool_id in search.returned
                ),
                None,
            )
            if search is None or tool_id in search.recorded:
                return False
            search.recorded.add(tool_id)
        if phrase_key(search.query) == tool_id.casefold():
            return False  # the agent searched for the id itself: nothing learned about wording
        try:
            self.store.record(search.query, tool_id, server)
        except sqlite3.Error as exc:
            # Learning is best effort; a full disk must never fail the agent's tool call.
            logger.warning("could not record tool usage in %s: %s", self.store.path, exc)
            return False
        return True
