"""Kueue routing, decided from the fleet: a flavor per pool, a queue per team and cluster.

Pure decisions, no Kubernetes and no Pulumi (components/k8s/_kueue.py makes the objects):

    flavor   one per pool that joins a cluster (the system pool and Cloud TPU VMs aside),
             named after the pool: its node labels (the inventory's node selector, TPU
             topology included), the tolerations its nodes need, and what the pool holds at
             its largest (autoscaling at max_nodes, every slice of a multislice): devices
             (nvidia.com/gpu, google.com/tpu, vpc.amazonaws.com/efa on EFA pools) and what
             its nodes offer pods (fleet.allocatable: cpu, memory, ephemeral-storage, and
             hugepages-2Mi where the nodes have them; cpu and memory less the requests of
             the DaemonSets on each node, fleet.pods)
    queue    one per team and cluster: a namespace and a LocalQueue of the team's name, a
             ClusterQueue whose flavors are the team's routing order (`routing:`), or its own
             pools in the default order (`default_order`), with the flavors' quota as its
             nominal quota; another team's pool it routes to is borrowed (nominal 0, at most
             `borrowing_limit_percent` of the pool)
    cohort   one per cluster, named after it: every team queue of the cluster joins it, so
             idle quota is lent (at most `lending_limit_percent`) and reclaimed by preemption

`fleet.rules.routing.resolve_routing` reads the stack's `routing:` section into these
records, with a Problem for every entry it cannot honour; `fleet.rules.validate` keeps the
result on the validated `Fleet` (`Fleet.routing`), which `fleet_routing` returns.

Units: cpu in millicores, memory, hugepages-2Mi and ephemeral-storage in MiB, devices in
count. Limits are whole numbers: a percentage of an amount, rounded down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fleet.allocatable import node_allocatable
from fleet.catalog import Catalog
from fleet.gate import gate_toleration
from fleet.inventory import SMOKE_QUEUE, inventory_pool
from fleet.model import ResolvedPool
from fleet.pods import daemonset_requests, pool_daemonsets

if TYPE_CHECKING:
    from fleet.model import Fleet

CPU, MEMORY = "cpu", "memory"
HUGEPAGES_2MI, EPHEMERAL_STORAGE = "hugepages-2Mi", "ephemeral-storage"
MIB_RESOURCES = (MEMORY, HUGEPAGES_2MI, EPHEMERAL_STORAGE)  # amounts in MiB
# The order a ClusterQueue covers its resources in (Kueue wants every flavor of a resource
# group to list them in the group's order).
RESOURCE_ORDER = (CPU, MEMORY, EPHEMERAL_STORAGE, HUGEPAGES_2MI, "nvidia.com/gpu",
                  "google.com/tpu", "vpc.amazonaws.com/efa")
# Kueue v0.19.2's CRDs (config/components/crd/bases, v1beta2): a resource group holds at most
# 64 flavors; a ResourceFlavor at most 8 node labels and 8 tolerations.
MAX_FLAVORS = 64
MAX_FLAVOR_LABELS = 8
MAX_FLAVOR_TOLERATIONS = 8
# Default flavor order: capacity already paid for first, capacity that may vanish last.
CAPACITY_RANK = {"reservation": 0, "on-demand": 1, "flex-start": 2, "spot": 3}


@dataclass(frozen=True)
class Flavor:
    """One pool as Kueue sees it (a ResourceFlavor), and all it holds at its largest."""

    name: str
    pool: str
    cluster: str
    team: str
    node_labels: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]
    quota: Mapping[str, int]
    nodes: int
    topology: str | None = None
    # A GKE queued-provisioning pool: its nodes come only through a ProvisioningRequest, so
    # its queues carry Kueue's ProvisioningRequest admission check on this flavor.
    queued: bool = False
    device_resource: str | None = None  # nvidia.com/gpu, google.com/tpu; None on CPU pools


@dataclass(frozen=True)
class QueueFlavor:
    """A flavor in a team's ClusterQueue: the team's own (nominal = the pool, lending capped)
    or borrowed from another team (nominal 0, borrowing capped)."""

    flavor: str
    owner: str
    nominal: Mapping[str, int]
    borrowing_limit: Mapping[str, int] | None = None
    lending_limit: Mapping[str, int] | None = None

    @property
    def borrowed(self) -> bool:
        return self.borrowing_limit is not None


@dataclass(frozen=True)
class TeamQueue:
    """A team's queue on one cluster: namespace, LocalQueue and ClusterQueue (all named
    `name`), the resources it covers and its flavors in the order Kueue tries them."""

    team: str
    cluster: str
    name: str
    cohort: str
    resources: tuple[str, ...]
    flavors: tuple[QueueFlavor, ...]
    routed: bool  # from `routing:`; False: the team's own pools in the default order
    namespace: str | None = None  # where its LocalQueue is; None: `name`

    def nominal(self) -> dict[str, int]:
        """The queue's nominal quota, every flavor together."""
        total = dict.fromkeys(self.resources, 0)
        for f in self.flavors:
            for r, v in f.nominal.items():
                total[r] += v
        return total


