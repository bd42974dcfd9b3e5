"""A validated fleet: the spec with every pool resolved against the catalog.

Decisions live here (how many nodes, which placement, which GPU networking, what it costs),
so that components only turn them into resources and the CLI only puts them into words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from fleet.catalog import HOURS_PER_MONTH, Cloud, GpuNetworking, Shape
from fleet.errors import Problem
from fleet.gate import InventoryGate, decide_gate, gate_summary
from fleet.labels import ACCELERATOR_LABEL as ACCELERATOR_LABEL
from fleet.labels import POOL_LABEL as POOL_LABEL
from fleet.labels import TEAM_LABEL as TEAM_LABEL
from fleet.spec.fields import Cluster, FleetSpec, Pool, Team
from fleet.upgrade import UpgradePolicy, decide_upgrade

if TYPE_CHECKING:
    from fleet.routing import ClusterRouting
# Every cluster's system pool (untainted CPU nodes for the add-ons) has this name, and the
# platform pays for it: it is reported under this team, never under a team that owns pools.
SYSTEM_POOL = "system"
PLATFORM_TEAM = "platform"


PriceSource = Literal["list", "stack rate", "capacity block", "unpriced"]


@dataclass(frozen=True)
class PoolCost:
    """What a pool costs a month, from its fewest to its most nodes (`fleet.pricing` decides it).

    source: "list" (the catalog's public list price), "stack rate" (the stack's `prices:`),
    "capacity block" (the catalog's EC2 Capacity Block rate) or "unpriced" (no price is known:
    never counted as $0). nodes: as declared (`nodes`, else the autoscaling minimum);
    min_nodes..max_nodes: the autoscaling range, all node pools of the pool together.
    """

    source: PriceSource
    usd_per_node_hour: float | None
    nodes: int
    min_nodes: int
    max_nodes: int
    detail: str = ""  # the rate's origin in words: capacity kind, source note
    region: str | None = None  # where the list price was read (it may differ from the pool's)
    as_of: str | None = None

    def _monthly(self, nodes: int) -> float | None:
        if self.usd_per_node_hour is None:
            return None
        return self.usd_per_node_hour * nodes * HOURS_PER_MONTH

    @property
    def monthly_usd(self) -> float | None:
        return self._monthly(self.nodes)

    @property
    def min_monthly_usd(self) -> float | None:
        return self._monthly(self.min_nodes)

    @property
    def max_monthly_usd(self) -> float | None:
        return self._monthly(self.max_nodes)

    def price_summary(self) -> dict[str, Any]:
        """Where the pool's rate comes from, JSON-ready."""
        return {"source": self.source, "detail": self.detail, "region": self.region,
                "as_of": self.as_of, "usd_per_node_hour": _money(self.usd_per_node_hour, 6)}


def _money(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class ControlPlaneCost:
    """What one managed control plane costs (an EKS cluster: per cluster-hour, at its
    Kubernetes version's support level on the day the fleet was checked), paid by the platform.

    support: "standard" or "extended" (EKS bills extended support at a higher hourly rate);
    support_ends: the first day past that support level (UTC)."""

    cluster: str
    kubernetes_version: str
    support: str
    usd_per_hour: float
    support_ends: date
    source: str

    @property
    def monthly_usd(self) -> float:
        return self.usd_per_hour * HOURS_PER_MONTH

    def summary(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "kubernetes_version": self.kubernetes_version,
                "support": self.support, "support_ends": self.support_ends.isoformat(),
                "usd_per_hour": _money(self.usd_per_hour, 4),
                "monthly_usd": _money(self.monthly_usd), "source": self.source}


@dataclass(frozen=True)
class TeamCost:
    """What a team's pools cost a month: at their declared size and from their fewest to their
    most nodes (budgets check the most), and which of its pools have no price at all."""

    name: str
    monthly_usd: float
    min_monthly_usd: float
    max_monthly_usd: float
    unpriced: tuple[str, ...]
    monthly_budget_usd: float | None

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "monthly_usd": _money(self.monthly_usd),
                "min_monthly_usd": _money(self.min_monthly_usd),
                "max_monthly_usd": _money(self.max_monthly_usd),
                "unpriced_pools": len(self.unpriced), "unpriced": list(self.unpriced),
                "monthly_budget_usd": self.monthly_budget_usd}


