"""The DCGM exporter is installed where the gate reads it, and the gate may read it (issue 37):
on every cluster with a gated GPU pool (EKS through GpuAddons, GKE through the same chart with
GKE's driver directory), off by the stack's `gate.dcgm_exporter: false`; the gate's
pods/proxy Role in the exporter's namespace exactly where the exporter is; the image not the
distroless build that serves no Xid series (NVIDIA/dcgm-exporter#646, #700)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.k8s import DCGM_EXPORTER, GpuScheduling, PoolNodes, dcgm_exporter_values
from components.k8s._charts import DCGM_EXPORTER_IMAGE_TAG
from components.k8s._gate import wants_dcgm_exporter
from components.k8s._values import DCGM_COUNTERS_MOUNT, GKE_NVIDIA_DIR
from fleet.catalog import Taint, load_catalog
from fleet.gate import DCGM_EXPORTER_NAMESPACE
from fleet.model import Fleet
from fleet.rules.validate import validate_fleet
from fleet.spec.fields import Gate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "stacks" / "Pulumi.example.yaml"


def _raw() -> dict[str, Any]:
    from fleet.stack.read import read_stack_file

    return read_stack_file(str(EXAMPLE))


def _fleet(raw: dict[str, Any]) -> Fleet:
    return validate_fleet(raw, source="test")


def test_the_option_is_on_by_default_and_refuses_a_non_boolean() -> None:
    assert Gate().dcgm_exporter is True
    assert Gate.model_validate({"dcgm_exporter": False}).dcgm_exporter is False
    with pytest.raises(Exception, match="dcgm_exporter"):
        Gate.model_validate({"dcgm_exporter": "sometimes"})


def test_every_cluster_with_a_gated_gpu_pool_wants_it_and_the_stack_can_turn_it_off() -> None:
    raw = _raw()
    fleet = _fleet(copy.deepcopy(raw))
    gpu_gated = {c.name for c in fleet.spec.clusters
                 if any(p.gated and p.shape.kind == "gpu" for p in fleet.pools_in(c.name))}
    assert gpu_gated == {"ml-eks", "ml-gke"}, gpu_gated
    assert all(wants_dcgm_exporter(fleet, c) for c in gpu_gated)
    off = copy.deepcopy(raw)
    off.setdefault("gate", {})["dcgm_exporter"] = False  # the stack's top-level `gate:`
    off_fleet = _fleet(off)
    assert off_fleet.spec.gate.dcgm_exporter is False
    assert not any(wants_dcgm_exporter(off_fleet, c) for c in gpu_gated)


def test_a_cluster_whose_gpu_pools_all_opt_out_of_the_gate_gets_no_exporter() -> None:
    raw = _raw()
    fleet = _fleet(copy.deepcopy(raw))
    gpu = [p.name for p in fleet.pools if p.cluster.name == "ml-eks" and p.shape.kind == "gpu"]
    assert gpu
    for p in raw["pools"]:
        if p["name"] in gpu:
            p["gate"] = {"enabled": False, "reason": "a test: no gate on this pool"}
    opted = _fleet(raw)
    assert not wants_dcgm_exporter(opted, "ml-eks")
    assert wants_dcgm_exporter(opted, "ml-gke")  # the other cluster is untouched


def _scheduling() -> GpuScheduling:
    gpu = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
    return GpuScheduling(gpu_taint=gpu, gpu_node_label="cloud.google.com/gke-accelerator",
                         efa_label="", pools=(PoolNodes("a", {
                             "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}, (gpu,)),))


def test_the_image_is_the_releases_ubuntu_build_not_the_distroless_one() -> None:
    values = dcgm_exporter_values(_scheduling())
    assert values["image"] == {"tag": DCGM_EXPORTER_IMAGE_TAG}
    assert "distroless" not in DCGM_EXPORTER_IMAGE_TAG
    # the tag is the pinned chart's release (its appVersion 4.8.2), another build of it
    assert DCGM_EXPORTER_IMAGE_TAG.split("-")[1] == DCGM_EXPORTER.version
    # EKS: the driver is on the library path already, the chart's own mounts stay
    assert not {"extraHostVolumes", "extraVolumeMounts", "extraEnv",
                "securityContext"} & set(values)


def test_on_gke_the_driver_directory_is_mounted_and_the_counters_mount_is_kept() -> None:
    values = dcgm_exporter_values(_scheduling(), driver_dir=GKE_NVIDIA_DIR)
    assert values["extraHostVolumes"] == [{"name": "nvidia-install-dir-host",
                                           "hostPath": "/home/kubernetes/bin/nvidia"}]
    mounts = values["extraVolumeMounts"]
    # a list in the values replaces the chart's: its counters mount must be repeated, else
    # the exporter reads the image's default counters (no ECC, no retired pages)
    assert DCGM_COUNTERS_MOUNT in mounts
    assert {"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia",
            "readOnly": True} in mounts
    assert {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"} in \
        values["extraEnv"]
    # no NVIDIA runtime on GKE hands a container that requests no GPU the devices
    assert values["securityContext"] == {"privileged": True, "allowPrivilegeEscalation": True}


def test_the_counters_mount_is_the_charts_own() -> None:
    """DCGM_COUNTERS_MOUNT repeats the chart's `extraVolumeMounts` default (NVIDIA/
    dcgm-exporter tag 4.5.3-4.8.2 deployment/values.yaml), as recorded in the snapshot
    below: if a chart bump changes it, this says so."""
    chart_default = yaml.safe_load("""
- name: exporter-metrics-volume
  mountPath: /etc/dcgm-exporter/default-counters.csv
  subPath: default-counters.csv
""")
    assert [DCGM_COUNTERS_MOUNT] == chart_default


def test_the_gates_role_is_rendered_where_the_exporter_is_and_nowhere_else() -> None:
    from components.k8s._gate import GateControllerArgs, gate_objects

    def roles(ns: str | None) -> list[str]:
        return [o["metadata"]["namespace"] for o in gate_objects(GateControllerArgs(
            cluster="c", namespace="accelfleet-smoke", inventory={}, exporter_namespace=ns))
            if o["kind"] == "Role"]

    assert DCGM_EXPORTER_NAMESPACE in roles(DCGM_EXPORTER_NAMESPACE)
    assert DCGM_EXPORTER_NAMESPACE not in roles(None)
    assert DCGM_EXPORTER.namespace == DCGM_EXPORTER_NAMESPACE  # the release's = the Role's


def test_gke_scheduling_tolerates_each_gpu_pools_taints() -> None:
    from components.gcp._dcgm import gke_pool_taints, gke_scheduling

    fleet = _fleet(_raw())
    catalog = load_catalog()
    pools = [p for p in fleet.pools if p.cluster.name == "ml-gke"]
    s = gke_scheduling(pools, catalog)
    assert s is not None
    served = {p.name for p in s.gpu_pools()}
    assert served == {p.name for p in pools if p.shape.kind == "gpu"}, served
    values = dcgm_exporter_values(s, driver_dir=GKE_NVIDIA_DIR)
    keys = {t["key"] for t in values["tolerations"]}
    for p in pools:
        if p.shape.kind == "gpu":
            assert {t.key for t in gke_pool_taints(p, catalog)} <= keys
    assert gke_scheduling([p for p in pools if p.shape.kind != "gpu"], catalog) is None
