"""The DCGM exporter's DaemonSet as the pinned chart renders it from our values (EKS and GKE)
is accepted by the real API server (server-side dry-run, strict fields). Helm releases are
not dry-run by the plan's suite (tests/controlplane/_dry_run.SKIPPED_KINDS), so the parts our
values change are rendered here the way the chart's template does (NVIDIA/dcgm-exporter tag
4.5.3-4.8.2, commit 691c9276, deployment/templates/daemonset.yaml and values.yaml, read
2026-11-28): Helm merges a values map over the chart's (its `securityContext` below), and a
values list replaces the chart's.

What the real API server found: on GKE the container must be privileged (no NVIDIA runtime
hands it the devices), and privileged over the chart's `allowPrivilegeEscalation: false` is
refused ("cannot set `allowPrivilegeEscalation` to false and `privileged` to true"): the
GKE values set both."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.k8s import GpuScheduling, PoolNodes, dcgm_exporter_values
from components.k8s._values import GKE_NVIDIA_DIR
from fleet.catalog import Taint
from fleet.gate import DCGM_EXPORTER_NAMESPACE, DCGM_EXPORTER_PORT, DCGM_EXPORTER_PORT_NAME
from tests.controlplane._dry_run import dry_run, ensure_namespaces, refusal
from tests.controlplane._plane import ControlPlane
from tests.controlplane._rest import Rest, RestError

pytestmark = pytest.mark.controlplane

# the chart's defaults that our values merge into or stand beside (values.yaml, 4.8.2)
CHART_SECURITY_CONTEXT = {"runAsNonRoot": False, "runAsUser": 0,
                          "capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]},
                          "allowPrivilegeEscalation": False}
CHART_VOLUME_MOUNTS = [{"name": "exporter-metrics-volume",
                        "mountPath": "/etc/dcgm-exporter/default-counters.csv",
                        "subPath": "default-counters.csv"}]
CHART_CONFIGMAP_VOLUMES = [{"name": "exporter-metrics-volume", "configMap": {
    "name": "exporter-metrics-config-map",
    "items": [{"key": "metrics", "path": "default-counters.csv"}]}}]
REPOSITORY = "nvcr.io/nvidia/k8s/dcgm-exporter"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of a values map over the chart's: maps deeply, anything else replaced."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) \
            else v
    return out


def rendered(values: dict[str, Any]) -> dict[str, Any]:
    """The chart's DaemonSet, the parts the values reach, as its template renders them."""
    labels = {"app.kubernetes.io/name": "dcgm-exporter",
              "app.kubernetes.io/instance": "dcgm-exporter"}
    pod: dict[str, Any] = {
        "affinity": values["affinity"], "tolerations": values["tolerations"],
        "volumes": [{"name": "pod-gpu-resources",
                     "hostPath": {"path": "/var/lib/kubelet/pod-resources"}},
                    *({"name": v["name"], "hostPath": {"path": v["hostPath"]}}
                      for v in values.get("extraHostVolumes", [])),
                    *CHART_CONFIGMAP_VOLUMES],
        "containers": [{
            "name": "exporter",
            "securityContext": _merge(CHART_SECURITY_CONTEXT,
                                      values.get("securityContext", {})),
            "image": f"{REPOSITORY}:{values['image']['tag']}",
            "args": ["-f", "/etc/dcgm-exporter/default-counters.csv"],
            "env": [{"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                    {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
                    {"name": "NODE_NAME",
                     "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    *values.get("extraEnv", [])],
            "ports": [{"name": DCGM_EXPORTER_PORT_NAME, "containerPort": DCGM_EXPORTER_PORT}],
            "volumeMounts": [{"name": "pod-gpu-resources", "readOnly": True,
                              "mountPath": "/var/lib/kubelet/pod-resources"},
                             *values.get("extraVolumeMounts", CHART_VOLUME_MOUNTS)]}]}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "dcgm-exporter", "namespace": DCGM_EXPORTER_NAMESPACE},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


def _scheduling() -> GpuScheduling:
    gpu = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
    gate = Taint(key="startup-taint.cluster-autoscaler.kubernetes.io/accelfleet-gate",
                 value="unproven", effect="NoSchedule")
    return GpuScheduling(gpu_taint=gpu, gpu_node_label="cloud.google.com/gke-accelerator",
                         efa_label="", pools=(PoolNodes("a", {
                             "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
                             (gpu, gate)),))


@pytest.fixture(scope="module")
def rest(control_plane: ControlPlane) -> Iterator[Rest]:
    out = Rest(control_plane.client())
    ensure_namespaces(out, {DCGM_EXPORTER_NAMESPACE})
    yield out


@pytest.mark.parametrize("driver_dir", [None, GKE_NVIDIA_DIR], ids=["eks", "gke"])
def test_the_api_server_accepts_the_exporters_daemonset(rest: Rest,
                                                        driver_dir: str | None) -> None:
    body = rendered(dcgm_exporter_values(_scheduling(), driver_dir=driver_dir))
    try:
        answer = dry_run(rest, body)
    except RestError as exc:
        pytest.fail(refusal(exc))
    container = answer["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"][0]["name"] == DCGM_EXPORTER_PORT_NAME  # what the gate reads
    if driver_dir is not None:
        assert container["securityContext"]["privileged"] is True
        assert {"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia",
                "readOnly": True} in container["volumeMounts"]


def test_privileged_over_the_charts_own_escalation_setting_is_refused(rest: Rest) -> None:
    """The instance the GKE values guard against: privileged alone, merged over the chart's
    allowPrivilegeEscalation false, is refused by the real API server."""
    values = dcgm_exporter_values(_scheduling(), driver_dir=GKE_NVIDIA_DIR)
    values["securityContext"] = {"privileged": True}
    with pytest.raises(RestError) as refused:
        dry_run(rest, rendered(values))
    assert refused.value.status == 422, refusal(refused.value)
    assert "allowPrivilegeEscalation" in refusal(refused.value)