@dataclass(frozen=True)
class ClusterRouting:
    """Everything Kueue gets on one cluster."""

    cluster: str
    cohort: str
    flavors: tuple[Flavor, ...]
    queues: tuple[TeamQueue, ...]
    # The queue `accelfleet smoke` submits to on the cluster's queued pools (see smoke_queue)
    smoke: TeamQueue | None = None

    @property
    def queued(self) -> tuple[Flavor, ...]:
        return tuple(f for f in self.flavors if f.queued)

    def summary(self) -> dict[str, Any]:
        """JSON-ready, quantities as Kubernetes writes them."""
        return {
            "cluster": self.cluster, "cohort": self.cohort,
            "flavors": [{"name": f.name, "team": f.team, "nodes": f.nodes,
                         "topology": f.topology, "node_labels": dict(f.node_labels),
                         "quota": quantities(f.quota)} for f in self.flavors],
            "queues": [queue_summary(q) for q in self.queues],
            "queued_flavors": [f.name for f in self.queued],
            "smoke_queue": queue_summary(self.smoke) if self.smoke is not None else None,
        }


def queue_summary(q: TeamQueue) -> dict[str, Any]:
    return {
        "team": q.team, "cluster": q.cluster, "namespace": q.namespace or q.name,
        "local_queue": q.name,
        "cluster_queue": q.name, "cohort": q.cohort, "routed": q.routed,
        "resources": list(q.resources), "nominal": quantities(q.nominal()),
        "flavors": [{"name": f.flavor, "owner": f.owner, "borrowed": f.borrowed,
                     "nominal": quantities(f.nominal),
                     "borrowing_limit": quantities(f.borrowing_limit)
                     if f.borrowing_limit is not None else None,
                     "lending_limit": quantities(f.lending_limit)
                     if f.lending_limit is not None else None} for f in q.flavors],
    }


# -- arithmetic ------------------------------------------------------------------------------
def quantity(resource: str, amount: int) -> str:
    """A Kubernetes quantity: sizes (MiB) in Gi where whole, else Mi; cpu (millicores) in
    whole cores where whole, else m; counts as integers."""
    if resource in MIB_RESOURCES and amount:
        return f"{amount // 1024}Gi" if amount % 1024 == 0 else f"{amount}Mi"
    if resource == CPU and amount:
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    return str(amount)


def quantities(amounts: Mapping[str, int]) -> dict[str, str]:
    return {r: quantity(r, v) for r, v in amounts.items()}


