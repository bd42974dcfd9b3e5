"""Where a fleet may live and how large it may grow: regions and zones the clouds offer, the zones
that offer each accelerator, and the upper bounds of nodes, disks and slices (catalog
regions.yaml, zones.yaml and limits.yaml `bounds`).

A bound of kind `limit` is refused (the cloud refuses it); a default `quota` the account can
raise is a warning naming the quota; accelfleet's own bounds (where the provider states none)
are refused too, far beyond any real fleet. Each refusal names the pool, the field, the value,
the bound and its source.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.catalog import CLOUDS, Bound, Cloud, Shape
from fleet.errors import Problem, Where, suggest
from fleet.model import ResolvedPool
from fleet.rules.problems import RuleProblems as Reporter
from fleet.spec.fields import FleetSpec, Pool


def known_regions(r: Reporter, spec: FleetSpec) -> set[Cloud]:
    """Report a region the cloud does not offer; the clouds whose region is known."""
    ok: set[Cloud] = set()
    for cloud in CLOUDS:
        region = spec.region_of(cloud)
        if region is None:
            continue
        regions = r.catalog.regions[cloud]
        if region in regions.zones:
            ok.add(cloud)
            continue
        near = suggest(region, regions.zones)
        r.add(Where("clouds", field=f"{cloud}.region"),
              f"{region!r} is not {'a Google Cloud' if cloud == 'gcp' else 'an AWS'} "
              "region" + (f"; did you mean {', '.join(map(repr, near))}?" if near else ""),
              "use a region the cloud offers (fleet/catalog/data/regions.yaml lists them)",
              tuple(near) or tuple(sorted(regions.zones))[:12])
    return ok


def check_zones(r: Reporter, pool: Pool, at: Where, cloud: Cloud, region: str) -> None:
    """Every zone of the pool is a zone of the fleet's region that the cloud offers."""
    regions = r.catalog.regions[cloud]
    offered = regions.zones.get(region, ())
    example = offered[0] if offered else (f"{region}-a" if cloud == "gcp" else f"{region}a")
    if not pool.zones:
        r.add(at.dot("zone"), "is required", f"add `zone: {example}`", offered)
    for i, zone in enumerate(pool.zones):
        if regions.region_of(zone) != region:
            r.add(at.dot(f"zones[{i}]"), f"zone {zone!r} is not in region {region}",
                  f"use a zone of {region}, such as {example}, or change the region", offered)
        elif offered and not regions.zone_ok(zone):
            near = suggest(zone, offered)
            r.add(at.dot(f"zones[{i}]"), f"{region} has no zone {zone!r}"
                  + (f"; did you mean {', '.join(map(repr, near))}?" if near else ""),
                  "use one of the region's zones (fleet/catalog/data/regions.yaml lists them)",
                  offered)
    if len(set(pool.zones)) != len(pool.zones):
        r.add(at.dot("zones"), "a zone is listed twice", "list each zone once")


def check_zone_offers(r: Reporter, pool: Pool, at: Where, shape: Shape, region: str) -> None:
    """Every zone of the pool offers its machine type or TPU generation (zones.yaml). Where the
    catalog does not know, nothing is refused; a zone that does not exist is reported by
    `check_zones`, not here."""
    regions = r.catalog.regions[shape.cloud]
    answer = r.catalog.zones_offering(shape, region)
    if not answer.known:
        return
    for i, zone in enumerate(pool.zones):
        if answer.allows(zone) or not regions.zone_ok(zone) or regions.region_of(zone) != region:
            continue
        dated = f"(catalog zones.yaml, as of {answer.as_of})"
        if answer.offered:
            r.add(at.dot(f"zones[{i}]"), f"{zone} does not offer {answer.what} {dated}",
                  f"use a zone of {region} that does: {', '.join(answer.offered)}",
                  answer.offered)
        else:
            elsewhere = ", ".join(answer.regions[:10]) + (", ..." if len(answer.regions) > 10
                                                          else "")
            r.add(at.dot(f"zones[{i}]"), f"no zone of {region} offers {answer.what} {dated}; "
                  f"it is offered in {elsewhere}",
                  "choose an accelerator offered in this region (`accelfleet catalog list`), "
                  "or put the pool in a stack of a region that offers it")


def most_nodes(pool: ResolvedPool) -> int:
    """The most nodes the pool may run, every slice and zone together: a TPU pool's hosts
    times its slices; an autoscaling pool's maximum; else its node count."""
    spec = pool.spec
    if pool.shape.tpu is not None:
        return pool.shape.hosts * spec.multislice
    if spec.autoscaling is not None:
        return spec.autoscaling.max_nodes
    return spec.nodes or 0


