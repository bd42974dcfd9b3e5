"""Issue 35, deployable as shipped, through Pulumi's mocks: each cluster's gate controller gets
its own PriorityClass (not system-cluster-critical: fleet/gate.py says why) and a
PodDisruptionBudget that lets a drain move one replica at a time and is never held by a replica
that is not ready; the stack's `gate.image_pull_secrets` become the Deployment's
`imagePullSecrets` and its `--image-pull-secret` arguments, which `gate run` takes. Every object
valid against the Kubernetes schemas (strict); the real API server's word on them is
tests/controlplane/test_gate_pull_secrets_real.py."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from components.engine.plan import Plan, run_plan
from components.k8s import GateControllerArgs, gate_objects
from components.k8s._gate import controller_args
from fleet import gate as G
from tests.components.test_gate_component import IMAGE, K8S_VERSION, STACK

SECRETS = ["ghcr-pull", "mirror.example.com"]


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    text = STACK.replace('gate: {image: "' + IMAGE + '", replicas: 3}',
                         'gate: {image: "' + IMAGE + '", replicas: 3, image_pull_secrets: '
                         f'[{", ".join(SECRETS)}]}}')
    assert "image_pull_secrets" in text
    path = tmp_path_factory.mktemp("pull") / "Pulumi.pull.yaml"
    path.write_text(text, encoding="utf-8")
    return run_plan(path)


def _objects(plan: Plan, cluster: str) -> dict[str, dict[str, Any]]:
    out = {}
    for r in plan.resources:
        if r.name.startswith(f"{cluster}-gate-") and r.type.startswith("kubernetes:"):
            out[r.inputs["kind"]] = dict(r.inputs)
    return out


@pytest.mark.parametrize("cluster", ["c1", "e1"])
def test_each_controller_has_its_priority_class_and_disruption_budget(plan: Plan,
                                                                      cluster: str) -> None:
    objs = _objects(plan, cluster)
    deployment, budget, priority = (objs["Deployment"], objs["PodDisruptionBudget"],
                                    objs["PriorityClass"])
    for obj in (deployment, budget, priority):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == priority["metadata"]["name"] == \
        G.CONTROLLER_PRIORITY_CLASS
    assert not priority["metadata"]["name"].startswith("system-")  # a user class's name
    assert 0 < priority["value"] <= 1_000_000_000 and priority["globalDefault"] is False
    assert "preemptionPolicy" not in priority  # the default: PreemptLowerPriority
    spec = budget["spec"]
    assert spec["selector"] == deployment["spec"]["selector"]
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    # one replica at a time, whatever `replicas` is: never minAvailable, never 0
    assert spec["maxUnavailable"] == 1 and "minAvailable" not in spec
    assert spec["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


@pytest.mark.parametrize("cluster", ["c1", "e1"])
def test_the_pull_secrets_reach_the_pods_and_the_proofs(plan: Plan, cluster: str) -> None:
    pod = _objects(plan, cluster)["Deployment"]["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": n} for n in SECRETS]
    args = pod["containers"][0]["args"]
    assert [args[i + 1] for i, a in enumerate(args) if a == "--image-pull-secret"] == SECRETS


def test_no_secrets_no_field_and_the_arguments_are_what_gate_run_takes() -> None:
    args = GateControllerArgs(cluster="c1", namespace="accelfleet-smoke",
                              inventory={"pools": []})
    pod = next(o for o in gate_objects(args) if o["kind"] == "Deployment")[
        "spec"]["template"]["spec"]
    assert "imagePullSecrets" not in pod
    from typer.main import get_command

    from cli.main import app

    run = get_command(app).commands["gate"].commands["run"]  # type: ignore[attr-defined]
    known = {opt for p in run.params for opt in p.opts}
    flags = [a for a in controller_args("c1", "ns", ("s1",)) if a.startswith("--")]
    assert set(flags) <= known, set(flags) - known
