"""Every pod a fleet's clusters run, and what each requests: the one home of those figures.

    system pods   catalog system_pods.yaml: what accelfleet installs (Kueue, JobSet, the
                  device plugins, the GPUDirect installers, the gate controller) and what
                  the cloud runs on the nodes (kube-dns, CoreDNS, the node agents), each with
                  where it lands and its source. Kueue's controller is sized by the
                  cluster's nodes (`kueue_requests`, which components/k8s/_kueue.py sets as
                  the release's requests and limits).
    smoke pods    one per node of an accelerator pool (`smoke_pod_requests`, which
                  smoke/cluster/workload.py renders): its devices, one CPU and 4000 MiB per
                  device, never more than half the node, and what the pool's fabric asks.

`fleet.rules.fit` places every one of them on the nodes it selects. Units: cpu in
millicores, memory in MiB.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from fleet.catalog import Catalog, Cloud, read_yaml
from fleet.errors import CatalogError
from fleet.model import ResolvedPool
from fleet.spec.fields import Cluster

FILE = "system_pods.yaml"
Where = Literal["system", "gpu", "efa", "gpudirect", "every"]
When = Literal["always", "gated", "gpu", "efa", "gpudirect", "nri"]
WHERE: tuple[str, ...] = ("system", "gpu", "efa", "gpudirect", "every")
WHEN: tuple[str, ...] = ("always", "gated", "gpu", "efa", "gpudirect", "nri")

# xpk sizes the Kueue controller by the cluster's nodes: 32 MiB per node, at least 4 GiB, and
# 4 CPUs per 1000 nodes, at least 2 (AI-Hypercomputer/xpk@367c838253bea41e7d7716145ad6513f44c1a21e:
# src/xpk/core/kueue_manager.py, MEMORY_SIZE_PER_VM, MIN_MEMORY_LIMIT_SIZE, CPU_SIZE_PER_VM,
# MIN_CPU_LIMIT_SIZE); the chart's 512Mi is too little for a fleet (issue 20 item 7).
KUEUE_MEMORY_MIB_PER_NODE, KUEUE_MIN_MEMORY_MIB = 32, 4096
KUEUE_CPU_PER_NODE, KUEUE_MIN_CPU = 0.004, 2

# What each smoke pod requests beside its accelerators, per device on the node, so that it is not
# BestEffort (first evicted under pressure, no CPU share): one CPU for the rank process that
# drives each device in the in-node all-reduce, and the memory AWS's EKS NCCL test requests per
# GPU (32000Mi for a p5's 8: aws-samples/awsome-distributed-training@50820097
# micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml). Never more than half the node's vCPUs
# or memory (catalog hosts.yaml), so a one-GPU g6.xlarge still fits. No CPU or memory limit:
# a smoke test must not be OOM-killed or throttled by its own guess.
SMOKE_CPU_PER_DEVICE = 1
SMOKE_MEMORY_MIB_PER_DEVICE = 4000
SMOKE_MIN_MEMORY_MIB = 512


@dataclass(frozen=True)
class SystemPod:
    """One entry of system_pods.yaml: a Deployment's pod (times `replicas`) or a DaemonSet's."""

    name: str
    component: str
    kind: Literal["Deployment", "DaemonSet"]
    replicas: int
    clouds: tuple[Cloud, ...]
    when: When
    where: tuple[Where, ...]
    cpu_millicores: int
    memory_mib: int
    sized: str | None
    source: str

    @property
    def daemonset(self) -> bool:
        return self.kind == "DaemonSet"


def kueue_requests(nodes: int) -> tuple[int, int]:
    """(cpu millicores, memory MiB) of Kueue's controller for a cluster of `nodes` at most:
    xpk's rule, in whole CPUs."""
    cpu = max(math.ceil(nodes * KUEUE_CPU_PER_NODE), KUEUE_MIN_CPU)
    memory = max(math.ceil(nodes * KUEUE_MEMORY_MIB_PER_NODE), KUEUE_MIN_MEMORY_MIB)
    return cpu * 1000, memory


def pod_requests(pod: SystemPod, nodes: int) -> tuple[int, int]:
    """(cpu millicores, memory MiB) one pod of `pod` requests in a cluster of `nodes`."""
    if pod.sized == "kueue":
        return kueue_requests(nodes)
    return pod.cpu_millicores, pod.memory_mib


