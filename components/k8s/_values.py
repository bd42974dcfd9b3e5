"""Helm values for the GPU add-ons, built as plain data (pure functions, no Pulumi).

Only the scheduling parts vary: which nodes a DaemonSet may run on and which taints it
tolerates. `scheduling_pod` wraps those parts in a Pod so tests can check them against the
Kubernetes PodSpec schema.

Tolerations follow the pools a DaemonSet serves: the GPU taint, then every taint those pools
add. The references tolerate the GPU taint only (NVIDIA/k8s-device-plugin's chart
`tolerations`, NVIDIA/gpu-operator's `daemonsets.tolerations`: `nvidia.com/gpu` Exists
NoSchedule) and expect the operator to list any other taint; a blanket `operator: Exists` would
also keep the plugins on nodes that are being drained (NoExecute), so we list them instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from components.k8s._charts import DCGM_EXPORTER_IMAGE_TAG
from fleet.catalog import Taint

SCHEDULING_KEYS = ("nodeSelector", "affinity", "tolerations")
EFA_PRESENT = "true"


@dataclass(frozen=True)
class PoolNodes:
    """The nodes of one accelerator pool as the add-ons see them: their labels and taints
    (the GPU taint included)."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class GpuScheduling:
    """Where GPU add-ons run.

    gpu_taint: the taint every GPU node carries (from the catalog).
    gpu_node_label: a label every GPU node of the fleet carries (any value).
    plugin_excluded: label -> values of nodes whose OS already runs the NVIDIA device plugin
        (Bottlerocket NVIDIA builds it in), where a second copy must not run.
    efa_label: the label EFA nodes carry with value "true".
    pools: the cluster's accelerator pools; their taints become the add-ons' tolerations.
    """

    gpu_taint: Taint
    gpu_node_label: str
    efa_label: str
    plugin_excluded: Mapping[str, Sequence[str]] = field(default_factory=dict)
    pools: tuple[PoolNodes, ...] = ()

    def gpu_pools(self, *, exclude: bool = False) -> list[PoolNodes]:
        """Pools whose nodes match `_gpu_affinity(exclude=...)`."""
        return [p for p in self.pools if self.gpu_node_label in p.labels and not (
            exclude and any(p.labels.get(k) in v for k, v in self.plugin_excluded.items()))]

    def efa_pools(self) -> list[PoolNodes]:
        return [p for p in self.pools if p.labels.get(self.efa_label) == EFA_PRESENT]


def _gpu_affinity(s: GpuScheduling, *, exclude: bool) -> dict[str, Any]:
    expressions: list[dict[str, Any]] = [{"key": s.gpu_node_label, "operator": "Exists"}]
    if exclude:
        expressions += [{"key": k, "operator": "NotIn", "values": list(v)}
                        for k, v in sorted(s.plugin_excluded.items())]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}


def _tolerations(s: GpuScheduling, pools: Sequence[PoolNodes]) -> list[dict[str, str]]:
    """The GPU taint, then each other taint of `pools` once, in a stable order."""
    extra = {t for p in pools for t in p.taints if t != s.gpu_taint}
    ordered = sorted(extra, key=lambda t: (t.key, t.value, t.effect))
    return [s.gpu_taint.as_toleration()] + [t.as_toleration() for t in ordered]


def nvidia_device_plugin_values(s: GpuScheduling) -> dict[str, Any]:
    """NVIDIA device plugin with GPU feature discovery, on GPU nodes without a built-in plugin."""
    served = s.gpu_pools(exclude=True)
    scheduling = {"affinity": _gpu_affinity(s, exclude=True),
                  "tolerations": _tolerations(s, served)}
    return {
        **scheduling,
        "gfd": {"enabled": True},
        # Node feature discovery (GFD's dependency) runs its worker on every GPU node too.
        "nfd": {"worker": {"tolerations": _tolerations(s, s.gpu_pools())}},
    }


def efa_device_plugin_values(s: GpuScheduling) -> dict[str, Any]:
    """AWS EFA device plugin on EFA nodes only: elsewhere it finds no device and crash-loops.

    The chart requires node affinity to `supportedInstanceLabels` (by default an instance-type
    list, which lags new EFA types); we point it at the label accelfleet puts on EFA nodes.
    """
    return {
        "nodeSelector": {s.efa_label: EFA_PRESENT},
        "supportedInstanceLabels": {"keys": [s.efa_label], "values": [EFA_PRESENT]},
        "tolerations": _tolerations(s, s.efa_pools()),
    }


def dcgm_counters() -> str:
    """Our DCGM exporter counters (components/k8s/data/dcgm-counters.csv): the chart's default
    list with the ECC, retired-page and NVLink error families on, which the gate judges between
    proofs (smoke.gate._exporter) and which the chart's default list leaves commented out."""
    from importlib import resources

    return resources.files("components.k8s").joinpath("data", "dcgm-counters.csv").read_text(
        encoding="utf-8")


