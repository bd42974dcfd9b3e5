"""NVIDIA's DCGM exporter on a GKE cluster's GPU nodes, for the gate to read between proofs.

Why NVIDIA's chart and not GKE's own DCGM metrics: GKE's managed DCGM package sends its
metrics to Cloud Monitoring through Google's managed collection; its counter set is Google's
and its pods are Google's (a namespace of GKE's own), neither of which the stack can pin or
whose labels and ports a public page we could read names (searched 2026-11-28: the GKE page
"Collect and view DCGM metrics" is linked from Google Cloud Managed Service for Prometheus'
"NVIDIA Data Center GPU Manager (DCGM)" exporter page,
https://cloud.google.com/stackdriver/docs/managed-prometheus/exporters/nvidia-dcgm, but its
text is not in the stored corpus). The same chart as on EKS means one counters file (with the
ECC, retired-page and NVLink families the gate judges), one namespace and one pod selector
(fleet.gate DCGM_EXPORTER_*) on both clouds, so the gate finds the pods the same way.

What differs on GKE: the driver lives on the node under /home/kubernetes/bin/nvidia
(components.k8s.GKE_NVIDIA_DIR, as Google's own exporter manifest for GKE mounts it),
the container runs privileged as in that manifest (GKE_SECURITY_CONTEXT: no NVIDIA container
runtime gives it the devices), GKE runs its own NVIDIA device plugin (no second copy), and no
EFA.
"""

from __future__ import annotations

import pulumi

from components.k8s import GKE_NVIDIA_DIR, GpuAddons, GpuAddonsArgs, GpuScheduling, PoolNodes
from fleet.catalog import Catalog, Taint
from fleet.gate import gate_taint
from fleet.model import ResolvedPool


def gke_pool_taints(pool: ResolvedPool, catalog: Catalog) -> tuple[Taint, ...]:
    """The taints a GKE GPU pool's nodes carry, as components.gcp._nodes.taints sets them (the
    GPU taint, the gate's startup taint where it enforces, the pool's own), and GKE's
    flex-start taint on a flex-start or queued pool (GKE applies it itself: catalog gcp.yaml
    `flex_start`)."""
    gpu = catalog.kube(pool.shape).taint
    gate = (gate_taint(),) if pool.gate_enforced else ()
    flex = (catalog.taints[("gcp", "flex_start")],) if pool.flex_start else ()
    return (gpu, *gate, *flex,
            *(Taint(key=t.key, value=t.value, effect=t.effect) for t in pool.spec.taints))


def gke_scheduling(pools: list[ResolvedPool], catalog: Catalog) -> GpuScheduling | None:
    """Where the exporter runs on a GKE cluster: every node with GKE's accelerator label (a
    GPU node; TPU nodes carry another), tolerating its pools' taints; None without a GPU
    pool."""
    gpu = [p for p in pools if p.shape.kind == "gpu"]
    if not gpu:
        return None
    label = catalog.kube_section("gcp", "gpu")["accelerator_label"]
    return GpuScheduling(
        gpu_taint=catalog.kube(gpu[0].shape).taint, gpu_node_label=label, efa_label="",
        pools=tuple(PoolNodes(p.name, catalog.node_selector(p.shape),
                              gke_pool_taints(p, catalog)) for p in gpu))


def install_dcgm_exporter(cluster: str, pools: list[ResolvedPool], catalog: Catalog,
                          opts: pulumi.ResourceOptions) -> GpuAddons | None:
    """The DCGM exporter's release on the GKE cluster (pass its provider, parent and the
    system pool's nodes in `opts`); None without a GPU pool."""
    scheduling = gke_scheduling(pools, catalog)
    if scheduling is None:
        return None
    return GpuAddons(cluster, GpuAddonsArgs(scheduling=scheduling, efa=False,
                                            dcgm_exporter=True, device_plugin=False,
                                            driver_dir=GKE_NVIDIA_DIR), opts)
