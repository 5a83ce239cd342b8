"""Prometheus metrics of a serving gateway, exposed at /metrics of the HTTP server.

    metrics = GatewayMetrics(gateway)
    server = build_server(gateway, metrics=metrics)      # counts searches and calls as they happen
    body, content_type = metrics.exposition()            # what /metrics answers

Counted as they happen: searches and their latency; calls by upstream server and outcome (`ok`,
`error`: the upstream answered with an error result, `failed`: no answer, e.g. the upstream was down
or timed out) and their latency; calls refused before they reached an upstream, by reason
(`toolscout_refused_calls`: `toolscout.serving.call_policies`). Read from the gateway at each scrape: every upstream's state,
restarts and whether it was given up on, tools indexed and withheld (quarantined by pinning or
flagged by the poisoning scan), and the embedding backlog (tools indexed but not yet embedded;
searches answer from the keyword signals meanwhile).

Each GatewayMetrics has its own registry, so several gateways in one process never share counts.
The same searches and calls are also kept per minute for the last hour (`recent`, a
`toolscout.serving.recent.RecentActivity`): what the dashboard's activity page charts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from toolscout.serving.recent import RecentActivity
from toolscout.upstream.status import State

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from toolscout.gateway import Gateway

__all__ = ["CALL_OUTCOMES", "CallOutcome", "GatewayMetrics"]

CALL_OUTCOMES = ("ok", "error", "failed")
# Searches answer in milliseconds; calls take as long as their upstream.
_SEARCH_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_CALL_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class CallOutcome:
    """Set by the code that made a call once it knows how it went (default: `failed`)."""

    def __init__(self) -> None:
        self.value = "failed"


class GatewayMetrics:
    def __init__(self, gateway: Gateway) -> None:
        self.registry = CollectorRegistry()
        self._searches = Counter("toolscout_searches", "Searches answered.", registry=self.registry)
        self._search_seconds = Histogram(
            "toolscout_search_seconds", "Time to answer a search.", buckets=_SEARCH_BUCKETS, registry=self.registry
        )
        self._calls = Counter(
            "toolscout_tool_calls", "Tool calls passed to an upstream, by server and outcome.",
            ["server", "outcome"], registry=self.registry,
        )
        self._call_seconds = Histogram(
            "toolscout_tool_call_seconds", "Time an upstream took to answer a call, by server.",
            ["server"], buckets=_CALL_BUCKETS, registry=self.registry,
        )
        self._refused = Counter(
            "toolscout_refused_calls", "Calls refused before they reached an upstream, by reason "
            "(invalid, withheld, unavailable, limited, declined, unconfirmed).", ["reason"], registry=self.registry,
        )
        self.registry.register(_GatewayState(gateway))
        self.recent = RecentActivity()

    def refused(self, reason: str) -> None:
        """One call refused before it reached an upstream (`toolscout.serving.call_policies`)."""
        self._refused.labels(reason=reason).inc()
        self.recent.refused()

    @contextmanager
    def searching(self) -> Iterator[None]:
        """Around one search: counted and timed once it answered."""
        started = time.perf_counter()
        yield
        elapsed = time.perf_counter() - started
        self._search_seconds.observe(elapsed)
        self._searches.inc()
        self.recent.searched(elapsed)

    @contextmanager
    def calling(self, server: str) -> Iterator[CallOutcome]:
        """Around one call to `server`; the caller sets the outcome it yields (`ok` or `error`)."""
        outcome = CallOutcome()
        started = time.perf_counter()
        try:
            yield outcome
        finally:
            elapsed = time.perf_counter() - started
            self._call_seconds.labels(server=server).observe(elapsed)
            self._calls.labels(server=server, outcome=outcome.value).inc()
            self.recent.called(server, outcome.value, elapsed)

    def exposition(self) -> tuple[bytes, str]:
        """The text /metrics answers, and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _GatewayState(Collector):
    """What the gateway knows at scrape time: read, never counted here."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def collect(self) -> Iterator[Metric]:
        statuses = self._gateway.statuses(screened=False)
        state = GaugeMetricFamily(
            "toolscout_upstream_state", "1 for each upstream's current state.", labels=["server", "state"]
        )
        restarts = CounterMetricFamily(
            "toolscout_upstream_restarts", "Times the supervisor started an upstream again.", labels=["server"]
        )
        gave_up = GaugeMetricFamily(
            "toolscout_upstream_gave_up", "1 if the supervisor stopped restarting the upstream.", labels=["server"]
        )
        listed = GaugeMetricFamily("toolscout_upstream_tools", "Tools an upstream lists.", labels=["server"])
        for status in statuses:
            for each in State:
                state.add_metric([status.name, each.value], 1.0 if status.state is each else 0.0)
            restarts.add_metric([status.name], status.restarts)
            gave_up.add_metric([status.name], 1.0 if status.gave_up else 0.0)
            listed.add_metric([status.name], status.tool_count)
        yield from (state, restarts, gave_up, listed)
        catalog = self._gateway.catalog
        yield GaugeMetricFamily("toolscout_tools_indexed", "Tools agents can search and run.", value=len(catalog.tools))
        yield GaugeMetricFamily(
            "toolscout_tools_withheld",
            "Tools withheld from agents: quarantined by pinning or flagged by the poisoning scan.",
            value=len(catalog.withheld),
        )
        yield GaugeMetricFamily(
            "toolscout_embedding_backlog", "Indexed tools not yet embedded (keyword signals answer meanwhile).",
            value=self._gateway.embedding_backlog,
        )
