"""deploy/: the docker-compose example and the Kubernetes manifests parse, and say what toolscout
understands (they cannot be run here): every command line parses with toolscout's own parser,
probes and metrics name the routes the HTTP server answers, the environment names the variables
toolscout reads, and the example registry loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from toolscout.cli import build_parser
from toolscout.registry.loading import load_registries
from toolscout.serving.http import AUTH_TOKEN_VARIABLE
from toolscout.serving.operations import LIVENESS_PATH, METRICS_PATH, READINESS_PATH
from toolscout.state import STATE_ENV

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def entrypoint() -> list[str]:
    lines = (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines()
    [line] = [line for line in lines if line.startswith("ENTRYPOINT ")]
    return json.loads(line.removeprefix("ENTRYPOINT "))


def parses(args: list[str]) -> Any:
    command = entrypoint()
    assert command[0] == "toolscout"
    return build_parser().parse_args([*command[1:], *args])


def manifests() -> dict[str, dict[str, Any]]:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "toolscout.yaml").read_text(encoding="utf-8")))
    assert all({"apiVersion", "kind", "metadata"} <= set(document) for document in documents)
    return {document["kind"]: document for document in documents}


def test_the_compose_example_runs_replicas_over_postgres_with_toolscouts_own_options() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text(encoding="utf-8"))
    gateway = compose["services"]["toolscout"]
    args = parses(gateway["command"])
    assert args.transport == "http" and args.host == "0.0.0.0"
    assert str(args.registry[0]) in {volume.split(":")[1] for volume in gateway["volumes"]}
    assert gateway["environment"][STATE_ENV].startswith("postgresql://")
    assert AUTH_TOKEN_VARIABLE in gateway["environment"]
    assert READINESS_PATH in " ".join(gateway["healthcheck"]["test"])
    assert gateway["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert load_registries([DEPLOY / "servers.json"])


def test_the_kubernetes_manifests_probe_and_scrape_the_routes_the_server_answers() -> None:
    kinds = manifests()
    assert set(kinds) == {"ConfigMap", "Deployment", "Service", "ServiceMonitor"}
    [container] = kinds["Deployment"]["spec"]["template"]["spec"]["containers"]
    args = parses(container["args"])
    assert args.transport == "http" and "toolscout" in args.allowed_host
    assert container["readinessProbe"]["httpGet"]["path"] == READINESS_PATH
    assert container["livenessProbe"]["httpGet"]["path"] == LIVENESS_PATH
    assert {item["name"] for item in container["env"]} == {STATE_ENV, AUTH_TOKEN_VARIABLE}
    assert container["ports"][0]["containerPort"] == args.port
    [endpoint] = kinds["ServiceMonitor"]["spec"]["endpoints"]
    assert endpoint["path"] == METRICS_PATH
    registry = json.loads(kinds["ConfigMap"]["data"]["servers.json"])
    assert registry == json.loads((DEPLOY / "servers.json").read_text(encoding="utf-8"))
    selector = kinds["Service"]["spec"]["selector"]
    assert selector.items() <= kinds["Deployment"]["spec"]["template"]["metadata"]["labels"].items()