@dataclass(frozen=True)
class ResolvedPool:
    """One pool of the spec, with everything the catalog and the rules decided for it."""

    spec: Pool
    cloud: Cloud
    region: str
    cluster: Cluster | None
    shape: Shape
    placement: str
    networking: GpuNetworking | None
    cost: PoolCost | None = None  # set by `fleet.pricing` once every pool is resolved
    system: bool = False  # the cluster's system pool (spec synthesised from `system_pool`)

    @property
    def monthly_usd(self) -> float | None:
        """Monthly cost at the declared size; None when no price is known (never $0)."""
        return self.cost.monthly_usd if self.cost else None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def team(self) -> str:
        return self.spec.team

    @property
    def runtime(self) -> str:
        if self.spec.runtime is not None:
            return self.spec.runtime
        return "gke" if self.cloud == "gcp" else "eks"

    @property
    def units(self) -> int:
        """GPU pools: nodes; TPU pools: slices (the multislice count)."""
        if self.shape.tpu is not None:
            return self.spec.multislice
        return self.node_count

    @property
    def node_count(self) -> int:
        """Nodes (hosts) this pool starts with, all slices together."""
        if self.shape.tpu is not None:
            return self.shape.hosts * self.spec.multislice
        if self.spec.nodes is not None:
            return self.spec.nodes
        return self.spec.autoscaling.min_nodes if self.spec.autoscaling else 0

    @property
    def devices(self) -> int:
        return self.node_count * self.shape.devices_per_host

    @property
    def flex_start(self) -> bool:
        """Nodes come from flex-start (Dynamic Workload Scheduler): `flex-start`, or `queued`,
        which GKE builds as flex-start with queued provisioning."""
        cap = self.spec.capacity
        return cap.flex_start or cap.queued

    @property
    def scaling(self) -> tuple[int, int] | None:
        """(min, max) nodes of each node pool (one slice) when GKE autoscales it; None when
        its size is fixed. Flex-start and queued pools always autoscale from 0 (GKE refuses a
        fixed count), up to `autoscaling.max_nodes`, else `nodes`, else a slice's hosts; a
        multi-host TPU slice scales atomically between 0 and all its hosts."""
        auto = self.spec.autoscaling
        if self.shape.tpu is not None:
            top = auto.max_nodes if auto else self.shape.hosts
        else:
            top = auto.max_nodes if auto else (self.spec.nodes or 0)
        if self.flex_start:
            return (0, top)
        return (auto.min_nodes, auto.max_nodes) if auto else None

    @property
    def node_range(self) -> tuple[int, int]:
        """(fewest, most) nodes of the whole pool, every node pool (slice) together: what it
        costs at its smallest and at its largest. A fixed pool's range is its node count."""
        scaling = self.scaling
        if scaling is None:
            return (self.node_count, self.node_count)
        node_pools = self.spec.multislice if self.shape.tpu is not None else 1
        return (scaling[0] * node_pools, scaling[1] * node_pools)

    @property
    def initial_nodes(self) -> int:
        """Nodes of each node pool (one slice) at creation: none for flex-start and queued
        pools, whose nodes come when workloads ask for them."""
        if self.flex_start:
            return 0
        if self.shape.tpu is not None:
            return self.node_count // self.spec.multislice
        return self.node_count

    @property
    def gate(self) -> InventoryGate | None:
        """The pool's gate (fleet.gate.decide_gate): None for a pool that is never gated (CPU,
        Cloud TPU VMs); `gated` says whether its nodes wait for their proof."""
        return decide_gate(self.spec.gate, kind=self.shape.kind, runtime=self.runtime,
                           fabric=self.networking is not None)

    @property
    def gated(self) -> bool:
        """Whether the gate controller proves the pool's nodes (its gate is on, enforcing or
        in shadow mode)."""
        gate = self.gate
        return gate is not None and gate.enabled

    @property
    def gate_enforced(self) -> bool:
        """Whether the pool's new nodes carry the gate's startup taint until proven (a gate in
        shadow mode taints nothing)."""
        gate = self.gate
        return gate is not None and gate.enforced

    @property
    def placement_group(self) -> bool:
        """Whether an EKS pool gets a `cluster` placement group of its own: a compact pool
        does, unless it consumes a reservation, whose instances are placed where the
        reservation holds them. A Capacity Block needs none ("Capacity Blocks deliver
        low-latency, high-throughput network connectivity between the instances inside the
        Capacity Block, so there is no need to use a cluster placement group", EC2 User Guide
        capacity-blocks-using); an On-Demand Capacity Reservation is placed where it was made,
        and a cluster placement group holds reserved capacity only when the reservation is
        created in that group ("If you plan to launch instances into a cluster placement
        group, we recommend that you reserve capacity explicitly in the cluster placement
        group ... by creating an On-Demand Capacity Reservation in a specified cluster
        placement group", EC2 User Guide "Placement group rules and limitations",
        https://docs.amazonaws.cn/en_us/AWSEC2/latest/UserGuide/limitations-placement-groups.html
        read 2026-11-28; CreateCapacityReservation takes the group as PlacementGroupArn), so a
        group created beside the reservation holds none of it: too few nodes, or
        InsufficientInstanceCapacity (issue 36)."""
        return self.cloud == "aws" and self.placement == "compact" \
            and not self.spec.capacity.reservation

    @property
    def upgrade(self) -> UpgradePolicy | None:
        """How the cloud replaces the pool's nodes on an upgrade or a roll (fleet.upgrade):
        the stack's `upgrade`, else the default for its cloud and capacity."""
        return decide_upgrade(self)

    @property
    def auto_repair(self) -> bool:
        """GKE node auto-repair: off for flex-start and queued pools, which GKE requires."""
        return not self.flex_start

    def summary(self) -> dict[str, Any]:
        """The facts people and CI read about a pool (`fleet validate`, `plan`), JSON-ready."""
        shape = self.shape
        return {
            "name": self.name,
            "team": self.team,
            "cloud": self.cloud,
            "runtime": self.runtime,
            "kind": shape.kind,
            "cluster": self.cluster.name if self.cluster else None,
            "machine_type": shape.machine_type,
            "topology": shape.topology_str or None,
            "nodes": self.node_count,
            "capacity": self.spec.capacity.label,
            "gpu_networking": self.networking.kind if self.networking else None,
            "monthly_usd": _money(self.monthly_usd),
            "min_monthly_usd": _money(self.cost.min_monthly_usd if self.cost else None),
            "max_monthly_usd": _money(self.cost.max_monthly_usd if self.cost else None),
            "price": self.cost.price_summary() if self.cost else None,
            "gate": gate_summary(self.gate),
            "upgrade": None if self.upgrade is None else self.upgrade.summary(),
        }

    @property
    def labels(self) -> dict[str, str]:
        """Node labels: the user's, then accelfleet's own (which win). CPU nodes carry no
        accelerator label: device plugins and accelerator add-ons select nodes by it."""
        labels = {**self.spec.labels, POOL_LABEL: self.name, TEAM_LABEL: self.team}
        if self.shape.kind != "cpu":
            labels[ACCELERATOR_LABEL] = self.shape.accelerator.key
        return labels


