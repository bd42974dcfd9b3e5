"""The example stack's EKS pools, through the offline plan (the same program as `pulumi up`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.engine.plan import Plan, PlannedResource
from components.k8s import JOBSET, KUEUE
from tests.plans import planned

EXAMPLE = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.example.yaml"


@pytest.fixture(scope="module")
def plan() -> Plan:
    return planned(EXAMPLE)


def _pool(plan: Plan, name: str) -> dict[str, PlannedResource]:
    (component,) = [r for r in plan.of_type("accelfleet:aws:GpuNodeGroup") if r.name == name]
    return {r.type: r for r in plan.descendants(component.urn) if r.custom}


def test_p5_pool_in_plan(plan: Plan) -> None:
    res = _pool(plan, "p5-train")
    ng = res["aws:eks/nodeGroup:NodeGroup"].inputs
    lt = res["aws:ec2/launchTemplate:LaunchTemplate"].inputs
    assert ng["amiType"] == "AL2023_x86_64_NVIDIA"
    assert ng["instanceTypes"] == ["p5.48xlarge"]
    assert ng["scalingConfig"] == {"minSize": 2, "desiredSize": 2, "maxSize": 2}
    assert ng["labels"]["vpc.amazonaws.com/efa.present"] == "true"
    assert lt["metadataOptions"]["httpTokens"] == "required"
    nics: list[dict[str, Any]] = lt["networkInterfaces"]
    assert len(nics) == 32
    assert (nics[0]["interfaceType"], nics[0]["deviceIndex"]) == ("efa", 0)
    assert {(n["interfaceType"], n["deviceIndex"]) for n in nics[1:]} == {("efa-only", 1)}
    assert "groupName" in lt["placement"]
    (pg,) = [r for r in plan.of_type("aws:ec2/placementGroup:PlacementGroup")
             if r.name.endswith("-p5-train")]
    assert pg.inputs["strategy"] == "cluster"


def test_g6_pool_has_no_efa_and_no_placement_group(plan: Plan) -> None:
    res = _pool(plan, "g6-ci")
    lt = res["aws:ec2/launchTemplate:LaunchTemplate"].inputs
    assert "networkInterfaces" not in lt and "placement" not in lt
    assert "vpc.amazonaws.com/efa.present" not in res["aws:eks/nodeGroup:NodeGroup"].inputs[
        "labels"]
    assert not [r for r in plan.of_type("aws:ec2/placementGroup:PlacementGroup")
                if r.name.endswith("g6-ci")]


def test_device_plugins_in_plan(plan: Plan) -> None:
    releases = {r.inputs["chart"]: r.inputs for r in plan.of_type(
        "kubernetes:helm.sh/v3:Release") if r.name.startswith("ml-eks-")}
    # the device plugins, the DCGM exporter the gate reads (issue 37), and JobSet and Kueue
    # (every cluster's: tests/components/test_kueue)
    assert set(releases) == {"nvidia-device-plugin", "aws-efa-k8s-device-plugin",
                             "dcgm-exporter", JOBSET.ref, KUEUE.ref}
    efa = releases["aws-efa-k8s-device-plugin"]
    assert efa["values"]["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    # the GPU taint, and the gate's startup taint: a device plugin runs on unproven nodes (the
    # proof needs the devices it advertises; docs/gate.md)
    for values in (efa["values"], releases["nvidia-device-plugin"]["values"]):
        assert {t["key"] for t in values["tolerations"]} == {
            "nvidia.com/gpu", "startup-taint.cluster-autoscaler.kubernetes.io/accelfleet-gate"}


def test_kubeconfig_never_in_plan_in_clear(plan: Plan) -> None:
    (provider,) = [r for r in plan.of_type("pulumi:providers:kubernetes")
                   if r.name == "ml-eks-k8s"]
    assert provider.inputs["kubeconfig"] == "<secret>"


def test_plan_shows_the_eks_control_plane_cost(plan: Plan) -> None:
    """EKS bills every cluster $0.10 an hour in standard support, $0.60 in extended support
    (https://aws.amazon.com/eks/pricing/; AWS Containers blog, "Amazon EKS extended support for
    Kubernetes versions pricing"). Before issue 20 the plan costed pools only."""
    from cli.plan import render

    data = plan.to_dict()
    (plane,) = data["control_planes"]
    assert (plane["cluster"], plane["kubernetes_version"]) == ("ml-eks", "1.35")
    assert plane["usd_per_hour"] == 0.10 and plane["monthly_usd"] == 73.0
    text = render(plan)
    assert "control plane ml-eks: EKS 1.35, standard support until 2027-03-27, $0.10/hour, " \
        "~$73/month (platform)" in text
    assert "team platform (the system pools and the EKS control planes)" in text
