"""A static (model2vec) distillation of an embedding model as the dense signal: quality and speed.

    .venv/bin/pip install -r benchmarks/requirements.txt          # model2vec (and the peers)
    .venv/bin/python benchmarks/static_distill.py --distil runs/tool-minilm-v3/model --out runs/static
    .venv/bin/python benchmarks/static_distill.py --static runs/static

A static model is one vector per token, averaged: no transformer at run time, so a catalog embeds
in a fraction of the time. The question is whether it is good enough as a cold-start encoder
while the real model embeds a very large catalog. For each data set this prints the dense signal
alone (cosine of the tool's `dense_document` text and the request; Recall@1, MRR@10, Full
Recall@10) with the shipped ONNX model and with the static one, and tools embedded per second by
each (one thread each, the machine otherwise idle). `--distil` needs the train extra (torch).
Progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

from toolscout.eval import evaluate, load_dataset, metrics, sample_queries
from toolscout.index.dense import load_encoder
from toolscout.index.model_files import resolve_model
from toolscout.index.text import dense_document
from toolscout.search.settings import SearchSettings

log = logging.getLogger("static_distill")
ROOT = Path(__file__).resolve().parents[1]
SETS = [ROOT.parent / "shared" / "bench" / n for n in ("etom_mcp", "toolbench_stb", "toollens_train")] + [
    ROOT / "benchmarks" / "data" / "bundled"]
K = 10


def distil(source: Path, target: Path) -> None:
    from model2vec.distill import distill

    # 256 dimensions after PCA: model2vec's default, and what shared/notes measured for the base.
    distill(model_name=str(source), pca_dims=256).save_pretrained(str(target))


def normalised(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distil", type=Path, metavar="MODEL_DIR", help="distil this sentence-transformers folder first")
    parser.add_argument("--out", type=Path, help="where --distil writes the static model")
    parser.add_argument("--static", type=Path, help="a static model folder to measure")
    parser.add_argument("--limit-queries", type=int, default=3000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    if args.distil:
        if not args.out:
            parser.error("--distil needs --out")
        distil(args.distil, args.out)
        log.info("static model written to %s", args.out)
        return 0
    if not args.static:
        parser.error("give --static DIR (or --distil MODEL_DIR --out DIR)")
    from model2vec import StaticModel

    static = StaticModel.from_pretrained(str(args.static))
    settings = SearchSettings()
    location = resolve_model(settings.model)
    assert location is not None
    onnx = load_encoder(location, backend="onnx", work_dir=settings.resolved_cache_dir)
    encoders = {"shipped model (ONNX int8)": onnx.encode, f"static ({args.static.name})": static.encode}

    print("| set | encoder | tools/s | Recall@1 | MRR@10 | Full Recall@10 |")
    print("|---|---|---:|---:|---:|---:|")
    for folder in SETS:
        dataset = load_dataset(folder)
        queries = sample_queries(dataset.queries, args.limit_queries)
        texts = [dense_document(tool) for tool in dataset.tools]
        ids = [tool.id for tool in dataset.tools]
        for label, encode in encoders.items():
            start = time.perf_counter()
            matrix = normalised(encode(texts))
            rate = len(texts) / (time.perf_counter() - start)
            query_vectors = normalised(encode([q.text for q in queries]))
            by_text = {q.text: v for q, v in zip(queries, query_vectors)}

            def rank(text: str, k: int, matrix: np.ndarray = matrix, by_text: dict = by_text) -> list[str]:
                scores = matrix @ by_text[text]
                return [ids[i] for i in np.argsort(-scores, kind="stable")[:k]]

            run = evaluate(rank, queries, K, label=label)
            log.info("%s, %s: done", dataset.name, label)
            top1 = float(np.mean([metrics.recall(o.retrieved, o.query, 1) for o in run.outcomes]))
            print(f"| {dataset.name} | {label} | {rate:,.0f} | {top1:.3f} | {run.summary.mrr:.3f} | "
                  f"{run.summary.full_recall:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
