"""Address ranges: a cluster's node, pod and service ranges must not overlap one another, nor the
ranges of the fleet's other clusters on the same cloud (one project or account: their VPCs can
only be peered if their ranges are apart), and must hold every node and pod of the cluster's
pools at their largest (catalog limits.yaml `network`).

GKE: every node takes an address of the node range (`network.cidr`, 4 addresses of a subnet are
reserved) and a /24 of the pod range (110 Pods per node, the default). EKS: the VPC
(`network.cidr`, /16 to /28; accelfleet cuts it in 8 blocks, one private subnet per zone) gives
every pod an address of its node's subnet (the VPC CNI), so a zone's subnet must hold its nodes
times their max Pods; the service range is RFC 1918, /12 to /24, apart from the VPC.
"""

from __future__ import annotations

import functools
import ipaddress
import math
from collections.abc import Sequence

from fleet.catalog import Cloud
from fleet.errors import Where
from fleet.model import ResolvedPool
from fleet.rules.limits import most_nodes
from fleet.rules.problems import RuleProblems as Reporter
from fleet.spec.fields import Cluster, FleetSpec

Net = ipaddress.IPv4Network | ipaddress.IPv6Network
# accelfleet's EKS layout (components/aws/_layout.py): the VPC in 8 blocks, one private block
# per zone and the last cut again into the public (NAT) subnets: at most 7 zones, a /24 or larger.
EKS_SUBNET_SPLIT_BITS = 3
EKS_MAX_ZONES = 2**EKS_SUBNET_SPLIT_BITS - 1
EKS_VPC_MAX_PREFIX = 24
RANGES = ("cidr", "pods_cidr", "services_cidr")


@functools.lru_cache(maxsize=4096)
def _net(text: str) -> Net:
    """A range, parsed once however many clusters repeat it (the defaults do)."""
    return ipaddress.ip_network(text, strict=False)


def _ranges(cluster: Cluster) -> dict[str, Net]:
    """The ranges the cluster's cloud uses (EKS has no pod range: pods take VPC addresses)."""
    n = cluster.network
    fields = RANGES if cluster.cloud == "gcp" else ("cidr", "services_cidr")
    return {f: _net(getattr(n, f)) for f in fields}


def check_cluster_ranges(r: Reporter, spec: FleetSpec) -> None:
    """Ranges of each cluster apart, IPv4, sized as the cloud accepts; clusters of one cloud
    apart from each other."""
    seen: dict[Cloud, list[tuple[str, str, Net]]] = {"gcp": [], "aws": []}
    for cluster in spec.clusters:
        at = Where("clusters", name=cluster.name, field="network")
        ranges = _ranges(cluster)
        v6 = [f for f, net in ranges.items() if net.version != 4]
        for f in v6:
            r.add(at.dot(f"{f}"), f"{ranges[f]} is an IPv6 range; accelfleet builds IPv4 "
                  "clusters", f"give an IPv4 range, e.g. {getattr(type(cluster.network)(), f)}")
        if v6:
            continue
        names = list(ranges)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if ranges[a].overlaps(ranges[b]):
                    r.add(at.dot(f"{b}"), f"{ranges[b]} overlaps the cluster's {a} {ranges[a]}",
                          f"give {b} a range apart from {a}, e.g. "
                          f"{_free(ranges[b].prefixlen, [*ranges.values()])}")
        if cluster.cloud == "aws":
            _eks_ranges(r, at, ranges)
            if not cluster.private_endpoint:
                _eks_public_access(r, Where("clusters", name=cluster.name,
                                            field="authorized_cidrs"),
                                   cluster.authorized_cidrs)
        for f in ("cidr", "pods_cidr"):
            if f in ranges:
                seen[cluster.cloud].append((cluster.name, f, ranges[f]))
    for cloud, entries in seen.items():
        _apart(r, cloud, entries)


MAX_APART_PROBLEMS = 10  # overlaps between clusters reported one by one; the rest counted


def _apart(r: Reporter, cloud: Cloud, entries: list[tuple[str, str, Net]]) -> None:
    """Node and pod ranges of different clusters of one cloud apart: one sweep over the ranges
    sorted by address (linear after the sort, however many clusters)."""
    scope = "project" if cloud == "gcp" else "account"
    used = [net for _, _, net in entries]
    order = sorted(range(len(entries)), key=lambda i: (int(entries[i][2].network_address),
                                                       entries[i][2].prefixlen))
    reach: tuple[int, int] | None = None  # (highest address so far, whose entry)
    found: list[tuple[int, int]] = []
    for i in order:
        name, _, net = entries[i]
        if reach is not None and int(net.network_address) <= reach[0] \
                and entries[reach[1]][0] != name:
            found.append(tuple(sorted((i, reach[1]))))  # type: ignore[arg-type]
        end = int(net.broadcast_address)
        if reach is None or end > reach[0]:
            reach = (end, i)
    free = _Free(used)
    for first, second in sorted(found)[:MAX_APART_PROBLEMS]:  # on the later-declared cluster
        c_name, c_f, c_net = entries[second]
        o_name, o_f, o_net = entries[first]
        r.add(Where("clusters", name=c_name, field=f"network.{c_f}"),
              f"{c_net} overlaps cluster {o_name!r}'s {o_f} {o_net}: clusters of one {scope} "
              "need ranges apart to be peered or to share a network later",
              f"give each cluster its own ranges, e.g. {c_f}: {free.take(c_net.prefixlen)}")
    if len(found) > MAX_APART_PROBLEMS:
        r.add(Where("clusters"), f"{len(found) - MAX_APART_PROBLEMS:,} more ranges overlap another "
              f"cluster's (the first {MAX_APART_PROBLEMS} are listed)",
              "give every cluster its own `network` ranges")


