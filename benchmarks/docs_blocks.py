"""Generated blocks in markdown docs, and the machine line every recorded table carries."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path


def update_block(path: Path, name: str, block: str) -> None:
    """Replace the text between `<!-- NAME begin -->` and `<!-- NAME end -->` (append if absent)."""
    begin, end = f"<!-- {name} begin -->", f"<!-- {name} end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    fresh = f"{begin}\n{block}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _: fresh, text) if pattern.search(text) else f"{text.rstrip()}\n\n{fresh}\n"
    path.write_text(text, encoding="utf-8")


def publish(block: str, docs: Path | None, name: str) -> None:
    """Print a script's table, and rewrite its block in `docs` when given (`--update-docs`)."""
    print(block)
    if docs:
        update_block(docs, name, block)


def revision() -> str:
    """The commit the measured code is at, `-dirty` when the working tree differs from it."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    return out.stdout.strip()


# The widest vector extension decides how fast int8 ONNX inference runs (VNNI has int8 dot products),
# and hosts of the same "model name" differ in it.
_VECTOR_FLAGS = ("avx512_vnni", "avx_vnni", "avx512f", "avx2")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    vector = next((flag for flag in _VECTOR_FLAGS if flag in flags), None)
    cpu = f"{cpu} ({vector})" if vector else cpu
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"
