"""Validation of a fleet spec: types first (pydantic), then the cross-field rules.

Every rule adds a `Problem` naming the pool and field, the bad value, what is accepted and the
fix; all problems are reported together in one `SpecError`.
"""

from __future__ import annotations

import re
from datetime import date

from pydantic import ValidationError

from fleet.catalog import Catalog, Cloud, GpuNetworking, Shape, load_catalog
from fleet.control_planes import control_plane_costs
from fleet.errors import AccelfleetError, Problem, SpecError, Where, suggest
from fleet.model import PLATFORM_TEAM, ControlPlaneCost, Fleet, ResolvedPool
from fleet.names import (
    POOL_PLACES,
    check_cluster_names,
    check_derived_names,
    check_gce_reservation,
    check_labels,
    check_name,
    check_namespace,
    check_pool_name,
    check_team_names,
    check_unique,
)
from fleet.pricing import check_budgets, priced, stack_rates
from fleet.routing import ClusterRouting
from fleet.rules.cloud_values import check_cloud_values
from fleet.rules.eks import check_eks_cluster, check_offline_zones, check_vpc_cni
from fleet.rules.endpoints import endpoint_checks
from fleet.rules.expiry import expiry_warnings
from fleet.rules.fit import check_fit
from fleet.rules.gate import check_gate, gate_image_warnings
from fleet.rules.generated_names import check_eks_labels, check_smoke_names
from fleet.rules.limits import (
    check_cluster_count,
    check_cluster_nodes,
    check_pool_bounds,
    check_zone_offers,
    check_zones,
    known_regions,
)
from fleet.rules.network import check_capacity, check_cluster_ranges
from fleet.rules.problems import RuleProblems
from fleet.rules.routing import decide_routing
from fleet.rules.set_aside import rules_beside
from fleet.rules.support import check_support
from fleet.rules.tpu_vms import tpu_vm_limits
from fleet.rules.unique_names import check_unique_names, derived_names
from fleet.rules.upgrade import check_upgrade
from fleet.spec.errors import from_pydantic, readme_words, records
from fleet.spec.fields import Cluster, FleetSpec, Pool
from fleet.system_pools import check_cpu_pool, system_pools


def validate_fleet(
    raw: object, *, catalog: Catalog | None = None, source: str = "fleet spec"
) -> Fleet:
    """Parse and check a fleet spec; return the resolved `Fleet` or raise `SpecError`."""
    catalog = catalog or load_catalog()
    try:
        spec = FleetSpec.model_validate(raw)
    except ValidationError as exc:
        problems = from_pydantic(exc, raw) + rules_beside(
            exc, raw, lambda spec: _checked(spec, catalog))
        raise SpecError(problems, source=source, records=records(problems, raw)) from None
    checker = Checker(spec, catalog)
    pools = checker.run()
    checker.problems = readme_words(checker.problems, raw)
    if checker.problems:
        partial = Fleet(spec=spec, pools=tuple(pools), source=source,
                        system_pools=tuple(checker.system_pools),
                        warnings=tuple(checker.warnings),
                        control_planes=tuple(checker.control_planes),
                        routing=checker.routing)
        raise SpecError(checker.problems, source=source, partial=partial,
                        records=records(checker.problems, raw))
    return Fleet(spec=spec, pools=tuple(pools), source=source,
                 system_pools=tuple(checker.system_pools), warnings=tuple(checker.warnings),
                 control_planes=tuple(checker.control_planes), routing=checker.routing)


def _checked(spec: FleetSpec, catalog: Catalog) -> tuple[list[Problem], list[ResolvedPool]]:
    checker = Checker(spec, catalog)
    resolved = checker.run()
    return checker.problems, resolved