# The chart's own counters mount (values `extraConfigMapVolumes`/`extraVolumeMounts`, 4.8.2): a
# list in the values replaces the chart's, so the driver mount on GKE repeats this one.
DCGM_COUNTERS_MOUNT = {"name": "exporter-metrics-volume",
                       "mountPath": "/etc/dcgm-exporter/default-counters.csv",
                       "subPath": "default-counters.csv"}
# GKE installs the NVIDIA driver on the node under /home/kubernetes/bin/nvidia (COS and Ubuntu
# node images), not where the exporter's NVML loader looks: Google's DCGM exporter manifest
# for GKE mounts it at /usr/local/nvidia and sets LD_LIBRARY_PATH=/usr/local/nvidia/lib64
# (GoogleCloudPlatform/prometheus-engine examples/nvidia-dcgm/exporter.yaml, commit
# 03303ccc7e3f9c13bf05781cb91cfae1508818d1, read 2026-11-28).
GKE_NVIDIA_DIR = "/home/kubernetes/bin/nvidia"
NVIDIA_MOUNT_DIR = "/usr/local/nvidia"
# ... and runs it privileged: GKE's nodes have no NVIDIA container runtime to hand a container
# that requests no GPU the /dev/nvidia* devices (EKS's GPU AMIs do, from the image's
# NVIDIA_VISIBLE_DEVICES), and the exporter requests none (same manifest). Helm merges these
# keys over the chart's `securityContext` (runAsUser 0, SYS_ADMIN, allowPrivilegeEscalation
# false); the API server refuses privileged with allowPrivilegeEscalation false, so both are set.
GKE_SECURITY_CONTEXT = {"privileged": True, "allowPrivilegeEscalation": True}


def dcgm_exporter_values(s: GpuScheduling, *, driver_dir: str | None = None
                         ) -> dict[str, Any]:
    """DCGM exporter (GPU metrics for Prometheus) on every GPU node, with our counters: the
    chart (4.8.2) renders `customMetrics` into its exporter-metrics-config-map, mounted over
    /etc/dcgm-exporter/default-counters.csv, the file its default `arguments` (-f) read
    (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 deployment/values.yaml, templates/
    metrics-configmap.yaml; read 2026-11-28). The image is the release's ubuntu22.04 build, not
    the chart's distroless default (components.k8s._charts.DCGM_EXPORTER_IMAGE_TAG says why).
    `driver_dir`: where the node keeps the NVIDIA driver when it is not on the exporter's
    library path (GKE: GKE_NVIDIA_DIR), mounted at /usr/local/nvidia, the container then
    privileged (GKE_SECURITY_CONTEXT)."""
    values: dict[str, Any] = {"affinity": _gpu_affinity(s, exclude=False),
                              "tolerations": _tolerations(s, s.gpu_pools()),
                              "image": {"tag": DCGM_EXPORTER_IMAGE_TAG},
                              "customMetrics": dcgm_counters()}
    if driver_dir is not None:
        values |= {
            "extraHostVolumes": [{"name": "nvidia-install-dir-host", "hostPath": driver_dir}],
            "extraVolumeMounts": [dict(DCGM_COUNTERS_MOUNT),
                                  {"name": "nvidia-install-dir-host",
                                   "mountPath": NVIDIA_MOUNT_DIR, "readOnly": True}],
            "extraEnv": [{"name": "LD_LIBRARY_PATH", "value": f"{NVIDIA_MOUNT_DIR}/lib64"}],
            "securityContext": dict(GKE_SECURITY_CONTEXT)}
    return values


def scheduling_pod(values: Mapping[str, Any], name: str = "scheduling-check") -> dict[str, Any]:
    """The scheduling parts of Helm values as a Pod, for validation against the PodSpec."""
    spec: dict[str, Any] = {"containers": [{"name": name, "image": "registry.k8s.io/pause:3.10"}]}
    spec.update({k: values[k] for k in SCHEDULING_KEYS if k in values})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def jobset_controller_values(image_repository: str, image_tag: str,
                             accelerator_label: str,
                             node_selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    """JobSet controller: the pinned image; kept off accelerator nodes.

    No tolerations: the controller runs on the cluster's untainted nodes, never on a GPU or
    TPU node. The node affinity says so explicitly (every accelfleet accelerator node carries
    `accelerator_label`), so a pool that loses its taint still does not host it. Resources stay
    the chart's (requests 500m CPU / 128Mi, limits 2 CPU / 4Gi; upstream asks for a node with
    2+ CPUs and 512+ MB free). With `node_selector` (the system pool's label), it stays off
    the user's untainted CPU pools too, as Kueue's controller does.
    """
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": accelerator_label, "operator": "DoesNotExist"}]}]}}}
    controller: dict[str, Any] = {"affinity": affinity}
    if node_selector:  # the system pool (chart v0.12.0 values `controller.nodeSelector`)
        controller["nodeSelector"] = dict(node_selector)
    return {
        "image": {"repository": image_repository, "tag": image_tag,
                  "pullPolicy": "IfNotPresent"},
        "controller": controller,
    }
