#!/usr/bin/env bash
# Builds the MCP Bundle of toolscout, dist/toolscout-<version>.mcpb, and checks it with the bundle
# tool's own validator: Claude Desktop (and other hosts that read .mcpb) installs it in one click.
#   bash scripts/build_mcpb.sh
# The bundle is of MCP Bundles' `server.type: "uv"`: it carries toolscout's source and
# pyproject.toml, and the host runs it with `uv run`, which installs the dependencies on first start.
# Needs node's npx (the bundle tool, @anthropic-ai/mcpb, comes from npm at the version pinned below).
set -euo pipefail
cd "$(dirname "$0")/.."
MCPB=(npx --yes "@anthropic-ai/mcpb@2.1.2")
VERSION="$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
if ! grep -q "\"version\": \"$VERSION\"" bundle/manifest.json; then
    echo "build_mcpb: bundle/manifest.json does not give version $VERSION (pyproject.toml's); update it" >&2
    exit 1
fi
STAGE="build/mcpb"
rm -rf "$STAGE" && mkdir -p "$STAGE" dist
cp bundle/manifest.json pyproject.toml README.md "$STAGE/"
# -L: src/toolscout/data/default.json is a symlink into registry/; the bundle carries the file.
cp -RL src "$STAGE/src"
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
"${MCPB[@]}" validate "$STAGE/manifest.json"
"${MCPB[@]}" pack "$STAGE" "dist/toolscout-$VERSION.mcpb"
echo "build_mcpb: dist/toolscout-$VERSION.mcpb" >&2