def percent_of(amounts: Mapping[str, int], percent: int) -> dict[str, int]:
    """Each amount times `percent`/100, rounded down (a limit never exceeds what is there)."""
    return {r: v * percent // 100 for r, v in amounts.items()}


def pool_quota(pool: ResolvedPool, catalog: Catalog) -> dict[str, int]:
    """What a pool holds at its largest: its nodes (autoscaling max_nodes; every host of every
    slice) times each node's devices, EFA interfaces and allocatable cpu (millicores), memory,
    ephemeral storage and 2 MiB huge pages (MiB), cpu and memory less what the node's
    DaemonSets request (fleet.pods): what pods can get, not the machine's size."""
    nodes = pool.node_range[1]
    node = node_allocatable(pool, catalog)
    # what the DaemonSets on each node take is not there for the teams' pods: a quota that
    # counts it admits workloads that then stay Pending (issue 27 class 1)
    ds_cpu, ds_memory = daemonset_requests(pool_daemonsets(pool, catalog))
    quota = {CPU: (node.cpu_millicores - ds_cpu) * nodes,
             MEMORY: (node.memory_mib - ds_memory) * nodes,
             EPHEMERAL_STORAGE: node.ephemeral_storage_mib * nodes}
    if node.hugepages_2mi_mib:
        quota[HUGEPAGES_2MI] = node.hugepages_2mi_mib * nodes
    if pool.shape.kind != "cpu":
        quota[catalog.kube(pool.shape).resource] = pool.shape.devices_per_host * nodes
    net = pool.networking
    if net is not None and net.kind == "efa" and net.efa_interfaces:
        quota[catalog.kube_section("aws", "efa")["resource"]] = net.efa_interfaces * nodes
    return quota


def pool_flavor(pool: ResolvedPool, catalog: Catalog) -> Flavor:
    """A pool's ResourceFlavor: the inventory's node selector and tolerations (the contract
    smoke uses too) but the gate's, and its quota. Kueue adds a flavor's tolerations to every
    pod it admits there: a team's pods never tolerate the gate (only proof pods do)."""
    entry = inventory_pool(pool, catalog)
    assert pool.cluster is not None
    gate = gate_toleration()
    return Flavor(name=pool.name, pool=pool.name, cluster=pool.cluster.name, team=pool.team,
                  node_labels=dict(entry.node_selector),
                  tolerations=tuple(dict(t) for t in entry.tolerations if dict(t) != gate),
                  quota=pool_quota(pool, catalog), nodes=pool.node_range[1],
                  topology=entry.topology if pool.shape.tpu is not None else None,
                  queued=pool.cloud == "gcp" and pool.spec.capacity.queued,
                  device_resource=entry.resource or None)


def smoke_queue(cluster: str, flavors: Sequence[Flavor], namespace: str, cohort: str
                ) -> TeamQueue | None:
    """The queue `accelfleet smoke` submits to on a cluster's queued pools: a LocalQueue
    `SMOKE_QUEUE` in the smoke namespace and a ClusterQueue of that name in the cluster's
    `cohort`, holding no quota of its own (nominal 0) and borrowing each queued flavor up to
    its full quota. A queued pool's nodes exist only for the ProvisioningRequest that brought
    them, so a smoke run's request is as real as a team's; without this queue a smoke pod on a
    queued pool waits out its timeout (issue 20 item 2). Borrowing, not owning: the pool's
    quota is counted once in the cohort, so Kueue never admits more than the pool between the
    teams and smoke (issue 27 item 9: a second, outside copy let it admit twice the pool, and
    the extra ProvisioningRequests waited). A team that lends less than all of a queued pool
    (`lending_limit_percent`) lends smoke no more either. None without a queued pool."""
    queued = [f for f in flavors if f.queued]
    if not queued:
        return None
    resources = covered([f.quota for f in queued])
    return TeamQueue(
        team=SMOKE_QUEUE, cluster=cluster, name=SMOKE_QUEUE, cohort=cohort,
        resources=resources,
        flavors=tuple(QueueFlavor(f.name, f.team, dict.fromkeys(resources, 0),
                                  borrowing_limit={r: f.quota.get(r, 0) for r in resources})
                      for f in queued),
        routed=False, namespace=namespace)


def capacity_rank(pool: ResolvedPool) -> int:
    cap = pool.spec.capacity
    if cap.reservation:
        return CAPACITY_RANK["reservation"]
    if cap.spot:
        return CAPACITY_RANK["spot"]
    if cap.flex_start or cap.queued:
        return CAPACITY_RANK["flex-start"]
    return CAPACITY_RANK["on-demand"]


def default_order(pools: Sequence[ResolvedPool]) -> list[ResolvedPool]:
    """A team's own pools when its routing names none: reserved capacity first (paid for
    whether used or not), then on-demand, then flex-start and queued (nodes come on demand,
    after a wait), then spot (may be reclaimed); the stack's order within each."""
    return sorted(pools, key=capacity_rank)


def covered(flavors: Sequence[Mapping[str, int]]) -> tuple[str, ...]:
    """The resources a queue covers: every resource of its flavors, in RESOURCE_ORDER."""
    seen = {r for f in flavors for r in f}
    known = [r for r in RESOURCE_ORDER if r in seen]
    return (*known, *sorted(seen - set(RESOURCE_ORDER)))


def fleet_routing(fleet: Fleet, catalog: Catalog | None = None) -> list[ClusterRouting]:
    """The routing of a validated fleet, cluster by cluster in the stack's order: the one
    `fleet.rules.validate` resolved (`Fleet.routing`), never resolved again. `catalog` is
    unused (kept for callers that pass one)."""
    del catalog
    return list(fleet.routing)
