"""Render evaluation runs: markdown tables (stdout, reports, docs) and a PNG chart.

matplotlib is imported only when a chart is drawn, with the non-interactive Agg backend, so the
tables work without it and nothing ever opens a window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from toolscout.errors import ToolscoutError
from toolscout.eval.runner import EvalRun, Summary, by_slice

__all__ = [
    "QUALITY_COLUMNS",
    "Row",
    "draw_chart",
    "markdown_table",
    "rows_of",
    "slice_pivot",
    "slice_rows",
    "write_report",
]

# (Summary field, column title); the title gets "@k" appended where it is a ranking metric.
QUALITY_COLUMNS = (
    ("recall", "Recall"),
    ("mrr", "MRR"),
    ("full_recall", "Full Recall"),
    ("multi_recall", "Multi-tool Recall"),
    ("complete", "Complete"),
    ("ndcg", "nDCG"),
)


@dataclass(frozen=True)
class Row:
    """One table line: a label, its scores, and optionally the index build time."""

    label: str
    summary: Summary
    index_seconds: float | None = None


def rows_of(runs: Sequence[EvalRun]) -> list[Row]:
    return [Row(run.label, run.summary, run.index_seconds) for run in runs]


def slice_rows(runs: Sequence[EvalRun], field: str) -> list[Row]:
    """Per-slice rows of every run, labelled `<run> / <slice value>` (or the value alone for one run)."""
    rows = []
    for run in runs:
        for value, summary in by_slice(run, field).items():
            label = value if len(runs) == 1 else f"{run.label} / {value}"
            rows.append(Row(label, summary))
    return rows


def markdown_table(rows: Sequence[Row], *, first_column: str = "system") -> str:
    """A GitHub markdown table of quality, latency and (when known) index build time."""
    if not rows:
        return ""
    k = rows[0].summary.k
    with_index = any(row.index_seconds is not None for row in rows)
    header = [first_column, *(f"{title}@{k}" for _, title in QUALITY_COLUMNS)]
    header += ["p50 ms", "p95 ms", "queries"] + (["index s"] if with_index else [])
    lines = _header(header)
    for row in rows:
        cells = [row.label.replace("|", "\\|")]
        cells += [_score(getattr(row.summary, name)) for name, _ in QUALITY_COLUMNS]
        cells += [
            f"{row.summary.latency_ms_p50:.2f}",
            f"{row.summary.latency_ms_p95:.2f}",
            str(row.summary.n_queries),
        ]
        if with_index:
            cells.append("" if row.index_seconds is None else f"{row.index_seconds:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def slice_pivot(runs: Sequence[EvalRun], field: str, metric: str) -> str:
    """One metric per slice value: a row per run, a column per value of `field` (plus all)."""
    if not runs:
        return ""
    slices = {run.label: by_slice(run, field) for run in runs}
    values = sorted({value for per_run in slices.values() for value in per_run})
    header = ["system", *values, "all"]
    lines = _header(header)
    for run in runs:
        cells = [_score(getattr(slices[run.label][v], metric)) if v in slices[run.label] else ""
                 for v in values]
        lines.append("| " + " | ".join([run.label, *cells, _score(getattr(run.summary, metric))]) + " |")
    return "\n".join(lines)


def write_report(
    folder: str | Path,
    dataset_name: str,
    runs: Sequence[EvalRun],
    *,
    slice_fields: Sequence[str] = (),
    settings: Mapping[str, object] | None = None,
) -> tuple[Path, Path]:
    """Write `<dataset>-<UTC time>.md` and a `.png` chart of the runs into `folder`; return both paths."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ToolscoutError(f"cannot create report folder {folder}: {exc}") from exc
    now = datetime.now(timezone.utc)
    stem = f"{dataset_name}-{now:%Y%m%d-%H%M%S}"
    markdown, chart = folder / f"{stem}.md", folder / f"{stem}.png"
    k = runs[0].k
    parts = [f"# {dataset_name}: tool retrieval at k = {k}", "", f"Run at {now:%Y-%m-%d %H:%M} UTC."]
    if settings:
        parts += ["", "Settings: " + ", ".join(f"`{key}={value}`" for key, value in settings.items())]
    parts += ["", markdown_table(rows_of(runs)), "", f"![scores]({chart.name})"]
    for field in slice_fields:
        parts += ["", f"## By {field}", "", markdown_table(slice_rows(runs, field), first_column=field)]
    draw_chart(chart, rows_of(runs), title=f"{dataset_name} (k = {k})")
    markdown.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return markdown, chart


def draw_chart(path: Path, rows: Sequence[Row], *, title: str) -> None:
    """Grouped bars: one group per quality metric, one bar per row."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ToolscoutError("charts need matplotlib: pip install 'toolscout[eval]'") from exc

    matplotlib.use("Agg")
    from matplotlib import pyplot

    metrics = [(name, title_) for name, title_ in QUALITY_COLUMNS
               if all(getattr(row.summary, name) is not None for row in rows)]
    width = 0.8 / len(rows)
    figure, axes = pyplot.subplots(figsize=(max(6.0, 1.6 * len(metrics) + 0.4 * len(rows)), 4.5))
    try:
        for index, row in enumerate(rows):
            positions = [m + (index - (len(rows) - 1) / 2) * width for m in range(len(metrics))]
            values = [getattr(row.summary, name) for name, _ in metrics]
            axes.bar(positions, values, width, label=row.label)
        axes.set_xticks(range(len(metrics)), [title_ for _, title_ in metrics])
        axes.set_ylim(0, 1)
        axes.set_title(title)
        # Below the axes, so no bar is hidden behind it.
        axes.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.1),
                    ncol=min(len(rows), 4), frameon=False)
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        pyplot.close(figure)


def _header(cells: Sequence[str]) -> list[str]:
    # The first column is a label; every other column is a right-aligned number.
    return ["| " + " | ".join(cells) + " |", "|" + "|".join(["---"] + ["---:"] * (len(cells) - 1)) + "|"]


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
