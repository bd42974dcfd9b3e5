"""Every name the fleet derives is unique in its scope: one check over the whole fleet, not
one rule per finding (issue 27, class 2).

`derived_names` lists each name the deploy gives something, with the scope where the name must
be unique and the stack item it comes from; `check_unique_names` refuses every scope holding a
name twice, naming both sources. The scopes:

    Pulumi names      per resource type: the components a pool or a cluster's system pool
                      makes (a CPU pool named `<cluster>-system` is the system pool's
                      component), EKS placement groups (`<cluster>-<pool>`)
    Google Cloud      node pools per GKE cluster (a TPU pool's slices, `NAME-s0..`, and the
                      system pool `system`); GKE clusters per project and location; Cloud TPU
                      VMs per project and zone; subnetworks, routers and workload policies per
                      project and region; service accounts, VPC networks and firewall rules
                      per project
    AWS               node groups per EKS cluster (the system pool's `system` too); EKS
                      clusters per account and region

Every scope says how far it reaches (`DerivedName.reach`): a name whose scope is a cloud's
project, region, zone or account is shared with every other stack deployed there, and
fleet.rules.scope refuses one that another stack file beside this one derives too (issue 36,
class 3: the second stack's `pulumi up` would get 409).
    Kubernetes        per cluster: namespaces (a team queue's, the smoke queue's; the ones the
                      cluster and its add-ons own are fleet.rules.routing's), ClusterQueues,
                      WorkloadPriorityClasses (the gate's, for re-proofs)

A name the plan gives that this list does not know is a test failure
(tests/fleet/test_unique_names.py runs plans and compares), so the list keeps up with the
components.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fleet.catalog.support import load_support
from fleet.errors import Where
from fleet.gate import REPROOF_PRIORITY_CLASS
from fleet.model import ResolvedPool
from fleet.names import (
    TPU_VMS_NAME,
    node_account_id,
    slice_pool_names,
    system_component_name,
    tpu_second_network_names,
    tpu_vm_names,
    workload_policy_name,
)
from fleet.routing import ClusterRouting
from fleet.rules.problems import RuleProblems
from fleet.spec.fields import FleetSpec


@dataclass(frozen=True)
class DerivedName:
    """One name the deploy gives: `scope` says where it must be unique (in words), `source`
    the stack item it comes from, `where` the field a person edits."""

    scope: str
    name: str
    source: str
    where: Where
    # how far the scope reaches: "stack" (Pulumi names), "cluster" (names inside a cluster),
    # or "project", "region", "zone", "account" (a cloud's, shared by every stack there: a
    # second stack's name equal to this one is a collision too; fleet.rules.scope)
    reach: str = "cluster"

    @property
    def wider_than_a_stack(self) -> bool:
        return self.reach not in ("stack", "cluster")


# Where each Google Cloud name is unique (Compute Engine: networks, firewall rules and service
# accounts are global to the project; subnetworks, routers and resource policies regional;
# instances and Cloud TPU VMs zonal; a GKE cluster per project and location).
_REGIONAL = ("subnetworks", "routers")


def _gcp(kind: str, project: str, region: str) -> tuple[str, str]:
    """(the scope's words, its reach) of a Google Cloud name kind."""
    if kind in _REGIONAL:
        return f"{kind} of project {project} region {region}", "region"
    return f"{kind} of project {project}", "project"


def derived_names(spec: FleetSpec, pools: Sequence[ResolvedPool],
                  system_pools: Sequence[ResolvedPool],
                  routing: Iterable[ClusterRouting] = ()) -> list[DerivedName]:
    """Every name the deploy derives from `spec`, resolved pools and routing."""
    out: list[DerivedName] = []
    gcp_project = spec.clouds.gcp.project if spec.clouds.gcp else "?"
    gcp_region = spec.region_of("gcp") or "?"
    aws_account = spec.clouds.aws.account if spec.clouds.aws else "?"
    aws_region = spec.region_of("aws") or "?"

    def gcp(kind: str, name: str, src: str, at: Where) -> DerivedName:
        scope, reach = _gcp(kind, gcp_project, gcp_region)
        return DerivedName(scope, name, src, at, reach)

    for c in spec.clusters:
        at = Where("clusters", name=c.name, field="name")
        src = f"cluster {c.name!r}"
        if c.cloud == "aws":
            out.append(DerivedName(f"EKS clusters of account {aws_account} region {aws_region}",
                                   c.name, src, at, "region"))
        if c.cloud == "gcp":
            out.append(DerivedName(f"GKE clusters of project {gcp_project} location "
                                   f"{gcp_region}", c.name, src, at, "region"))
            out.append(gcp("service accounts", node_account_id(c.name),
                           f"{src} (its node service account)", at))
            for suffix, kind in (("vpc", "VPC networks"), ("subnet", "subnetworks"),
                                 ("router", "routers"), ("allow-internal", "firewall rules"),
                                 ("webhooks", "firewall rules")):
                out.append(gcp(kind, f"{c.name}-{suffix}", f"{src} (its {kind})", at))
    support = load_support()
    for c in spec.clusters:
        if not any(p.cluster is not None and p.cluster.name == c.name and p.runtime == "gke"
                   and p.shape.tpu is not None
                   and support.second_network_for(p.shape.tpu.key) for p in pools):
            continue
        at = Where("clusters", name=c.name, field="name")
        vpc, subnet, rule = tpu_second_network_names(c.name)
        src = f"cluster {c.name!r} (its TPU second network)"
        out += [gcp("VPC networks", vpc, src, at), gcp("subnetworks", subnet, src, at),
                gcp("firewall rules", rule, src, at)]
    tpu_vm_pools = [p for p in pools if p.runtime == "tpu-vm"]
    if tpu_vm_pools:
        at = Where("pools", name=tpu_vm_pools[0].name, field="runtime")
        src = f"the Cloud TPU VM pools (pool {tpu_vm_pools[0].name!r})"
        out.append(gcp("service accounts", node_account_id(TPU_VMS_NAME), src, at))
        for suffix, kind in (("vpc", "VPC networks"), ("subnet", "subnetworks"),
                             ("router", "routers"), ("allow-internal", "firewall rules")):
            out.append(gcp(kind, f"{TPU_VMS_NAME}-{suffix}", src, at))
        if any(p.shape.tpu is not None and support.second_network_for(p.shape.tpu.key)
               for p in tpu_vm_pools):
            vpc, subnet, rule = tpu_second_network_names(TPU_VMS_NAME)
            src = f"the Cloud TPU VM pools' second network (pool {tpu_vm_pools[0].name!r})"
            out += [gcp("VPC networks", vpc, src, at), gcp("subnetworks", subnet, src, at),
                    gcp("firewall rules", rule, src, at)]
    for p in [*pools, *system_pools]:
        out += _pool_names(p, gcp_project, aws_account)
    routing = list(routing)
    for r in routing:
        out += _routing_names(spec, r)
    out += _gate_names(spec, pools, routing)
    return out


def _gate_names(spec: FleetSpec, pools: Sequence[ResolvedPool],
                routing: Sequence[ClusterRouting]) -> list[DerivedName]:
    """The smoke namespace the gate controller creates on a cluster with a gated pool, where
    no Kueue smoke queue creates it already, and its Kueue WorkloadPriorityClass for re-proofs
    where Kueue routes a gated pool (components.k8s install_gate)."""
    routed = {r.cluster for r in routing if r.smoke is not None}
    queued = {r.cluster for r in routing if r.queues}
    out = []
    for c in spec.clusters:
        if not any(p.gated for p in pools if p.cluster is not None
                   and p.cluster.name == c.name):
            continue
        if c.name in queued:
            out.append(DerivedName(f"Kueue WorkloadPriorityClasses of cluster {c.name!r}",
                                   REPROOF_PRIORITY_CLASS,
                                   "the gate controller (its re-proofs' priority)",
                                   Where("clusters", name=c.name, field="name")))
        if c.name in routed:
            continue
        out.append(DerivedName(f"namespaces of cluster {c.name!r}", spec.smoke.namespace,
                               "the gate controller (smoke.namespace)",
                               Where("smoke", field="namespace")))
    return out


def _pool_names(p: ResolvedPool, project: str, account: str) -> list[DerivedName]:
    cluster = p.cluster.name if p.cluster else None
    if p.system:
        at = Where("clusters", name=cluster, field="system_pool")
        src = f"cluster {cluster!r}'s system pool"
    else:
        at = Where("pools", name=p.name, field="name")
        src = f"pool {p.name!r}"
    out: list[DerivedName] = []
    slices = p.spec.multislice if p.shape.tpu is not None else 1
    if p.runtime == "tpu-vm":
        zone = p.spec.zones[0] if p.spec.zones else "?"
        for i, vm in enumerate(tpu_vm_names(p.name, slices)):
            what = f"{src} (slice {i} of multislice {slices})" if slices > 1 else src
            out.append(DerivedName(f"Cloud TPU VMs of project {project} zone {zone}", vm,
                                   what, at, "zone"))
        return out
    if cluster is None:
        return out
    if p.runtime == "gke":
        tpu = p.shape.tpu
        if tpu is not None and p.shape.multi_host and tpu.placement == "workload-policy":
            out.append(DerivedName(f"resource policies of project {project} region {p.region}",
                                   workload_policy_name(p.name, cluster, p.shape.topology_str),
                                   f"{src} (its workload policy)", at, "region"))
        for i, node_pool in enumerate(slice_pool_names(p.name, slices)):
            what = f"{src} (slice {i} of multislice {slices})" if slices > 1 else src
            out.append(DerivedName(f"GKE node pools of cluster {cluster!r}", node_pool, what,
                                   at))
    else:
        out.append(DerivedName(f"EKS node groups of cluster {cluster!r} (account {account})",
                               p.name, src, at))
        if p.placement_group:
            out.append(DerivedName("Pulumi names of aws:ec2/placementGroup:PlacementGroup",
                                   f"{cluster}-{p.name}", f"{src} (its placement group)", at,
                                   "stack"))
    if p.shape.kind == "cpu":
        component = system_component_name(cluster) if p.system else p.name
        kind = "CpuNodePool" if p.runtime == "gke" else "CpuNodeGroup"
        out.append(DerivedName(f"Pulumi names of accelfleet {kind} components", component,
                               src, at, "stack"))
    return out


def _routing_names(spec: FleetSpec, r: ClusterRouting) -> list[DerivedName]:
    out: list[DerivedName] = []
    queues = [*r.queues, *((r.smoke,) if r.smoke is not None else ())]
    for q in queues:
        namespace = q.namespace or q.name
        if q is r.smoke:
            src = "the smoke queue (smoke.namespace)"
            at = Where("smoke", field="namespace")
        else:
            src = f"team {q.team!r}'s queue"
            routed = next((i for i, t in enumerate(spec.routing.teams)
                           if t.team == q.team and t.namespace
                           and t.cluster in (None, r.cluster)), None)
            # where fleet.rules.routing reports a routed namespace
            at = (Where("routing", field="teams").item(routed).dot("namespace")
                  if routed is not None else Where("teams", name=q.team, field="name"))
        out.append(DerivedName(f"namespaces of cluster {r.cluster!r}", namespace, src, at))
        out.append(DerivedName(f"Kueue ClusterQueues of cluster {r.cluster!r}", q.name, src,
                               at))
    return out


def check_unique_names(r: RuleProblems, names: Sequence[DerivedName]) -> None:
    """Refuse each name given twice in one scope, both sources named. A place that already
    has a problem is not told again (fleet.rules.routing refuses a routed namespace that is
    reserved or another team's, and renames a team's default one)."""
    told = {p.where for p in r.problems}
    seen: dict[tuple[str, str], DerivedName] = {}
    for d in names:
        first = seen.setdefault((d.scope, d.name), d)
        if first is d or first.source == d.source or d.where in told:
            continue
        told.add(d.where)
        r.add(d.where, f"{d.source} and {first.source} both make {d.name!r} among the "
              f"{d.scope}; the second create fails (409 already exists), or Pulumi refuses "
              "the duplicate name",
              f"rename one of them so that the names they derive differ (e.g. "
              f"{_free(d.name, seen, d.scope)!r})")


def _free(name: str, seen: dict[tuple[str, str], DerivedName], scope: str) -> str:
    return next(f"{name}-{n}" for n in range(2, 10_000) if (scope, f"{name}-{n}") not in seen)


__all__ = ["DerivedName", "check_unique_names", "derived_names"]
