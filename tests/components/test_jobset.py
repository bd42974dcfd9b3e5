"""The JobSet controller: one pinned Helm release on every cluster (GKE and EKS, TPU or GPU),
none for Cloud TPU VMs; its Helm values checked against the PodSpec schema."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pulumi
import pytest

from components.engine.plan import Plan, PlannedResource, run_plan
from components.k8s import (
    JOBSET,
    JOBSET_IMAGE_REPOSITORY,
    JOBSET_IMAGE_TAG,
    JobSetController,
    JobSetControllerArgs,
    jobset_controller_values,
    scheduling_pod,
)
from fleet.model import ACCELERATOR_LABEL
from fleet.stack.read import EXAMPLE_STACK
from tests.plan_tree import cluster_of
from tests.plans import planned

FIXTURE = Path(__file__).parent / "fixtures" / "Pulumi.gcptest.yaml"
RELEASE = "kubernetes:helm.sh/v3:Release"
COMPONENT = "accelfleet:k8s:JobSetController"
K8S_VERSION = "1.33"
OCI_REF = "oci://registry.k8s.io/jobset/charts/jobset"

# Two GKE clusters (one with a single-host TPU pool, one with GPUs only) and a TPU VM pool.
MIXED = """\
config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-test-proj, region: us-central1}
    clusters:
      - {name: tpus, cloud: gcp, network: {cidr: 10.10.0.0/16}}
      - {name: gpus, cloud: gcp, network: {cidr: 10.20.0.0/16, pods_cidr: 10.128.0.0/14,
         services_cidr: 10.112.0.0/20}}
    teams:
      - name: ml
    pools:
      - {name: v6e, cluster: tpus, team: ml, accelerator: v6e 2x2, zone: us-central1-b}
      - {name: l4, cluster: gpus, team: ml, accelerator: g2-standard-12, nodes: 1,
         zone: us-central1-a}
      - {name: v5e-vm, runtime: tpu-vm, team: ml, accelerator: v5e, topology: 2x2,
         zone: us-central1-a}
"""
# Cloud TPU VMs only: no Kubernetes cluster at all.
TPU_VM_ONLY = """\
config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-test-proj, region: us-central1}
    teams:
      - name: ml
    pools:
      - {name: v5e-vm, runtime: tpu-vm, team: ml, accelerator: v5e, topology: 2x2,
         zone: us-central1-a}
"""


def jobset_releases(plan: Plan) -> list[PlannedResource]:
    return [r for r in plan.of_type(RELEASE) if r.inputs["chart"] == OCI_REF]



def plan_of(tmp_path: Path, text: str, stack: str) -> Plan:
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(text)
    return run_plan(path)


# -- in the plan ----------------------------------------------------------------------------
def test_gke_cluster_with_tpu_pools_gets_one_pinned_release() -> None:
    plan = planned(FIXTURE)
    [release] = jobset_releases(plan)
    inputs = release.inputs
    assert inputs["version"] == JOBSET.version == "0.12.0"
    assert inputs["namespace"] == JOBSET.namespace == "jobset-system"
    assert inputs["name"] == "jobset"
    assert inputs["createNamespace"] is True
    assert inputs["atomic"] is True
    assert "repositoryOpts" not in inputs  # an OCI chart is addressed by its full reference
    assert inputs["values"]["image"] == {"repository": "registry.k8s.io/jobset/jobset",
                                         "tag": "v0.12.0", "pullPolicy": "IfNotPresent"}
    assert cluster_of(plan, release) == "c1"
    assert release.provider is not None and release.provider.endswith("::c1-k8s")
    parent = plan.by_urn()[release.parent or ""]
    assert (parent.type, parent.name) == (COMPONENT, "c1")


def test_every_cluster_gets_it_gpu_only_ones_too_and_tpu_vms_never(tmp_path: Path) -> None:
    """GPU clusters get JobSet as well: Cluster Toolkit installs it on its GPU clusters
    (examples/gke-a3-megagpu, gke-a3-ultragpu, gke-a4), and Kueue queues multi-node GPU jobs
    as JobSets too."""
    plan = plan_of(tmp_path, MIXED, "mixed")
    assert sorted(c.name for c in plan.of_type("accelfleet:gcp:Cluster")) == ["gpus", "tpus"]
    assert plan.of_type("gcp:tpu/v2Vm:V2Vm")
    assert sorted(cluster_of(plan, r) for r in jobset_releases(plan)) == ["gpus", "tpus"]
    assert sorted(c.name for c in plan.of_type(COMPONENT)) == ["gpus", "tpus"]


def test_tpu_vm_only_fleet_gets_none(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, TPU_VM_ONLY, "tpuvms")
    assert plan.of_type("gcp:tpu/v2Vm:V2Vm")  # the TPU VM is there, the controller is not
    assert not plan.of_type(COMPONENT)
    assert not plan.of_type(RELEASE)


def test_example_stack_installs_it_on_both_clusters() -> None:
    plan = planned(EXAMPLE_STACK)
    assert sorted(cluster_of(plan, r) for r in jobset_releases(plan)) == ["ml-eks", "ml-gke"]
    eks = [r.inputs["chart"] for r in plan.of_type(RELEASE) if cluster_of(plan, r) == "ml-eks"]
    assert sorted(eks) == ["aws-efa-k8s-device-plugin", "dcgm-exporter",
                           "nvidia-device-plugin", OCI_REF,
                           "oci://registry.k8s.io/kueue/charts/kueue"]


# -- the values and the pin -------------------------------------------------------------------
def test_controller_stays_off_accelerator_nodes_without_tolerations() -> None:
    values = jobset_controller_values(JOBSET_IMAGE_REPOSITORY, JOBSET_IMAGE_TAG,
                                      ACCELERATOR_LABEL)
    controller = values["controller"]
    assert "tolerations" not in controller
    assert "nodeSelector" not in controller
    [term] = controller["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": ACCELERATOR_LABEL, "operator": "DoesNotExist"}]}
    kubernetes_validate.validate(scheduling_pod(controller), K8S_VERSION, strict=True)


def test_chart_and_image_are_pinned() -> None:
    assert JOBSET.oci and JOBSET.ref == OCI_REF
    assert re.fullmatch(r"\d+\.\d+\.\d+", JOBSET.version)
    # An exact release tag (optionally with a digest), never a moving one such as `main`.
    assert re.fullmatch(r"v\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?", JOBSET_IMAGE_TAG)
    assert JOBSET_IMAGE_TAG.split("@")[0] == f"v{JOBSET.version}"
    assert JOBSET_IMAGE_REPOSITORY.startswith("registry.k8s.io/")


# -- the component alone, under mocks ---------------------------------------------------------
class _Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: list[Any] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], None]:
        return {}, None


@pytest.mark.parametrize("label", [ACCELERATOR_LABEL, "example.com/accelerator"])
def test_component_registers_one_release(label: str) -> None:
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, preview=False)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def run() -> Any:
        controller = JobSetController("c", JobSetControllerArgs(accelerator_label=label))
        return controller.release.urn

    run()
    [release] = [r for r in mocks.resources if r.typ == RELEASE]
    assert release.name == "c-jobset"
    assert release.inputs["chart"] == OCI_REF
    assert release.inputs["version"] == JOBSET.version
    assert release.inputs["namespace"] == JOBSET.namespace
    exprs = release.inputs["values"]["controller"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"]
    assert exprs == [{"key": label, "operator": "DoesNotExist"}]
