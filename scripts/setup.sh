#!/usr/bin/env bash
# Creates .venv beside the repo's pyproject.toml and installs toolscout with its test tools.
# Idempotent: a second run only checks that everything is in place.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "toolscout setup: creating .venv" >&2
    "$PYTHON" -m venv .venv
fi
# The CPU build of torch; a bare `torch` requirement would pull a multi-GB CUDA build.
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    echo "toolscout setup: installing torch (CPU build)" >&2
    .venv/bin/pip install --quiet --disable-pip-version-check "torch==2.13.0"
fi
echo "toolscout setup: installing toolscout and its dependencies" >&2
.venv/bin/pip install --quiet --disable-pip-version-check -e ".[dev]"
echo "toolscout setup: done (.venv/bin/toolscout)" >&2