def smoke_pod_requests(devices: int, vcpus: int | None, memory_mib: int | None
                       ) -> tuple[int, int]:
    """(cpu millicores, memory MiB) one smoke pod requests on a node with `devices`
    accelerators, `vcpus` and `memory_mib` (None: the machine is not in the catalog)."""
    devices = max(1, devices)
    cpu, memory = devices * SMOKE_CPU_PER_DEVICE, devices * SMOKE_MEMORY_MIB_PER_DEVICE
    if vcpus is not None and memory_mib is not None:
        cpu = max(1, min(cpu, vcpus // 2))
        memory = max(SMOKE_MIN_MEMORY_MIB, min(memory, memory_mib // 2))
    return cpu * 1000, memory


HUGEPAGES_2MI = "hugepages-2Mi"


def fabric_requests(resources: Sequence[tuple[str, str]], hugepages_2mi_mib: int
                    ) -> dict[str, str]:
    """What a smoke pod asks of its fabric's `resources` (catalog fabrics.yaml) on a node that
    offers `hugepages_2mi_mib` of 2 MiB huge pages: huge pages only where the node has them.
    A pod asking huge pages of a node with none is never scheduled, and Kueue (whose flavor
    offers none there) never admits it; libfabric's EFA provider runs without them
    (ofiwg/libfabric prov/efa: FI_EFA_USE_HUGE_PAGE, huge pages used when present). Issue 27
    class 1: every single-EFA g4dn/g5/g6/g6e pool asked 5120Mi its nodes do not offer."""
    return {r: v for r, v in resources if r != HUGEPAGES_2MI or hugepages_2mi_mib > 0}


def is_efa(pool: ResolvedPool) -> bool:
    net = pool.networking
    return net is not None and net.kind == "efa" and net.efa_interfaces > 0


def _gpudirect(pool: ResolvedPool) -> str | None:
    net = pool.networking
    return net.kind if pool.cloud == "gcp" and net is not None and net.kind != "efa" else None


def cluster_pods(cluster: Cluster | Cloud, pools: Sequence[ResolvedPool], catalog: Catalog,
                 *, gate_replicas: int | None = None) -> list[SystemPod]:
    """The system pods a cluster runs, by its cloud and what its pools need; the gate
    controller with `gate_replicas` (the stack's `gate.replicas`) when given."""
    kinds = {k for k in (_gpudirect(p) for p in pools) if k is not None}
    active = {"always": True,
              "gated": any(p.gated for p in pools),
              "gpu": any(p.shape.kind == "gpu" for p in pools),
              "efa": any(is_efa(p) for p in pools),
              "gpudirect": bool(kinds),
              "nri": any(catalog.fabrics[k].daemon is not None for k in kinds
                         if k in catalog.fabrics)}
    cloud = cluster if isinstance(cluster, str) else cluster.cloud
    return [replace(p, replicas=gate_replicas) if p.when == "gated" and gate_replicas else p
            for p in system_pods() if cloud in p.clouds and active[p.when]]


def neighbours(pool: ResolvedPool, pods: Sequence[SystemPod], catalog: Catalog
               ) -> list[SystemPod]:
    """The DaemonSets of `pods` that run on every node of `pool`."""
    kind = _gpudirect(pool)
    fabric = catalog.fabrics.get(kind) if kind is not None else None
    on = {"every"}
    for where, yes in (("system", pool.system), ("gpu", pool.shape.kind == "gpu"),
                       ("efa", is_efa(pool)), ("gpudirect", kind is not None)):
        if yes:
            on.add(where)
    return [p for p in pods if p.daemonset and on & set(p.where)
            and not (p.when == "nri" and (fabric is None or fabric.daemon is None))]


def pool_daemonsets(pool: ResolvedPool, catalog: Catalog) -> list[SystemPod]:
    """The DaemonSets on each node of an accelerator pool: what the pool itself brings to its
    cluster (a GPU pool the device plugins, an EFA pool the EFA plugin, ...) and what runs on
    every node, as `cluster_pods` and `neighbours` find them for the pool alone."""
    return neighbours(pool, cluster_pods(pool.cloud, [pool], catalog), catalog)


def system_pod(name: str) -> SystemPod:
    """One entry of system_pods.yaml by name (a component reads its requests here)."""
    found = [p for p in system_pods() if p.name == name]
    if not found:
        raise CatalogError(f"{FILE}: no pod named {name!r}")
    return found[0]


def cpu_quantity(millicores: int) -> str:
    """Millicores as Kubernetes writes them: whole cores, else `m`."""
    return f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"


def daemonset_requests(daemonsets: Sequence[SystemPod]) -> tuple[int, int]:
    """(cpu millicores, memory MiB) the DaemonSets take on one node (none is sized by Kueue)."""
    reqs = [pod_requests(d, 0) for d in daemonsets]
    return sum(c for c, _ in reqs), sum(m for _, m in reqs)


@cache
def system_pods() -> tuple[SystemPod, ...]:
    """Every entry of system_pods.yaml, checked."""
    raw = read_yaml(FILE).get("pods") or []
    out: list[SystemPod] = []
    for item in raw:
        try:
            requests = item.get("requests") or {}
            pod = SystemPod(
                name=str(item["name"]), component=str(item["component"]),
                kind=item["kind"], replicas=int(item.get("replicas", 1)),
                clouds=tuple(item["clouds"]), when=item["when"], where=tuple(item["where"]),
                cpu_millicores=int(requests.get("cpu_millicores", 0)),
                memory_mib=int(requests.get("memory_mib", 0)),
                sized=item.get("sized"), source=str(item["source"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CatalogError(f"{FILE}: an entry needs name, component, kind, clouds, when, "
                               f"where, requests (or sized) and source ({exc!r})") from None
        bad = [w for w in pod.where if w not in WHERE]
        if (pod.kind not in ("Deployment", "DaemonSet") or pod.when not in WHEN or bad
                or not set(pod.clouds) <= {"gcp", "aws"} or pod.sized not in (None, "kueue")):
            raise CatalogError(f"{FILE}: {pod.name}: kind, when, where, clouds or sized is "
                               f"not one this accelfleet knows")
        if pod.kind == "Deployment" and pod.where != ("system",):
            raise CatalogError(f"{FILE}: {pod.name}: a Deployment lands on the system pool "
                               "only (`where: [system]`)")
        out.append(pod)
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise CatalogError(f"{FILE}: a pod is listed twice")
    return tuple(out)
