"""The dense signal's pass over the catalog matrix: numpy's einsum loop against BLAS (`@`), by size,
and float16 rows (half the memory a pass reads) against float32.

    PYTHONPATH=src python benchmarks/dense_pass.py [--rounds 40]

Random float32 unit rows of 384 dimensions (the shipped model's); one query vector per round; the
two ways alternate within each round so that the machine's load (printed) weighs on both alike.
Prints one table: p50 per pass, and the largest difference between the two ways' cosines; then
float16 rows (`matrix.astype(float16) @ vector`): p50 per pass and how many rounds' top 10 equal
float32's. `toolscout.index.dense` uses BLAS from `_BLAS_ROWS` tools on, over float32 rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from toolscout.index.dense import _BLAS_ROWS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    generator = np.random.default_rng(7)
    print(f"load average {' / '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cores; BLAS from {_BLAS_ROWS:,} rows")
    print("| rows | einsum p50 | BLAS p50 | largest cosine difference | float16 rows p50 | float16 top 10 = float32's |")
    print("| --- | --- | --- | --- | --- | --- |")
    for rows in (4_000, 20_000, 40_000, 60_000, 100_000):
        matrix = generator.standard_normal((rows, 384)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        half = matrix.astype(np.float16)
        times: dict[str, list[float]] = {"einsum": [], "blas": [], "half": []}
        difference = 0.0
        same_top = 0
        for _ in range(args.rounds):
            vector = generator.standard_normal(384).astype(np.float32)
            vector /= np.linalg.norm(vector)
            started = time.perf_counter()
            by_loop = np.einsum("ij,j->i", matrix, vector)
            times["einsum"].append(time.perf_counter() - started)
            started = time.perf_counter()
            by_blas = matrix @ vector
            times["blas"].append(time.perf_counter() - started)
            started = time.perf_counter()
            by_half = half @ vector.astype(np.float16)
            times["half"].append(time.perf_counter() - started)
            difference = max(difference, float(np.abs(by_loop - by_blas).max()))
            same_top += np.array_equal(np.argsort(-by_blas)[:10], np.argsort(-by_half.astype(np.float32))[:10])
        loop, blas, halves = (statistics.median(times[k]) * 1000 for k in ("einsum", "blas", "half"))
        print(
            f"| {rows:,} | {loop:.2f} ms | {blas:.2f} ms | {difference:.1e} | {halves:.2f} ms | {same_top} of {args.rounds} |"
        )


if __name__ == "__main__":
    sys.exit(main())
