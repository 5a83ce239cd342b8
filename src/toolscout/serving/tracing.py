"""OpenTelemetry traces of search_tools and execute_tool (optional: `serve --otel`).

The MCP SDK already opens a span for every request it serves, continuing the client's trace when
the request carries one, and propagates the trace to upstreams it calls. toolscout adds its own
spans inside: `toolscout.search` (the query's length, the limit, how many tools came back, the
signals that answered) and `toolscout.execute` (the tool id, its upstream server and the outcome:
ok, error or failed). The query text and the arguments are never recorded: they are the user's.

Spans go nowhere until `configure_tracing()` installs an exporter (`serve --otel`: OTLP over HTTP
to $OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318, with the OTEL_* settings the
exporter reads); that needs `pip install 'toolscout[otel]'`. Without it the spans cost nothing.
"""

from __future__ import annotations

from opentelemetry.trace import Tracer, get_tracer

from toolscout import __version__
from toolscout.errors import ConfigError

__all__ = ["OTEL_EXTRA", "configure_tracing", "tracer"]

OTEL_EXTRA = "pip install 'toolscout[otel]'"


def tracer() -> Tracer:
    """toolscout's tracer (a no-op until a tracer provider is installed)."""
    return get_tracer("toolscout", __version__)


def configure_tracing() -> None:
    """Export spans over OTLP/HTTP as the OTEL_* environment says; ConfigError if not installed."""
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ConfigError(f"--otel needs the OpenTelemetry SDK and OTLP exporter: {OTEL_EXTRA}") from exc
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: "toolscout"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
