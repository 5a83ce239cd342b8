"""How many of the suite's tests start a process (an upstream server over stdio, a `toolscout`
command, a database, a browser; anything started through `subprocess.Popen`), and how many
processes the whole suite starts.

    python benchmarks/suite_processes.py                  # runs the suite once, then the table
    python benchmarks/suite_processes.py --from counts.json --from older.json   # tables only

A run sets TOOLSCOUT_COUNT_PROCESSES for the plugin in tests/support/process_count.py, which
writes test id -> processes started; a fixture shared by several tests counts toward the first.
The suite runs in one process here (`-n 0`): the plugin counts the process it runs in.
Give two count files to compare two versions of the suite side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def run_suite(out: Path, pytest_args: list[str]) -> None:
    env = {**os.environ, "TOOLSCOUT_COUNT_PROCESSES": str(out)}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *pytest_args], env=env, check=False)


def row(name: str, counts: dict[str, int]) -> str:
    tests = len(counts)
    starting = sum(1 for n in counts.values() if n)
    share = starting / tests if tests else 0.0
    return f"| {name} | {tests} | {starting} | {share:.1%} | {sum(counts.values())} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="sources", action="append", type=Path, default=[],
                        help="a count file written by an earlier run (repeatable); no run then")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (default: the whole suite)")
    args = parser.parse_args()
    sources = args.sources
    if not sources:
        out = Path(tempfile.mkdtemp(prefix="toolscout-processes-")) / "counts.json"
        run_suite(out, args.pytest_args)
        print(f"counts written to {out}", file=sys.stderr)
        sources = [out]
    print("| suite | tests | tests that start a process | share | processes started |")
    print("|---|---|---|---|---|")
    for source in sources:
        print(row(source.name, json.loads(source.read_text())))


if __name__ == "__main__":
    main()