@dataclass(frozen=True)
class Fleet:
    """A whole validated fleet.

    pools: the pools the spec declares (accelerator and CPU pools), which the inventory lists;
    system_pools: one per cluster whose system pool is enabled, owned by `PLATFORM_TEAM`;
    control_planes: what each priced control plane costs (EKS), also `PLATFORM_TEAM`'s;
    warnings: what is allowed but deserves a look (a cluster without a system pool);
    routing: Kueue's routing, cluster by cluster in the stack's order, resolved once by
    `fleet.rules.validate` (the components, the plan, `queue show` and smoke read it here).
    """

    spec: FleetSpec
    pools: tuple[ResolvedPool, ...]
    source: str = "fleet spec"
    system_pools: tuple[ResolvedPool, ...] = ()
    warnings: tuple[Problem, ...] = ()
    control_planes: tuple[ControlPlaneCost, ...] = ()
    routing: tuple[ClusterRouting, ...] = ()

    def cluster_routing(self, cluster: str) -> ClusterRouting | None:
        """One cluster's routing; None for a cluster the fleet does not declare."""
        return next((r for r in self.routing if r.cluster == cluster), None)

    def cluster(self, name: str) -> Cluster:
        return next(c for c in self.spec.clusters if c.name == name)

    def pools_in(self, cluster: str) -> list[ResolvedPool]:
        return [p for p in self.pools if p.cluster is not None and p.cluster.name == cluster]

    def system_pool(self, cluster: str) -> ResolvedPool | None:
        """The cluster's system pool, or None where the spec disables it."""
        return next((p for p in self.system_pools
                     if p.cluster is not None and p.cluster.name == cluster), None)

    def team(self, name: str) -> Team:
        return next(t for t in self.spec.teams if t.name == name)

    def team_monthly_usd(self, team: str) -> tuple[float, int]:
        """(known monthly cost of a team's pools at their declared size, how many of its pools
        have no price). The system pools count for `PLATFORM_TEAM`."""
        cost = self.team_cost(team)
        return cost.monthly_usd, len(cost.unpriced)

    def team_cost(self, team: str) -> TeamCost:
        """A team's monthly cost: declared size, range, unpriced pools. The system pools count
        for `PLATFORM_TEAM`."""
        declared = low = high = 0.0
        unpriced: list[str] = []
        for pool in (*self.pools, *self.system_pools):
            if pool.team != team:
                continue
            cost = pool.cost
            if cost is None or cost.usd_per_node_hour is None:
                unpriced.append(f"{pool.cluster.name}/{pool.name}" if pool.system and
                                pool.cluster else pool.name)
                continue
            declared += cost.monthly_usd or 0.0
            low += cost.min_monthly_usd or 0.0
            high += cost.max_monthly_usd or 0.0
        if team == PLATFORM_TEAM:  # the control planes run whatever the pools' size
            fixed = sum(c.monthly_usd for c in self.control_planes)
            declared, low, high = declared + fixed, low + fixed, high + fixed
        budget = next((t.monthly_budget_usd for t in self.spec.teams if t.name == team), None)
        return TeamCost(team, declared, low, high, tuple(unpriced), budget)

    def team_costs(self) -> list[TeamCost]:
        """Every declared team's cost, then the platform's (the system pools and the control
        planes) when no team of that name is declared, sorted by name."""
        names = [t.name for t in self.spec.teams]
        if (self.system_pools or self.control_planes) and PLATFORM_TEAM not in names:
            names.append(PLATFORM_TEAM)
        return sorted((self.team_cost(n) for n in names), key=lambda c: c.name)
