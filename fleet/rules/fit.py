"""Everything the fleet schedules fits where it is pinned (issue 27, class 1).

Offline, before any cloud call, every pod a cluster will run is placed on the nodes it selects:

    system pool   the Deployments pinned there (Kueue sized by the cluster's nodes, JobSet,
                  the device plugin chart's NFD master and gc, kube-dns or CoreDNS, ...), each
                  on one node's allocatable less the DaemonSets every such node runs, then all
                  of them together on the pool's nodes at their most (first fit, largest first)
    each pool     its smoke pod (one per node: its devices, CPU and memory, the fabric's huge
                  pages and EFA interfaces) on one node less its DaemonSet neighbours (the
                  device plugins, GPUDirect installers, the cloud's node agents); what it
                  requests must be on the node at all (huge pages, EFA), and its Kueue flavor
                  must offer it (a resource the ClusterQueue does not cover is never admitted)

Allocatable comes from `fleet.allocatable` (recorded nodes, else the cloud's documented
reservations: data the product reads), the pods from `fleet.pods` (catalog system_pods.yaml:
a new component is an entry there, checked here with no change). Selectors and taints: the
system pods tolerate no accelerator taint and select the system pool's label, which only its
untainted nodes carry; each smoke pod selects its pool's nodes and tolerates their taints
(`fleet.inventory`), and the tests hold that against recorded real nodes of every catalog
machine type (tests/smoke/nodes.py).

Units: cpu in millicores, memory and huge pages in MiB.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fleet.allocatable import NodeAllocatable, hugepages_2mi_mib, node_allocatable
from fleet.catalog import Catalog
from fleet.errors import AccelfleetError, Where
from fleet.model import ResolvedPool
from fleet.pods import (
    SystemPod,
    cluster_pods,
    cpu_quantity,
    fabric_requests,
    is_efa,
    neighbours,
    pod_requests,
    smoke_pod_requests,
)
from fleet.routing import CPU, HUGEPAGES_2MI, MEMORY, ClusterRouting, Flavor
from fleet.spec.fields import Cluster, FleetSpec

if TYPE_CHECKING:
    from fleet.rules.validate import Checker

SMOKE_POD = "the smoke pod"


@dataclass(frozen=True)
class Need:
    """What one pod requests: cpu (millicores), memory and 2 MiB huge pages (MiB), and
    extended resources (devices, EFA interfaces) by name."""

    pod: str
    cpu: int
    memory: int
    hugepages: int = 0
    devices: tuple[tuple[str, int], ...] = ()


def mib(text: str) -> int:
    """A Kubernetes size (`5120Mi`, `2Gi`) in MiB."""
    for suffix, factor in (("Gi", 1024), ("Mi", 1)):
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) * factor
    raise ValueError(f"not a size in Mi or Gi: {text!r}")


@dataclass(frozen=True)
class Room:
    """What one node of a pool leaves for pods once its DaemonSets are placed."""

    node: NodeAllocatable
    daemonsets: tuple[SystemPod, ...]
    nodes: int  # the cluster's nodes at their most (Kueue's size)

    @property
    def taken(self) -> tuple[int, int]:
        reqs = [pod_requests(d, self.nodes) for d in self.daemonsets]
        return sum(c for c, _ in reqs), sum(m for _, m in reqs)

    @property
    def cpu(self) -> int:
        return self.node.cpu_millicores - self.taken[0]

    @property
    def memory(self) -> int:
        return self.node.memory_mib - self.taken[1]

    def words(self, machine: str) -> str:
        cpu, memory = self.taken
        return (f"{machine}: {cpu_quantity(self.node.cpu_millicores)} CPU / "
                f"{self.node.memory_mib}Mi allocatable ({self.node.source.split(':')[0]}), "
                f"less {cpu_quantity(cpu)} / {memory}Mi for its {len(self.daemonsets)} DaemonSet "
                f"pods: {cpu_quantity(self.cpu)} / {self.memory}Mi free")


def shortfall(need: Need, cpu: int, memory: int) -> list[str]:
    out = []
    if need.cpu > cpu:
        out.append(f"{cpu_quantity(need.cpu - cpu)} CPU")
    if need.memory > memory:
        out.append(f"{need.memory - memory}Mi memory")
    return out


def check_fit(checks: Checker, spec: FleetSpec, pools: Sequence[ResolvedPool],
              system_pools: Sequence[ResolvedPool],
              routing: Sequence[ClusterRouting]) -> None:
    """Refuse the fleet where a pod it creates cannot be scheduled (see the module's doc)."""
    catalog = checks.catalog
    routes = {r.cluster: r for r in routing}
    for cluster in spec.clusters:
        members = [p for p in pools if p.cluster is not None and p.cluster.name == cluster.name]
        route = routes.get(cluster.name)
        nodes = sum(f.nodes for f in route.flavors) if route is not None else 0
        pods = cluster_pods(cluster, members, catalog, gate_replicas=spec.gate.replicas)
        system = next((s for s in system_pools if s.cluster is not None
                       and s.cluster.name == cluster.name), None)
        if system is not None:
            _system_fit(checks, cluster, system, pods, nodes)
        flavors = {f.pool: f for f in route.flavors} if route is not None else {}
        for pool in members:
            if pool.shape.kind != "cpu":
                _pool_fit(checks, pool, pods, nodes, flavors.get(pool.name))


def _deployments(pods: Sequence[SystemPod], nodes: int) -> list[Need]:
    out = []
    for p in pods:
        if p.daemonset:
            continue
        cpu, memory = pod_requests(p, nodes)
        what = f"{p.name} (sized for {nodes} nodes)" if p.sized else p.name
        out += [Need(what, cpu, memory)] * p.replicas
    return out


def _packs(needs: Sequence[Need], room: Room, count: int) -> list[Need]:
    """First fit, largest first: the pods left over on `count` nodes of `room` each."""
    free = [[room.cpu, room.memory] for _ in range(count)]
    left = []
    for n in sorted(needs, key=lambda n: (n.memory, n.cpu), reverse=True):
        for node in free:
            if n.cpu <= node[0] and n.memory <= node[1]:
                node[0] -= n.cpu
                node[1] -= n.memory
                break
        else:
            left.append(n)
    return left


def _system_room(pool: ResolvedPool, pods: Sequence[SystemPod], catalog: Catalog,
                 nodes: int) -> Room:
    return Room(node_allocatable(pool, catalog),
                tuple(neighbours(pool, pods, catalog)), nodes)


def _larger_machine(checks: Checker, pool: ResolvedPool, pods: Sequence[SystemPod],
                    needs: Sequence[Need], nodes: int) -> str | None:
    """The smallest CPU machine of the cloud on which every system pod fits the pool."""
    catalog = checks.catalog
    candidates = []
    for name in catalog.cpu_machine_names(pool.cloud):
        host = catalog.hosts.get(name)
        if host is not None:
            candidates.append((host.vcpus, host.memory_mib, name))
    for _, _, name in sorted(candidates):
        try:
            shape = catalog.resolve(name, cloud=pool.cloud)
        except AccelfleetError:
            continue
        room = _system_room(dataclasses.replace(pool, shape=shape), pods, catalog, nodes)
        if not any(shortfall(n, room.cpu, room.memory) for n in needs) and not _packs(
                needs, room, pool.node_range[1]):
            return name
    return None


def _system_fit(checks: Checker, cluster: Cluster, pool: ResolvedPool,
                pods: Sequence[SystemPod], nodes: int) -> None:
    catalog = checks.catalog
    at = Where("clusters", name=cluster.name, field="system_pool")
    room = _system_room(pool, pods, catalog, nodes)
    needs = _deployments(pods, nodes)
    machine = pool.shape.machine_type
    bigger = _larger_machine(checks, pool, pods, needs, nodes)
    fix = (f"set `clusters[].system_pool.machine_type: {bigger}` (the smallest "
           f"{pool.cloud.upper()} machine that holds them)" if bigger is not None else
           "give the cluster's system pool a larger machine type")
    for need in needs:
        short = shortfall(need, room.cpu, room.memory)
        if short:
            checks.add(at, f"{need.pod} asks {cpu_quantity(need.cpu)} CPU / {need.memory}Mi and "
                       f"does not fit a node of the system pool ({room.words(machine)}): "
                       f"short by {' and '.join(short)}; its release is atomic, so `pulumi "
                       "up` rolls back", fix)
            return
    left = _packs(needs, room, pool.node_range[1])
    if left:
        names = ", ".join(dict.fromkeys(n.pod for n in left))
        checks.add(at, f"the system pool's {pool.node_range[1]} node(s) of {machine} cannot "
                   f"hold every pod pinned there: {names} left over ({room.words(machine)}; "
                   f"together they ask {cpu_quantity(sum(n.cpu for n in needs))} CPU / "
                   f"{sum(n.memory for n in needs)}Mi)",
                   f"{fix}, or more nodes (`clusters[].system_pool.nodes`)")


def smoke_need(pool: ResolvedPool, catalog: Catalog) -> Need:
    """What the pool's smoke pod requests on one node (as smoke/cluster/workload renders
    it): its devices, CPU and memory, the fabric's resources and EFA interfaces."""
    shape = pool.shape
    host = catalog.hosts.get(shape.machine_type)
    cpu, memory = smoke_pod_requests(shape.devices_per_host,
                                     host.vcpus if host else None,
                                     host.memory_mib if host else None)
    devices = [(catalog.kube(shape).resource, shape.devices_per_host)]
    hugepages = 0
    net = pool.networking
    fabric = catalog.fabrics.get(net.kind) if net is not None else None
    if fabric is not None:
        offered = hugepages_2mi_mib(shape.machine_type)
        for name, amount in fabric_requests(fabric.resources, offered).items():
            if name == HUGEPAGES_2MI:
                hugepages += mib(amount)
        if net is not None and is_efa(pool):
            devices.append((catalog.kube_section("aws", "efa")["resource"],
                            net.efa_interfaces))
    return Need(SMOKE_POD, cpu, memory, hugepages, tuple(devices))


def _pool_fit(checks: Checker, pool: ResolvedPool, pods: Sequence[SystemPod], nodes: int,
              flavor: Flavor | None) -> None:
    catalog = checks.catalog
    at = Where("pools", name=pool.name)
    room = Room(node_allocatable(pool, catalog), tuple(neighbours(pool, pods, catalog)), nodes)
    need = smoke_need(pool, catalog)
    machine = pool.shape.machine_type
    short = shortfall(need, room.cpu, room.memory)
    if short:
        checks.add(at, f"{SMOKE_POD} asks {cpu_quantity(need.cpu)} CPU / {need.memory}Mi and "
                   f"does not fit a node ({room.words(machine)}): short by "
                   f"{' and '.join(short)}", "report this: the smoke pod's requests "
                   "(fleet.pods) must stay within half the node")
    if need.hugepages > room.node.hugepages_2mi_mib:
        checks.add(at, f"{SMOKE_POD} asks {HUGEPAGES_2MI} {need.hugepages}Mi (the "
                   f"{pool.networking.kind if pool.networking else ''} fabric's) and a "
                   f"{machine} node offers {room.node.hugepages_2mi_mib}Mi "
                   f"({room.node.source})",
                   "record the node's huge pages in the catalog (node_allocatable.yaml: a "
                   "recorded node, or `hugepages_like` one with the same host and EFA setup), "
                   "or use an instance type whose nodes have them")
    if flavor is None:
        return
    asked = {CPU: need.cpu, MEMORY: need.memory, **dict(need.devices)}
    if need.hugepages:
        asked[HUGEPAGES_2MI] = need.hugepages
    per_node = max(1, flavor.nodes)
    missing = [f"{r} {v} per node (the flavor offers {flavor.quota.get(r, 0) // per_node})"
               for r, v in asked.items() if flavor.quota.get(r, 0) < v * flavor.nodes]
    if missing:
        checks.add(at, f"Kueue's flavor {flavor.name!r} does not offer what {SMOKE_POD} of "
                   f"each node requests: {', '.join(missing)}; Kueue never admits it",
                   "make the catalog's allocatable for the machine (node_allocatable.yaml) "
                   "say what the nodes really offer")
