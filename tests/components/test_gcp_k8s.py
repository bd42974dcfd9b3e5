"""Every Kubernetes object the GCP components create: built-in kinds validated strict against
the Kubernetes schemas; GKE's multi-networking CRDs (no schema in kubernetes-validate) checked
for structure and for references to objects and VPCs that the plan creates."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from components.engine.plan import Plan
from components.gcp._k8s import nccl_installer, nri_device_injector
from components.gcp._pins import NCCL_INSTALLERS
from tests.plans import planned

FIXTURE = Path(__file__).parent / "fixtures" / "Pulumi.gcptest.yaml"
K8S_VERSION = "1.33"
CRD_GROUP = "networking.gke.io/v1"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"  # Helm values, not manifests: see test_jobset


@pytest.fixture(scope="module")
def plan() -> Plan:
    return planned(FIXTURE)


def manifest(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: inputs[k] for k in ("apiVersion", "kind", "metadata", "spec") if k in inputs}


def test_every_builtin_object_is_schema_valid(plan: Plan) -> None:
    # GPUDirect's objects (Kueue's and the team namespaces: tests/components/test_kueue.py;
    # the gate controller's: tests/components/test_gate_component.py)
    objs = [r for r in plan.resources if r.type.startswith("kubernetes:")
            and not r.type.startswith((f"kubernetes:{CRD_GROUP}", HELM_RELEASE,
                                       "kubernetes:kueue.x-k8s.io/",
                                       "kubernetes:core/v1:Namespace"))
            and "accelfleet:k8s:GateController$" not in r.urn]
    # an installer each for tcpx, tcpxo and rdma; one NRI injector for tcpx and tcpxo nodes
    assert sorted(o.inputs["metadata"]["name"] for o in objs) == [
        "device-injector", "nccl-rdma-installer", "nccl-tcpx-installer", "nccl-tcpxo-installer"]
    [nri] = [o.inputs for o in objs if o.inputs["metadata"]["name"] == "device-injector"]
    [term] = nri["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"][0]["values"] == ["nvidia-h100-80gb", "nvidia-h100-mega-80gb"]
    for o in objs:
        kubernetes_validate.validate(manifest(o.inputs), K8S_VERSION, strict=True)


@pytest.mark.parametrize("kind", sorted(NCCL_INSTALLERS))
def test_installer_manifests_are_valid_and_pinned(kind: str) -> None:
    for obj in (nccl_installer(kind, ["nvidia-h100-80gb"]),
                nri_device_injector(["nvidia-h100-80gb"])):
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        spec = obj["spec"]["template"]["spec"]
        for c in spec["containers"] + spec.get("initContainers", []):
            image = c["image"]
            tag = image.split("@")[0].rsplit(":", 1)
            assert "@sha256:" in image or (len(tag) == 2 and re.match(r"v?\d", tag[1])), image
            assert not image.endswith(":latest"), image


def test_gke_network_objects_reference_real_param_sets_and_vpcs(plan: Plan) -> None:
    crds = [manifest(r.inputs) for r in plan.resources
            if r.type.startswith(f"kubernetes:{CRD_GROUP}")]
    param_sets = {o["metadata"]["name"]: o for o in crds if o["kind"] == "GKENetworkParamSet"}
    networks = [o for o in crds if o["kind"] == "Network"]
    assert len(networks) == len(param_sets) == 8 + 9  # TCPX's vpc1..vpc4 are TCPXO's too
    vpcs = {r.inputs["name"] for r in plan.of_type("gcp:compute/network:Network")}
    subnets = {r.inputs["name"] for r in plan.of_type("gcp:compute/subnetwork:Subnetwork")}
    for o in crds:
        assert o["apiVersion"] == CRD_GROUP
        assert set(o) == {"apiVersion", "kind", "metadata", "spec"}
        assert re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", o["metadata"]["name"])
    for ps in param_sets.values():
        assert set(ps["spec"]) == {"vpc", "vpcSubnet", "deviceMode"}
        assert ps["spec"]["deviceMode"] in ("NetDevice", "RDMA")
        assert ps["spec"]["vpc"] in vpcs and ps["spec"]["vpcSubnet"] in subnets
    for n in networks:
        assert n["spec"]["type"] == "Device"
        ref = n["spec"]["parametersRef"]
        assert ref == {"group": "networking.gke.io", "kind": "GKENetworkParamSet",
                       "name": n["metadata"]["name"]}
        assert ref["name"] in param_sets
    modes = [ps["spec"]["deviceMode"] for name, ps in param_sets.items()
             if name.startswith("rdma-")]
    assert modes.count("RDMA") == 8 and param_sets["gvnic-1"]["spec"]["deviceMode"] == "NetDevice"