class _Free:
    """Private ranges apart from every used one, each handed out once: a sweep over the used
    ranges sorted by address, so each `take` costs one pass at most."""

    def __init__(self, used: Sequence[Net]) -> None:
        self.spans = sorted((int(u.network_address), int(u.broadcast_address))
                            for u in used if u.version == 4)

    def take(self, prefix: int) -> str:
        pool = ipaddress.IPv4Network("10.0.0.0/8")
        if not pool.prefixlen <= prefix <= 32:
            return "a range apart"
        size = 2 ** (32 - prefix)
        start, last = int(pool.network_address), int(pool.broadcast_address)
        for low, high in self.spans:
            if start + size - 1 < low:
                break  # the candidate ends before this span (spans are sorted)
            if high >= start:
                start = -(-(high + 1) // size) * size
        if start + size - 1 > last:
            return "a range apart"
        self.spans = sorted([*self.spans, (start, start + size - 1)])
        return str(ipaddress.IPv4Network((start, prefix)))


def _eks_ranges(r: Reporter, at: Where, ranges: dict[str, Net]) -> None:
    facts = r.catalog.network
    vpc, svc = ranges["cidr"], ranges["services_cidr"]
    low, high = facts.aws_vpc_prefix
    layout_max = EKS_VPC_MAX_PREFIX
    if not low <= vpc.prefixlen <= min(high, layout_max):
        r.add(at.dot("cidr"), f"{vpc} is a /{vpc.prefixlen}: an Amazon VPC is /{low} to /{high} "
              f"({facts.aws_vpc_source}), and accelfleet's EKS layout (a private and a public "
              f"subnet per zone) needs /{layout_max} or larger",
              f"use a /{low} to /{layout_max}, e.g. "
              f"{_with_prefix(vpc, max(low, min(vpc.prefixlen, layout_max)))}")
    s_low, s_high = facts.eks_service_prefix
    inside = any(svc.subnet_of(w) for w in facts.eks_service_within if svc.version == 4)
    if not inside or not s_low <= svc.prefixlen <= s_high:
        r.add(at.dot("services_cidr"), f"{svc} is not an EKS service range: it must lie in "
              f"{', '.join(map(str, facts.eks_service_within))} and be /{s_low} to /{s_high} "
              f"({facts.eks_service_source})", "use e.g. 172.20.0.0/16")


def _eks_public_access(r: Reporter, at: Where, cidrs: Sequence[str]) -> None:
    """An EKS public endpoint's allow-list: at most 40 ranges, none of them reserved."""
    facts = r.catalog.network
    if len(cidrs) > facts.eks_public_access_max:
        r.add(at, f"{len(cidrs)} ranges; an EKS public endpoint takes at most "
              f"{facts.eks_public_access_max} ({facts.eks_public_access_source})",
              "merge ranges into larger blocks, or set `private_endpoint: true` and reach the "
              "cluster through the VPC")
    for i, cidr in enumerate(cidrs):
        net = ipaddress.ip_network(cidr, strict=False)
        within = next((w for w in facts.eks_public_access_refused
                       if net.version == 4 and net.subnet_of(w)), None)  # type: ignore[arg-type]
        if within is not None:
            r.add(at.item(i), f"{cidr} is a private range (in {within}): no client reaches "
                  f"a public endpoint from it, and EKS refuses reserved addresses "
                  f"({facts.eks_public_access_source})",
                  "list the public addresses clients come from (a NAT gateway's, an office's); "
                  "traffic from inside the VPC uses the private endpoint")


MIN_RANGE_PREFIX = 8  # 10.0.0.0/8, the largest private range (RFC 1918)


def _with_prefix(net: Net, prefix: int) -> Net:
    return ipaddress.ip_network((net.network_address, prefix), strict=False)


def _range_fix(net: Net, need: int) -> str:
    """"use a /N or larger, e.g. ...", or, when the nodes need more than a /8 (no private
    range is larger; a fleet's node count can ask for a negative prefix), the way out."""
    if need < MIN_RANGE_PREFIX:
        return ("no private range holds that many nodes (10.0.0.0/8 is the largest): lower "
                "the pools' nodes (or max_nodes), or spread them over more clusters")
    return f"use a /{need} or larger, e.g. {_with_prefix(net, need)}"


def _free(prefix: int, used: Sequence[Net]) -> str:
    """A private /prefix apart from every used range, in 10.0.0.0/8 (or "a range apart")."""
    return _Free(used).take(prefix)


def check_capacity(r: Reporter, spec: FleetSpec, pools: Sequence[ResolvedPool]) -> None:
    """Every cluster's ranges hold its nodes and pods, every pool at its largest."""
    by_cluster: dict[str, list[ResolvedPool]] = {}
    for p in pools:
        if p.cluster is not None:
            by_cluster.setdefault(p.cluster.name, []).append(p)
    for cluster in spec.clusters:
        members = by_cluster.get(cluster.name, [])
        if not members:
            continue
        ranges = _ranges(cluster)
        if any(net.version != 4 for net in ranges.values()):
            continue  # reported by check_cluster_ranges
        at = Where("clusters", name=cluster.name, field="network")
        if cluster.cloud == "gcp":
            _gke_capacity(r, at, ranges, members)
        else:
            _eks_capacity(r, at, ranges["cidr"], members)


def _listing(pools: Sequence[ResolvedPool]) -> str:
    top = sorted(pools, key=most_nodes, reverse=True)
    shown = ", ".join(f"{p.name} {most_nodes(p):,}" for p in top[:4])
    return shown + (", ..." if len(top) > 4 else "")


def _gke_capacity(r: Reporter, at: Where, ranges: dict[str, Net],
                  members: Sequence[ResolvedPool]) -> None:
    facts = r.catalog.network
    nodes = sum(most_nodes(p) for p in members)
    node_net, pod_net = ranges["cidr"], ranges["pods_cidr"]
    holds = node_net.num_addresses - facts.gce_reserved
    if nodes > holds:
        need = 32 - math.ceil(math.log2(nodes + facts.gce_reserved))
        r.add(at.dot("cidr"), f"the node range {node_net} holds {max(holds, 0):,} nodes "
              f"({facts.gce_reserved} addresses of a subnet are reserved, "
              f"{facts.gce_reserved_source}), and the cluster's pools reach {nodes:,} at their "
              f"largest ({_listing(members)})",
              _range_fix(node_net, need))
    per_node = facts.gke_pod_prefix_per_node
    pod_nodes = 2 ** (per_node - pod_net.prefixlen) if pod_net.prefixlen <= per_node else 0
    if nodes > pod_nodes:
        need = per_node - math.ceil(math.log2(nodes))
        r.add(at.dot("pods_cidr"), f"the pod range {pod_net} holds the pods of {pod_nodes:,} "
              f"nodes (a /{per_node} per node: {facts.gke_pods_source}), and the cluster's "
              f"pools reach {nodes:,} nodes at their largest ({_listing(members)})",
              _range_fix(pod_net, need))


# The zones an EKS pool without zones of its own spreads over (the account's first two that
# EKS accepts for its control plane: components/aws/_layout.py MIN_ZONES).
ACCOUNT_ZONES = 2


def _eks_capacity(r: Reporter, at: Where, vpc: Net, members: Sequence[ResolvedPool]) -> None:
    facts = r.catalog.network
    zones = sorted({z for p in members for z in p.spec.zones})
    if len(zones) > EKS_MAX_ZONES:
        r.add(at.dot("cidr"), f"the cluster's pools span {len(zones)} zones "
              f"({', '.join(zones)}); accelfleet's EKS VPC holds at most {EKS_MAX_ZONES}",
              "spread the cluster's pools over fewer zones")
        return
    if vpc.prefixlen > EKS_VPC_MAX_PREFIX:
        return  # a VPC too small to cut: reported by check_cluster_ranges
    subnet = _with_prefix(vpc, vpc.prefixlen + EKS_SUBNET_SPLIT_BITS)
    holds = subnet.num_addresses - facts.aws_reserved
    # A pool without zones of its own (the system pool) goes to the account's first two zones
    # EKS accepts, read at deploy: any zone may be one of them, so each counts its share there.
    unplaced = [p for p in members if not p.spec.zones]
    for zone in zones:
        users = [p for p in members if zone in p.spec.zones] + unplaced
        need = sum(-(-most_nodes(p) // (len(p.spec.zones) or ACCOUNT_ZONES))
                   * facts.eks_max_pods.get(p.shape.machine_type, 110) for p in users)
        if need > holds:
            room = 16 if vpc.prefixlen > 16 else None
            r.add(at.dot("cidr"), f"zone {zone}'s subnet is a /{subnet.prefixlen} of {vpc} with "
                  f"{holds:,} addresses, and its nodes at their largest may take {need:,} "
                  "(the VPC CNI gives each pod an address: each node up to its max Pods, "
                  f"limits.yaml eks_max_pods; {_listing(users)})",
                  (f"use a larger VPC range, e.g. {_with_prefix(vpc, room)}, or " if room
                   else "") + "spread the pools over more zones, or make them smaller")
