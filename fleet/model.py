"""A validated fleet: the spec with every pool resolved against the catalog.

Decisions live here (how many nodes, which placement, which GPU networking, what it costs),
so that components only turn them into resources and the CLI only puts them into words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet.catalog import Cloud, GpuNetworking, Shape
from fleet.errors import Problem
from fleet.spec import Cluster, FleetSpec, Pool, Team

POOL_LABEL = "accelfleet.io/pool"
TEAM_LABEL = "accelfleet.io/team"
ACCELERATOR_LABEL = "accelfleet.io/accelerator"
# Every cluster's system pool (untainted CPU nodes for the add-ons) has this name, and the
# platform pays for it: it is reported under this team, never under a team that owns pools.
SYSTEM_POOL = "system"
PLATFORM_TEAM = "platform"


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
    monthly_usd: float | None
    system: bool = False  # the cluster's system pool (spec synthesised from `system_pool`)

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
    def initial_nodes(self) -> int:
        """Nodes of each node pool (one slice) at creation: none for flex-start and queued
        pools, whose nodes come when workloads ask for them."""
        if self.flex_start:
            return 0
        if self.shape.tpu is not None:
            return self.node_count // self.spec.multislice
        return self.node_count

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
            "monthly_usd": None if self.monthly_usd is None else round(self.monthly_usd, 2),
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
    warnings: what is allowed but deserves a look (a cluster without a system pool).
    """

    spec: FleetSpec
    pools: tuple[ResolvedPool, ...]
    source: str = "fleet spec"
    system_pools: tuple[ResolvedPool, ...] = ()
    warnings: tuple[Problem, ...] = ()

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
        """(known monthly cost of a team's pools, how many of its pools have no price).
        The system pools count for `PLATFORM_TEAM`."""
        total, unpriced = 0.0, 0
        for pool in (*self.pools, *self.system_pools):
            if pool.team != team:
                continue
            if pool.monthly_usd is None:
                unpriced += 1
            else:
                total += pool.monthly_usd
        return total, unpriced