def _at(pool: ResolvedPool) -> Where:
    if pool.system and pool.cluster is not None:
        return Where("clusters", name=pool.cluster.name, field="system_pool")
    return Where("pools", name=pool.name)


def _refuse(r: Reporter, where: Where, what: str, value: int, bound: Bound, fix: str,
            unit: str = "", detail: str = "") -> None:
    r.add(where, f"{what} is {value:,}{unit}{detail}, over the {bound.value:,}{unit} "
          f"{'accelfleet allows' if bound.kind == 'accelfleet' else 'the cloud allows'} "
          f"({bound.source})", fix)


def check_pool_bounds(r: Reporter, pool: ResolvedPool, warnings: list[Problem]) -> None:
    """Disk size, slices, and nodes per GKE node pool zone / EKS node group."""
    spec, at, b = pool.spec, _at(pool), r.catalog.bounds
    disk = b[f"{pool.cloud}_disk_gb"]
    if spec.disk_size_gb > disk.value:
        _refuse(r, at.dot("disk_size_gb"), "the boot disk", spec.disk_size_gb, disk,
                f"use at most {disk.value:,} GB, and keep datasets on shared storage", " GB")
    slices = b["tpu_slices_per_pool"]
    if pool.shape.tpu is not None and spec.multislice > slices.value:
        _refuse(r, at.dot("multislice"), "multislice", spec.multislice, slices,
                "split the slices over several pools, or check for a typo")
    most = most_nodes(pool)
    field = "autoscaling.max_nodes" if spec.autoscaling is not None else "nodes"
    if pool.cloud == "gcp" and pool.shape.tpu is None:
        zone = b["gke_nodes_per_pool_zone"]
        zones = max(len(spec.zones), 1)
        per_zone = -(-most // zones)
        if per_zone > zone.value:
            spread = f"{most:,} nodes over {zones} zones" if zones > 1 else \
                f"{most:,} nodes in one zone"
            _refuse(r, at.dot(f"{field}"), "a GKE node pool's nodes per zone", per_zone, zone,
                    f"use at most {zone.value:,} nodes per zone ({zone.value * zones:,} in "
                    "all), add zones, or split the pool", detail=f" ({spread})")
    if pool.cloud == "aws":
        group = b["eks_nodes_per_node_group"]
        if most > group.value:
            warnings.append(Problem(
                at.dot(f"{field}"), f"{most:,} nodes is above EKS's default quota of "
                f"{group.value:,} nodes per managed node group ({group.source})",
                f"request an increase of {group.quota} before `pulumi up`, or split the pool"))


def check_cluster_count(r: Reporter, spec: FleetSpec, warnings: list[Problem]) -> None:
    """A stack's clusters live in one project and region (GKE, a limit) or one account and
    Region (EKS, a default quota)."""
    b = r.catalog.bounds
    for cloud, bound in (("gcp", b["gke_clusters_per_region"]),
                         ("aws", b["eks_clusters_per_region"])):
        count = sum(1 for c in spec.clusters if c.cloud == cloud)
        if count <= bound.value:
            continue
        if bound.kind == "quota":
            warnings.append(Problem(Where("clusters"),
                                    f"{count:,} EKS clusters is above the default "
                                    f"quota of {bound.value:,} per Region ({bound.source})",
                                    f"request an increase of {bound.quota} before `pulumi up`"))
        else:
            _refuse(r, Where("clusters"), "the number of GKE clusters", count, bound,
                    "split the clusters over several stacks (projects or regions)")


def check_cluster_nodes(r: Reporter, spec: FleetSpec, pools: Sequence[ResolvedPool]) -> None:
    """A GKE cluster holds at most `gke_nodes_per_cluster` nodes, every pool at its largest."""
    bound = r.catalog.bounds["gke_nodes_per_cluster"]
    by_cluster: dict[str, list[ResolvedPool]] = {}
    for p in pools:
        if p.cluster is not None:
            by_cluster.setdefault(p.cluster.name, []).append(p)
    for cluster in spec.clusters:
        if cluster.cloud != "gcp":
            continue
        members = by_cluster.get(cluster.name, [])
        total = sum(most_nodes(p) for p in members)
        if total > bound.value:
            largest = sorted(members, key=most_nodes, reverse=True)[:3]
            listing = ", ".join(f"{p.name} {most_nodes(p):,}" for p in largest)
            _refuse(r, Where("clusters", name=cluster.name),
                    "the cluster's nodes, every pool at its "
                    "largest,", total, bound,
                    "move pools to another cluster, or lower their node counts",
                    detail=f" (largest: {listing})")