class Checker(RuleProblems):
    def __init__(self, spec: FleetSpec, catalog: Catalog) -> None:
        super().__init__(catalog)
        self.spec = spec
        self.clusters = {c.name: c for c in spec.clusters}
        self.teams = {t.name: t for t in spec.teams}
        self.system_pools: list[ResolvedPool] = []  # see fleet.system_pools
        self.control_planes: list[ControlPlaneCost] = []  # see fleet.control_planes
        self.warnings: list[Problem] = []
        self.routing: tuple[ClusterRouting, ...] = ()  # see fleet.routing
        self.regions_known: set[Cloud] = set()  # clouds whose declared region exists
        self.pool_names = [p.name for p in spec.pools]
        self.taken = frozenset(self.pool_names)  # names a fix must not propose

    def run(self) -> list[ResolvedPool]:
        check_cluster_names(self, self.spec)
        check_derived_names(self, self.spec)
        check_team_names(self, self.spec, _team_clouds(self.spec))
        check_unique(self, "pools", self.pool_names)
        for pool in self.spec.pools:
            check_name(self, Where("pools", name=pool.name, field="name"), "pool name",
                       pool.name, POOL_PLACES,
                       self.taken)
        check_namespace(self, self.spec)
        self.regions_known = known_regions(self, self.spec)
        check_cluster_ranges(self, self.spec)
        endpoint_problems, endpoint_warnings = endpoint_checks(self.spec)
        self.problems += endpoint_problems
        for cluster in self.spec.clusters:
            self._cluster(cluster)
        resolved = []
        for pool in self.spec.pools:
            r = self._pool(pool)
            if r is not None:
                resolved.append(r)
        self.system_pools, system_warnings = system_pools(self, self.spec)
        self.warnings = [*endpoint_warnings, *self.warnings, *system_warnings]
        rates = stack_rates(self, self.spec)  # the stack's `prices:`, checked
        resolved = priced(resolved, self.catalog, rates)
        self.warnings = [*self.warnings, *expiry_warnings(resolved, date.today())]
        self.system_pools = priced(self.system_pools, self.catalog, rates)
        self.control_planes = control_plane_costs(self, self.spec, self.catalog, date.today(),
                                                  self.warnings)
        # a `platform` team's budget covers the system pools and the control planes
        check_budgets(self, self.spec, resolved + self.system_pools,
                      {PLATFORM_TEAM: sum(c.monthly_usd for c in self.control_planes)})
        # Kueue: resolved once here, kept on the Fleet (Fleet.routing)
        routing, problems, routing_warnings = decide_routing(self.spec, resolved, self.catalog)
        self.routing = tuple(routing)
        self.problems += problems
        self.warnings = [*self.warnings, *routing_warnings]
        self._rdma_zones(resolved)
        self._limits(resolved + self.system_pools)
        check_cloud_values(self, self.spec, resolved)  # what the cloud would refuse at deploy
        check_support(self, resolved)  # consumption options and versions (support.yaml)
        # every derived name unique in its scope, once over the whole fleet (issue 27)
        check_unique_names(self, derived_names(
            self.spec, resolved, self.system_pools, self.routing))
        # every name a smoke run or gate proof generates, and each EKS node group's labels and
        # taints, within the limits of what they become (issue 36 class 2)
        check_smoke_names(self, resolved)
        for p in resolved:
            check_eks_labels(self, p)
        # each pool's upgrade policy against what its cloud takes (fleet.rules.upgrade), and
        # its zones against the AZ IDs closed to new resources (fleet.rules.eks)
        upgrade_warnings: list[Problem] = []
        for p in resolved + self.system_pools:
            check_upgrade(self, p, upgrade_warnings)
            check_offline_zones(self, p, self.catalog, upgrade_warnings)  # aws.yaml
        self.warnings = [*self.warnings, *upgrade_warnings]
        # every pod the fleet creates fits the nodes it selects (issue 27 class 1)
        check_fit(self, self.spec, resolved, self.system_pools, self.routing)
        # the default controller image of a release not published yet (a warning)
        self.warnings = [*self.warnings, *gate_image_warnings(self.spec.gate, resolved)]
        return resolved

    def _limits(self, pools: list[ResolvedPool]) -> None:
        """Upper bounds and address ranges, every pool at its largest (fleet.rules.limits,
        fleet.rules.network); a default quota the account can raise is a warning."""
        warnings: list[Problem] = []
        check_cluster_count(self, self.spec, warnings)
        for p in pools:
            check_pool_bounds(self, p, warnings)
        check_cluster_nodes(self, self.spec, pools)
        check_capacity(self, self.spec, pools)
        self.warnings = [*self.warnings, *warnings]

    def _cluster(self, cluster: Cluster) -> None:
        if self.spec.clouds.of(cluster.cloud) is None:
            self.add(
                Where("clusters", name=cluster.name, field="cloud"),
                f"cluster is on {cluster.cloud} but `clouds.{cluster.cloud}` is not declared",
                f"add `clouds: {{{cluster.cloud}: ...}}` with its "
                + ("project and region" if cluster.cloud == "gcp" else "account and region"),
            )
        check_eks_cluster(self, cluster, self.warnings)  # admins, private endpoint
        check_vpc_cni(cluster, self.catalog.eks_addons, self.warnings)  # AWS's published table
        addons = self.catalog.eks_addons
        version = cluster.kubernetes_version
        if cluster.cloud == "aws" and version is not None and version not in addons.versions:
            self.add(Where("clusters", name=cluster.name, field="kubernetes_version"),
                     f"no EKS add-on versions (vpc-cni, kube-proxy, coredns) are pinned for "
                     f"Kubernetes {version}",
                     "use a version the catalog pins add-ons for, or add its pins to "
                     "fleet/catalog/data/aws.yaml `eks_addons`", tuple(addons.versions))

    # -- pools -----------------------------------------------------------------------------
    def _pool(self, pool: Pool) -> ResolvedPool | None:
        at = Where("pools", name=pool.name)
        cloud, cluster = self._placement_target(pool, at)
        if pool.team not in self.teams:
            self.add(at.dot("team"), f"unknown team {pool.team!r}",
                     "declare it under `teams`, or use a declared team",
                     tuple(suggest(pool.team, self.teams)) or tuple(self.teams))
        if cloud is None:
            return None
        region = self._region(cloud)
        self._zones(pool, at, cloud, region)  # needs no shape: named even beside a bad one
        try:
            # The Cloud TPU API makes an 8-chip v5e / v6e slice one 8-chip VM; GKE makes it
            # two 4-chip nodes (its single-host 8t pools are asked for by machine type).
            shape = self.catalog.resolve(pool.accelerator, cloud=cloud, topology=pool.topology,
                                         single_host=pool.runtime == "tpu-vm")
        except AccelfleetError as exc:
            field = "topology" if pool.topology and "topology" in exc.message else "accelerator"
            self.add(at.dot(f"{field}"), exc.message, exc.hint)
            return None
        if cloud in self.regions_known:
            check_zone_offers(self, pool, at, shape, region)  # zones.yaml
        self._runtime(pool, at, cloud, shape.tpu is not None)
        self._nodes(pool, at, shape.multi_host, shape.tpu is not None, shape.hosts)
        self._nodes_per_zone(pool, at, cloud)
        self._capacity(pool, at, cloud)
        self._capacity_block(pool, at, shape)
        check_cpu_pool(self, pool, at, shape)
        check_gate(self, pool, at, shape)
        self._cloud_fields(pool, at, cloud)
        check_labels(self, pool, at)
        if shape.tpu is not None:
            check_pool_name(self, pool, at, self.taken, tpu_slices=pool.multislice,
                            runtime=pool.runtime or "gke")
        if cloud == "gcp":
            check_gce_reservation(self, pool, at)
        networking = shape.networking if pool.fabric == "auto" else None
        placement = self._placement(pool, at, shape, networking is not None)
        self._zonal(pool, at, networking, placement)
        return ResolvedPool(spec=pool, cloud=cloud, region=region, cluster=cluster,
                            shape=shape, placement=placement, networking=networking)

    def _placement_target(self, pool: Pool, at: Where) -> tuple[Cloud | None, Cluster | None]:
        if pool.runtime == "tpu-vm":
            if pool.cluster is not None:
                self.add(at.dot("cluster"), "a tpu-vm pool runs outside Kubernetes",
                         "remove `cluster`, or drop `runtime: tpu-vm` to run it in GKE")
            if self.spec.clouds.gcp is None:
                self.add(at.dot("runtime"), "tpu-vm pools need `clouds.gcp`",
                         "declare clouds.gcp with project and region")
                return None, None
            return "gcp", None
        if pool.cluster is None:
            self.add(at.dot("cluster"), "is required", "name the cluster the pool joins",
                     tuple(self.clusters))
            return None, None
        cluster = self.clusters.get(pool.cluster)
        if cluster is None:
            self.add(at.dot("cluster"), f"unknown cluster {pool.cluster!r}",
                     "declare it under `clusters`, or use a declared cluster",
                     tuple(suggest(pool.cluster, self.clusters)) or tuple(self.clusters))
            return None, None
        if self.spec.clouds.of(cluster.cloud) is None:
            return None, None
        return cluster.cloud, cluster

    def _region(self, cloud: Cloud) -> str:
        region = self.spec.region_of(cloud)
        assert region is not None  # _placement_target returns only declared clouds
        return region

    def _zones(self, pool: Pool, at: Where, cloud: Cloud, region: str) -> None:
        if cloud in self.regions_known:  # an unknown region is reported once, not per pool
            check_zones(self, pool, at, cloud, region)

    def _runtime(self, pool: Pool, at: Where, cloud: Cloud, is_tpu: bool) -> None:
        runtime = pool.runtime
        if runtime == "tpu-vm" and not is_tpu:
            self.add(at.dot("runtime"), "tpu-vm is for Cloud TPU pools only",
                     "remove `runtime`, or choose a TPU accelerator")
        if runtime == "tpu-vm" and (pool.capacity.flex_start or pool.capacity.queued):
            # Flex-start and queued TPU VMs are queued resources; pulumi-gcp's
            # tpu.V2QueuedResource has no service account, shielded VM, labels, provisioning
            # model or max run duration (tests/components/test_gcp_tpu_vms.py).
            self.add(at.dot("capacity"),
                     "flex-start and queued TPU VMs are Cloud TPU queued resources, and "
                     "pulumi-gcp's tpu.V2QueuedResource cannot give them a service account, "
                     "secure boot, labels or the flex-start provisioning model (they would run "
                     "as the default compute service account)",
                     "drop `runtime: tpu-vm` to run the slice in GKE, where flex-start and "
                     "queued provisioning work, or use on-demand, spot or a reservation")
        if runtime == "tpu-vm":
            tpu_vm_limits(self, pool, at)
        expected = {"gcp": "gke", "aws": "eks"}[cloud]
        if runtime in ("gke", "eks") and runtime != expected:
            self.add(at.dot("runtime"), f"{runtime!r} does not match a {cloud} cluster",
                     f"use {expected!r} or leave `runtime` out", (expected, "tpu-vm"))
        if not is_tpu and (pool.topology is not None or pool.multislice != 1):
            field = "topology" if pool.topology is not None else "multislice"
            self.add(at.dot(f"{field}"), f"only TPU pools take `{field}`", f"remove `{field}`")

    def _nodes(self, pool: Pool, at: Where, multi_host: bool, is_tpu: bool, hosts: int) -> None:
        auto = pool.autoscaling
        flex = pool.capacity.flex_start or pool.capacity.queued
        if is_tpu:
            if pool.nodes is not None and pool.nodes != hosts:
                self.add(
                    at.dot("nodes"),
                    f"a TPU slice of this topology has exactly {hosts} node(s), not {pool.nodes}",
                    "remove `nodes` (it follows from the topology) or change the topology"
                    + ("; a multi-host slice cannot be resized" if multi_host else ""),
                )
            # GKE runs Multislice on multi-host TPU slices only (issue 20 item 5;
            # https://cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice, not read
            # here).
            if not multi_host and pool.multislice > 1:
                self.add(at.dot("multislice"),
                         f"{pool.multislice} slices of a single-host topology: GKE supports "
                         "Multislice only for multi-host TPU slices",
                         "use a multi-host topology for the slices, or remove `multislice` "
                         "(one slice per pool)")
            # GKE and xpk scale a multi-host slice atomically: none of its hosts, or all.
            if auto is not None and multi_host and (auto.min_nodes, auto.max_nodes) != (0, hosts):
                self.add(at.dot("autoscaling"),
                         f"a multi-host TPU slice scales atomically between 0 and all its {hosts} "
                         f"hosts, not {auto.min_nodes}..{auto.max_nodes}",
                         f"use `autoscaling: {{min_nodes: 0, max_nodes: {hosts}}}` or remove it; "
                         "add slices with `multislice`")
        elif pool.nodes is None and auto is None:
            self.add(at.dot("nodes"), "is required for a GPU pool",
                     "add `nodes: N`, or `autoscaling: {min_nodes: A, max_nodes: B}`")
        elif flex and auto is None and not pool.nodes:
            self.add(at.dot("nodes"),
                     "a flex-start or queued pool autoscales from 0 and needs a maximum",
                     "set `nodes: N` (the most nodes it may get) or "
                     "`autoscaling: {min_nodes: 0, max_nodes: N}`")
        if flex and auto is not None and auto.min_nodes != 0:
            self.add(at.dot("autoscaling"),
                     f"a flex-start or queued pool scales from 0 (GKE refuses a minimum of "
                     f"{auto.min_nodes})", "set `min_nodes: 0`")
        if auto is not None:
            if auto.min_nodes > auto.max_nodes:
                self.add(at.dot("autoscaling"),
                         f"min_nodes {auto.min_nodes} is above max_nodes {auto.max_nodes}",
                         "make min_nodes <= max_nodes")
            elif pool.nodes is not None and not auto.min_nodes <= pool.nodes <= auto.max_nodes:
                self.add(at.dot("nodes"),
                         f"{pool.nodes} is outside autoscaling {auto.min_nodes}..{auto.max_nodes}",
                         "put `nodes` inside the autoscaling range")

    def _nodes_per_zone(self, pool: Pool, at: Where, cloud: Cloud) -> None:
        # GKE counts a fixed node pool's nodes per zone: N nodes over k zones is N/k in each.
        zones = len(pool.zones)
        flex = pool.capacity.flex_start or pool.capacity.queued  # autoscaled: no split
        if cloud == "gcp" and pool.autoscaling is None and not flex and pool.nodes \
                and zones > 1 and pool.nodes % zones:
            lower = pool.nodes - pool.nodes % zones
            self.add(
                at.dot("nodes"),
                f"{pool.nodes} nodes cannot be spread evenly over {zones} zones (GKE places "
                "the same number of nodes in each zone)",
                f"use a multiple of {zones} (e.g. {lower or zones}), one zone, or autoscaling",
            )

    def _capacity(self, pool: Pool, at: Where, cloud: Cloud) -> None:
        cap = pool.capacity
        where = at.dot("capacity")
        if cap.spot and cap.reservation:
            self.add(where, "spot and a reservation cannot be combined",
                     "remove `spot` to consume the reservation, or remove `reservation`")
        if (cap.flex_start or cap.queued) and cap.reservation:
            mode = "flex_start" if cap.flex_start else "queued"
            self.add(where, f"{mode} provisioning cannot use a reservation",
                     f"remove `{mode}` or remove `reservation`")
        if (cap.flex_start or cap.queued) and cap.spot:
            mode = "flex_start" if cap.flex_start else "queued"
            self.add(where, f"{mode} excludes spot", f"choose one of {mode} or spot")
        if cloud == "aws" and (cap.flex_start or cap.queued):
            self.add(where, "flex-start and queued provisioning are GKE features",
                     "on aws use on-demand, spot or a capacity reservation (cr-...)")
        if cap.block and (cloud != "aws" or not cap.reservation):
            self.add(where.dot("block"),
                     "`block` marks an AWS Capacity Block for ML, given as `reservation`",
                     "set `reservation: cr-...` with the capacity block's id, or remove `block`")
        if cloud == "aws" and cap.reservation and not re.match(r"^cr-[0-9a-f]{8,17}$",
                                                               cap.reservation):
            self.add(where.dot("reservation"),
                     f"{cap.reservation!r} is not an EC2 capacity reservation id",
                     "use the id of the reservation or capacity block, e.g. cr-0123456789abcdef0")

    def _capacity_block(self, pool: Pool, at: Where, shape: Shape) -> None:
        # EC2 sells Capacity Blocks for a few instance types only (catalog aws.yaml).
        if not pool.capacity.block or shape.machine is None or shape.machine.capacity_block:
            return
        offered = tuple(sorted(m.name for m in self.catalog.machines.values()
                               if m.cloud == shape.cloud and m.capacity_block))
        self.add(at.dot("capacity.block"),
                 f"{shape.machine_type} cannot be reserved as an EC2 Capacity Block for ML",
                 "choose an instance type that Capacity Blocks offer, or remove `block` to use "
                 "an On-Demand Capacity Reservation (cr-...) of this type", offered)

    def _cloud_fields(self, pool: Pool, at: Where, cloud: Cloud) -> None:
        if cloud == "aws" and pool.driver != "default":
            self.add(at.dot("driver"), "on aws the NVIDIA AMI carries the driver",
                     "remove `driver`; choose the AMI with `ami: al2023 | bottlerocket`")
        if cloud == "gcp" and pool.ami is not None:
            self.add(at.dot("ami"), "`ami` is for EKS node groups",
                     "remove it; GKE pools choose the driver with `driver`")

    def _placement(self, pool: Pool, at: Where, shape: Shape, fabric: bool) -> str:
        multi_host = shape.multi_host
        refusal = self._compact_refusal(pool, shape)
        placement = pool.placement
        if placement is None:
            placement = "compact" if multi_host or (fabric and not refusal) else "none"
        if placement == "compact" and refusal:
            self.add(at.dot("placement"), refusal[0], refusal[1])
        if placement == "compact" and len(pool.zones) > 1:
            # The fix must pass: an EFA pool in `placement: none` is refused for its zones
            # next (EFA does not cross Availability Zones), so it is told what does pass.
            efa = fabric and shape.cloud == "aws"
            self.add(at.dot("placement"),
                     f"compact placement needs a single zone, got {len(pool.zones)}",
                     "keep one zone (EFA does not cross Availability Zones), or set "
                     "`fabric: off` and `placement: none` if the pool needs no EFA" if efa
                     else "keep one zone, or set `placement: none`")
        if multi_host and placement == "none":
            self.add(at.dot("placement"), "a multi-host TPU slice is always placed compactly",
                     "remove `placement: none`")
        return placement

    def _compact_refusal(self, pool: Pool, shape: Shape) -> tuple[str, str] | None:
        """Why GKE refuses COMPACT placement for a GPU pool's capacity (message, hint), if it
        does: never with queued provisioning; with flex-start only on the machine types the
        catalog marks (Cluster Toolkit gke-node-pool preconditions). TPUs are exempt."""
        cap, machine = pool.capacity, shape.machine
        if shape.tpu is not None or machine is None:
            return None
        if cap.queued:
            return ("GKE refuses compact placement on a queued GPU pool",
                    "set `placement: none`, or use flex-start without queued provisioning")
        if cap.flex_start and not machine.flex_start_compact:
            allowed = sorted(m.name for m in self.catalog.machines.values()
                             if m.flex_start_compact)
            return (f"GKE refuses compact placement with flex-start on {machine.name}",
                    f"set `placement: none`; compact flex-start pools need one of "
                    f"{', '.join(allowed)}")
        return None

    def _zonal(self, pool: Pool, at: Where, networking: GpuNetworking | None,
               placement: str) -> None:
        """EFA traffic and capacity reservations stay in one zone; compact pools are refused
        for several zones by `_placement` already."""
        if len(pool.zones) < 2:
            return
        zones = ", ".join(pool.zones)
        if networking is not None and networking.kind == "efa" and placement == "none":
            self.add(at.dot("zones"),
                     f"EFA does not cross Availability Zones, and this EFA pool spans {zones}",
                     "keep the pool in one zone, or set `fabric: off` if it needs no EFA")
        if pool.capacity.reservation:
            kind = "Capacity Block" if pool.capacity.block else "capacity"
            self.add(at.dot("zones"),
                     f"a {kind} reservation ({pool.capacity.reservation}) holds capacity in one "
                     f"zone, and this pool spans {zones}: nodes outside that zone never launch",
                     "list only the reservation's zone under `zone`")

    def _rdma_zones(self, pools: list[ResolvedPool]) -> None:
        # A GKE cluster's RDMA VPC uses a zonal network profile: its RDMA pools share one zone.
        by_cluster: dict[str, dict[str, list[str]]] = {}
        for p in pools:
            if p.cluster is not None and p.networking is not None and \
                    p.networking.kind == "rdma":
                zones = by_cluster.setdefault(p.cluster.name, {})
                for zone in p.spec.zones:
                    zones.setdefault(zone, []).append(p.name)
        for cluster, zones in by_cluster.items():
            if len(zones) > 1:
                listing = "; ".join(f"{z}: {', '.join(n)}" for z, n in sorted(zones.items()))
                self.add(
                    Where("clusters", name=cluster),
                    f"GPUDirect RDMA pools are in {len(zones)} zones ({listing}); the "
                    "cluster's RDMA network profile is zonal",
                    "put every RDMA pool (a3-ultragpu-8g, a4-highgpu-8g) of a cluster in one "
                    "zone, or split them over clusters",
                )


def _team_clouds(spec: FleetSpec) -> dict[str, set[Cloud]]:
    """The clouds each team's pools run on (a tpu-vm pool: gcp)."""
    clusters = {c.name: c.cloud for c in spec.clusters}
    out: dict[str, set[Cloud]] = {}
    for p in spec.pools:
        cloud = "gcp" if p.runtime == "tpu-vm" else clusters.get(p.cluster or "")
        if cloud is not None:
            out.setdefault(p.team, set()).add(cloud)
    return out
