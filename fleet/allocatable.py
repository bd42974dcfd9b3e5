"""What pods can get on one node (its allocatable resources), for Kueue quotas.

Recorded where a real node was recorded (catalog node_allocatable.yaml); else derived from the
machine (hosts.yaml: vCPUs, memory) and the pool's boot disk with the cloud's reservations:

    cpu     the same ranges on EKS and GKE: 6% of the first core, 1% of the next, 0.5% of the
            next two, 0.25% of every core above four
            (awslabs/amazon-eks-ami@01375496231add8265f3fb1bc6e1e90d083b980b
            nodeadm/internal/kubelet/config.go getCPUMillicoresToReserve;
            https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes)
    memory  EKS: 11 MiB per pod the node may hold plus 255 MiB (same file,
            GetMemoryMebibytesToReserve), maxPods being the instance type's ENI-based figure
            (catalog limits.yaml `eks_max_pods`, as nodeadm reads eni-max-pods; 110 where the
            catalog lacks it); GKE: 25% of the first
            4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128 GiB
            (plan-node-sizes). Both evict at 100 MiB available (nodeadm `evictionHard`
            memory.available 100Mi; GKE the same), and huge pages are not pod memory.
    ephemeral-storage  the boot disk less the kubelet's nodefs eviction threshold (10%) and,
            on EKS, nodeadm's 1 GiB kubeReserved ephemeral-storage. GKE's own boot-disk
            reservation is not counted (not read here): an upper bound on GKE.
    hugepages-2Mi  recorded (or like a recorded node); on a Bottlerocket node with EFA, 110
            2 MiB pages per vCPU (Bottlerocket's corndog sets `vm.nr_hugepages` so when an EFA
            device is attached and none are set: HUGEPAGES_2MB_PER_CORE = 110 times
            num_cpus::get(), bottlerocket-os/bottlerocket-core-kit@22cee7be839f
            sources/api/corndog/src/main.rs compute_hugepages_for_efa; wired as the default
            settings generator of `settings.kernel.sysctl."vm/nr_hugepages"` in
            bottlerocket-os/bottlerocket-core-kit#141, merged 2024-09; read 2026-11-28); else
            none (AL2023: NOT READ, node_allocatable.yaml says what was read).

A machine `hugepages_like` a recorded node (the same host: vCPUs and memory, the same EFA
setup) takes that node's allocatable whole: the formula leaves out what the kernel keeps of the
instance's memory (MemTotal below it), ~47 GiB on a p5-sized host (issue 36).

Units: cpu in millicores, every size in MiB.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from fleet.catalog import Catalog, read_yaml
from fleet.errors import CatalogError
from fleet.model import ResolvedPool

FILE = "node_allocatable.yaml"
# (upper bound of the range in millicores, share reserved per 10 000) as nodeadm writes them
CPU_RANGES = ((1000, 600), (2000, 100), (4000, 50), (None, 25))
# (upper bound in MiB, percent reserved) of GKE's memory reservation
GKE_MEMORY_TIERS = ((4 * 1024, 25), (8 * 1024, 20), (16 * 1024, 10), (128 * 1024, 6),
                    (None, 2))
GKE_SMALL_NODE_MIB, GKE_SMALL_RESERVE_MIB = 1024, 255
EKS_MAX_PODS = 110  # where limits.yaml has no figure: the kubelet's default
EVICTION_MEMORY_MIB = 100
NODEFS_EVICTION_PERCENT = 10
EKS_RESERVED_EPHEMERAL_MIB = 1024


@dataclass(frozen=True)
class NodeAllocatable:
    cpu_millicores: int
    memory_mib: int
    hugepages_2mi_mib: int
    ephemeral_storage_mib: int
    source: str  # "recorded: <source>" or "derived: <formula>"


@dataclass(frozen=True)
class _Recorded:
    cpu_millicores: int
    memory_mib: int
    hugepages_2mi_mib: int
    source: str


def reserved_cpu_millicores(vcpus: int) -> int:
    total, start, reserved = vcpus * 1000, 0, 0
    for end, share in CPU_RANGES:
        top = total if end is None else min(total, end)
        if top > start:
            reserved += (top - start) * share // 10000
        if end is None or total <= end:
            break
        start = end
    return reserved


def gke_reserved_memory_mib(memory_mib: int) -> int:
    if memory_mib < GKE_SMALL_NODE_MIB:
        return GKE_SMALL_RESERVE_MIB
    start, reserved = 0, 0.0
    for end, percent in GKE_MEMORY_TIERS:
        top = memory_mib if end is None else min(memory_mib, end)
        if top > start:
            reserved += (top - start) * percent / 100
        if end is None or memory_mib <= end:
            break
        start = end
    return int(reserved)


def node_allocatable(pool: ResolvedPool, catalog: Catalog) -> NodeAllocatable:
    """One node of the pool, as the kubelet offers it to pods."""
    machine = pool.shape.machine_type
    disk_mib = pool.spec.disk_size_gb * 1024
    ephemeral = disk_mib * (100 - NODEFS_EVICTION_PERCENT) // 100
    if pool.cloud == "aws":
        ephemeral -= EKS_RESERVED_EPHEMERAL_MIB
    recorded = _recorded().get(machine)
    if recorded is not None:
        return NodeAllocatable(recorded.cpu_millicores, recorded.memory_mib,
                               recorded.hugepages_2mi_mib, ephemeral,
                               f"recorded: {recorded.source}")
    host = catalog.host(pool.shape)
    like = _hugepages_like().get(machine)
    if like is not None and pool.cloud == "aws":
        twin = _recorded()[like]
        # the same host (vCPUs, memory) and EFA setup as a recorded node: its allocatable
        # holds, kernel's share included, which the formula below leaves out (a p5e derived
        # came out ~47 GiB above the recorded p5: MemTotal is below the instance's memory;
        # issue 36)
        return NodeAllocatable(twin.cpu_millicores, twin.memory_mib, twin.hugepages_2mi_mib,
                               ephemeral, f"like recorded {like}: {twin.source}")
    hugepages = hugepages_2mi_mib(machine) or bottlerocket_efa_hugepages_mib(pool, host.vcpus)
    cpu = host.vcpus * 1000 - reserved_cpu_millicores(host.vcpus)
    if pool.cloud == "aws":
        max_pods = catalog.network.eks_max_pods.get(machine, EKS_MAX_PODS)
        memory_reserved = 11 * max_pods + 255
    else:
        memory_reserved = gke_reserved_memory_mib(host.memory_mib)
    memory = host.memory_mib - memory_reserved - EVICTION_MEMORY_MIB - hugepages
    return NodeAllocatable(cpu, memory, hugepages, ephemeral,
                           f"derived: {pool.cloud} reservations on {machine} "
                           f"({host.vcpus} vCPU, {host.memory_gib:g} GiB)")


# Bottlerocket's 2 MiB huge pages per vCPU on an EFA node (module docstring: corndog)
BOTTLEROCKET_EFA_HUGEPAGES_PER_VCPU = 110


def bottlerocket_efa_hugepages_mib(pool: ResolvedPool, vcpus: int) -> int:
    """The huge pages (MiB) Bottlerocket sets aside on a node of `pool`: 110 pages of 2 MiB per
    vCPU where the pool has EFA interfaces and runs `ami: bottlerocket`, else none. AL2023's are
    NOT READ (node_allocatable.yaml): none are counted there."""
    net = pool.networking
    efa = net is not None and net.kind == "efa" and net.efa_interfaces > 0
    if pool.cloud != "aws" or pool.spec.ami != "bottlerocket" or not efa:
        return 0
    return vcpus * BOTTLEROCKET_EFA_HUGEPAGES_PER_VCPU * 2


def hugepages_2mi_mib(machine: str) -> int:
    """The 2 MiB huge pages a node of `machine` offers pods: recorded, or like a recorded node
    (`hugepages_like`), else none."""
    recorded = _recorded().get(machine)
    if recorded is not None:
        return recorded.hugepages_2mi_mib
    like = _hugepages_like().get(machine)
    return _recorded()[like].hugepages_2mi_mib if like else 0


@cache
def _data() -> dict[str, object]:
    return read_yaml(FILE)


@cache
def _recorded() -> dict[str, _Recorded]:
    out: dict[str, _Recorded] = {}
    for item in _data().get("recorded") or []:  # type: ignore[attr-defined]
        try:
            name = str(item["machine"])
            out[name] = _Recorded(int(item["cpu_millicores"]), int(item["memory_ki"]) // 1024,
                                  int(item["hugepages_2mi_mib"]), str(item["source"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{FILE}: a recorded node needs machine, cpu_millicores, "
                               f"memory_ki, hugepages_2mi_mib and source ({exc})") from None
    return out


@cache
def _hugepages_like() -> dict[str, str]:
    raw = _data().get("hugepages_like") or {}
    out = {str(k): str(v) for k, v in raw.items()}  # type: ignore[attr-defined]
    unknown = sorted(set(out.values()) - set(_recorded()))
    if unknown:
        raise CatalogError(f"{FILE} hugepages_like: {', '.join(unknown)} is not recorded")
    return out
