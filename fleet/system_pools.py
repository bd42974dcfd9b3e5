"""Every cluster's system pool, and the rules of plain CPU pools.

Every accelfleet pool carries an accelerator taint and GKE's default pool is removed, so a
cluster needs untainted nodes for what tolerates no accelerator taint: CoreDNS (kube-dns on
GKE), the NVIDIA device plugin chart's node-feature-discovery master and gc, the JobSet
controller, Kueue later. Without them the atomic Helm releases time out and `pulumi up` fails.
So each cluster gets a small untainted CPU pool, the system pool, sized by the catalog
(`system_pool` in gcp.yaml / aws.yaml) unless `clusters[].system_pool` says otherwise, and
paid by the platform (`PLATFORM_TEAM`), never by a team that owns accelerators.

`fleet.rules.validate` calls `system_pools` and `check_cpu_pool`; they report through its `add`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fleet.catalog import Cloud, Shape
from fleet.errors import AccelfleetError, Problem, Where
from fleet.model import PLATFORM_TEAM, SYSTEM_POOL, ResolvedPool
from fleet.spec.fields import Cluster, FleetSpec, Pool

if TYPE_CHECKING:  # the rules checker lends its problems, catalog and zone rules
    from fleet.rules.validate import Checker as Checks

# A system pool spreads over two zones unless told otherwise: DNS survives a lost zone.
DEFAULT_ZONE_COUNT = 2
# Zones to pad with when the cluster's pools name fewer than two: every Google Cloud region has
# zones b and c, not always a. None on AWS: zone letters map to different zones per account in
# the oldest regions, and not every account has every letter (ap-northeast-1b); the EKS
# component pads from the account's own zones at deploy time (components/aws/_layout.py).
PAD_ZONE_LETTERS: dict[Cloud, str] = {"gcp": "bc", "aws": ""}


def system_pools(checks: Checks, spec: FleetSpec) -> tuple[list[ResolvedPool], list[Problem]]:
    """(the system pool of every cluster that has one, warnings for the clusters without)."""
    for pool in spec.pools:
        if pool.name == SYSTEM_POOL:
            checks.add(Where("pools", name=pool.name, field="name"),
                       f"the name {SYSTEM_POOL!r} is reserved for every cluster's system pool",
                       "give the pool another name; size the system pool under "
                       "`clusters[].system_pool`")
    resolved: list[ResolvedPool] = []
    warnings: list[Problem] = []
    by_cluster: dict[str, list[Pool]] = {}  # one pass, however many clusters
    for p in spec.pools:
        by_cluster.setdefault(p.cluster or "", []).append(p)
    for cluster in spec.clusters:
        region = spec.region_of(cluster.cloud)
        if region is None:
            continue  # reported by the cluster rules
        at = Where("clusters", name=cluster.name, field="system_pool")
        if not cluster.system_pool.enabled:
            warnings.append(Problem(
                at, "disabled: nothing untainted is left for CoreDNS, the device plugin's "
                "node-feature-discovery master and gc, or the JobSet controller, unless a CPU "
                "pool of the cluster hosts them; their Helm releases time out without a node",
                "remove `enabled: false`, or make sure an untainted CPU pool joins the cluster"))
            continue
        members = by_cluster.get(cluster.name, [])
        system = _resolve(checks, cluster, region, members, at)
        if system is not None:
            resolved.append(system)
    return resolved, warnings


def default_zones(cloud: Cloud, region: str, pools: Sequence[Pool]) -> list[str]:
    """The first two zones the cluster's pools name (in the region), padded to two where the
    cloud's zone letters are the same in every project (Google Cloud). On AWS none: the EKS
    component puts a system pool without zones of its own in the account's first two zones
    EKS accepts for its control plane (components/aws/_layout.py cluster_zones), which only
    the deploy can read, never the pools' zones; `fleet validate` shows them as the account's
    (issue 36: validate showed the pools' zones, the deploy used the account's)."""
    if cloud == "aws":
        return []
    sep = "-"
    zones = list(dict.fromkeys(z for p in pools for z in p.zones
                               if z.startswith(f"{region}{sep}")))[:DEFAULT_ZONE_COUNT]
    for letter in PAD_ZONE_LETTERS[cloud]:
        zone = f"{region}{sep}{letter}"
        if len(zones) < DEFAULT_ZONE_COUNT and zone not in zones:
            zones.append(zone)
    return zones


def _resolve(checks: Checks, cluster: Cluster, region: str, pools: Sequence[Pool],
             at: Where) -> ResolvedPool | None:
    sp, cloud = cluster.system_pool, cluster.cloud
    defaults = checks.catalog.system_pool_defaults(cloud)
    machine = sp.machine_type or defaults.machine_type
    try:
        shape = checks.catalog.resolve(machine, cloud=cloud)
    except AccelfleetError as exc:
        checks.add(at.dot("machine_type"), exc.message, exc.hint)
        return None
    if shape.kind != "cpu":
        checks.add(at.dot("machine_type"),
                   f"{machine!r} is a {shape.kind.upper()} machine; a system pool needs a CPU "
                   "machine type (its nodes carry no accelerator and no taint)",
                   f"use a CPU machine type, e.g. {defaults.machine_type} (the default)",
                   tuple(checks.catalog.cpu_machine_names(cloud)))
        return None
    auto = sp.autoscaling
    if auto is not None and auto.min_nodes < 1:
        checks.add(at.dot("autoscaling"),
                   "a system pool at 0 nodes leaves CoreDNS and the add-ons with no node",
                   "set `min_nodes: 1` or more")
    if auto is not None and auto.min_nodes > auto.max_nodes:
        checks.add(at.dot("autoscaling"),
                   f"min_nodes {auto.min_nodes} is above max_nodes {auto.max_nodes}",
                   "make min_nodes <= max_nodes")
    nodes = defaults.nodes if sp.nodes is None and auto is None else sp.nodes
    pool = Pool(name=SYSTEM_POOL, team=PLATFORM_TEAM, accelerator=shape.machine_type,
                cluster=cluster.name, nodes=nodes, autoscaling=auto,
                zones=list(sp.zones) or default_zones(cloud, region, pools),
                disk_size_gb=sp.disk_size_gb or defaults.disk_size_gb, upgrade=sp.upgrade)
    if sp.zones:  # defaulted zones are the pools' (checked there) or the padding letters
        checks._zones(pool, at, cloud, region)
    checks._nodes_per_zone(pool, at, cloud)
    # costed with every other pool by `fleet.pricing` (stack rates, list prices)
    return ResolvedPool(spec=pool, cloud=cloud, region=region, cluster=cluster, shape=shape,
                        placement="none", networking=None, system=True)


def check_cpu_pool(checks: Checks, pool: Pool, at: Where, shape: Shape) -> None:
    """A CPU pool takes none of the accelerator-only fields."""
    if shape.kind != "cpu":
        return
    cap = pool.capacity
    if cap.flex_start or cap.queued:
        mode = "flex-start" if cap.flex_start else "queued"
        checks.add(at.dot("capacity"),
                   f"{mode} provisioning is for GPU and TPU pools, not a CPU pool",
                   "use on-demand or spot capacity, or a reservation")
    if pool.driver != "default":
        checks.add(at.dot("driver"), "a CPU pool has no GPU driver to install",
                   "remove `driver`")
    if pool.placement == "compact":
        checks.add(at.dot("placement"), "compact placement is for accelerator pools: a CPU "
                   "pool is built without a placement policy or group", "remove `placement`")
