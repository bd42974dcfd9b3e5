"""The stack's `routing:` section, read into Kueue routing (fleet.routing) with a Problem for
every entry it cannot honour: an unknown team, cluster, pool or accelerator (did-you-mean), a
pool of another cluster than the queue's, a pool outside Kubernetes (the system pool, a
Cloud TPU VM), a flavor that would give the team no quota, a namespace Kubernetes refuses or
another team or an add-on already uses, more flavors or tolerations than Kueue takes.

`fleet.rules.validate` adds these problems to `fleet validate`'s and keeps the routing on the
validated `Fleet` (`Fleet.routing`), which the components and `accelfleet queue show` read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fleet.catalog import Catalog, Shape
from fleet.errors import AccelfleetError, Problem, Where, suggest
from fleet.model import SYSTEM_POOL, ResolvedPool
from fleet.names import KUEUE_NAMESPACE, check_name, fixed_name
from fleet.routing import (
    MAX_FLAVOR_LABELS,
    MAX_FLAVOR_TOLERATIONS,
    MAX_FLAVORS,
    ClusterRouting,
    Flavor,
    QueueFlavor,
    TeamQueue,
    covered,
    default_order,
    percent_of,
    pool_flavor,
    smoke_queue,
)
from fleet.rules.problems import RuleProblems
from fleet.spec.fields import FleetSpec, RoutingTeam

# Namespaces a team's cannot be: Kubernetes' own and those of accelfleet's add-ons
# (components/k8s/_charts.py; the smoke namespace is added from the stack).
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease",
                       KUEUE_NAMESPACE, "jobset-system", "nvidia-device-plugin")


@dataclass(frozen=True)
class _Entry:
    """One `prefer` entry: a pool, or the shape an accelerator name resolved to."""

    index: int
    text: str
    pool: ResolvedPool | None = None
    shape: Shape | None = None


def resolve_routing(spec: FleetSpec, pools: Sequence[ResolvedPool], catalog: Catalog
                    ) -> tuple[list[ClusterRouting], list[Problem]]:
    """Every cluster's routing, and the problems of the stack's `routing:` section."""
    routing, problems, _ = _Resolver(spec, pools, catalog).run()
    return routing, problems


def routing_checks(spec: FleetSpec, pools: Sequence[ResolvedPool], catalog: Catalog
                   ) -> tuple[list[Problem], list[Problem]]:
    """What `fleet validate` reports about routing: (problems, warnings). `pools`: those that
    resolved; an entry naming a pool that did not is left to that pool's own problem."""
    _, problems, warnings = decide_routing(spec, pools, catalog)
    return problems, warnings


def decide_routing(spec: FleetSpec, pools: Sequence[ResolvedPool], catalog: Catalog
                   ) -> tuple[list[ClusterRouting], list[Problem], list[Problem]]:
    """Every cluster's routing with its (problems, warnings), resolved once: `fleet.rules
    .validate` keeps the routing on the `Fleet` it returns."""
    return _Resolver(spec, pools, catalog).run()


class _Resolver:
    def __init__(self, spec: FleetSpec, pools: Sequence[ResolvedPool], catalog: Catalog
                 ) -> None:
        self.spec, self.catalog = spec, catalog
        self.r = RuleProblems(catalog)
        self.by_name = {p.name: p for p in pools}
        self.declared = {p.name for p in spec.pools} - {SYSTEM_POOL}
        self.kube = [p for p in pools if p.cluster is not None and p.runtime != "tpu-vm"]
        self.in_cluster: dict[str, list[ResolvedPool]] = {}
        for p in self.kube:
            assert p.cluster is not None
            self.in_cluster.setdefault(p.cluster.name, []).append(p)
        self.flavors = {p.name: pool_flavor(p, catalog) for p in self.kube}
        self.teams = {t.name for t in spec.teams}
        self.clusters = [c.name for c in spec.clusters]
        self.rules = spec.routing.teams
        # the lending limit each team sets for its pools on each cluster
        self.lend: dict[tuple[str, str], int] = {}
        # how many clusters each rule routes on; accelerator entries that matched no pool
        self.applied: dict[int, int] = {}
        self.warnings: list[Problem] = []  # allowed, but deserves a look
        self.misses: dict[tuple[int, int], tuple[str, list[str]]] = {}
        self.machine_words = set(catalog.machines) | {
            m for g in catalog.tpus.values() for _, m in g.machine_types}
        self.generation_words = {w.lower() for g in catalog.tpus.values() for w in (
            g.key, g.accelerator, g.tpu_api_name, g.gke_accelerator,
            *catalog.accelerators[g.accelerator].aliases)}

    def run(self) -> tuple[list[ClusterRouting], list[Problem], list[Problem]]:
        for f in self.flavors.values():
            self._flavor_limits(f)
        planned: dict[tuple[str, str], tuple[int, RoutingTeam, list[_Entry]]] = {}
        for i, rule in enumerate(self.rules):
            by_cluster = self._rule(i, rule)
            self.applied[i] = len(by_cluster)
            for cluster, entries in by_cluster.items():
                if (rule.team, cluster) in planned:
                    self.r.add(Where("routing", field="teams").item(i),
                               f"team {rule.team!r} is routed on cluster {cluster!r} twice "
                               f"(also by routing.teams[{planned[(rule.team, cluster)][0]}])",
                               "keep one entry per team and cluster")
                    continue
                planned[(rule.team, cluster)] = (i, rule, entries)
                if rule.lending_limit_percent is not None:
                    self.lend[(rule.team, cluster)] = rule.lending_limit_percent
        out: list[ClusterRouting] = []
        for cluster in self.clusters:
            pools = self.in_cluster.get(cluster, [])
            queues: list[TeamQueue] = []
            teams = list(dict.fromkeys([p.team for p in pools] + [
                r.team for r in self.rules if (r.team, cluster) in planned]))
            for team in teams:
                queue = self._queue(team, cluster, planned.get((team, cluster)))
                if queue is not None:
                    queues.append(queue)
            queues = self._namespaces(cluster, queues, planned)
            if pools or queues:
                flavors = tuple(self.flavors[p.name] for p in pools)
                out.append(ClusterRouting(cluster=cluster, cohort=cluster, flavors=flavors,
                                          queues=tuple(queues),
                                          smoke=smoke_queue(cluster, flavors,
                                                            self.spec.smoke.namespace,
                                                            cluster)))
        # an accelerator entry must match on some cluster the rule routes on (with no
        # `cluster:` and no pool named, a rule routes on every cluster of the team's pools)
        for (i, j), (text, missed) in self.misses.items():
            if len(missed) == self.applied[i]:
                have = sorted({p.shape.accelerator.key for c in missed
                               for p in self.in_cluster.get(c, []) if p.shape.kind != "cpu"})
                self.r.add(Where("routing", field="teams").item(i).dot("prefer").item(j),
                           f"no pool of {text!r} on cluster {', '.join(map(repr, missed))}",
                           "name a pool or an accelerator of the cluster", tuple(have))
        return out, self.r.problems, self.warnings

    # -- one routing entry -----------------------------------------------------------------
    def _rule(self, i: int, rule: RoutingTeam) -> dict[str, list[_Entry]]:
        """The entries of one routing rule, by the cluster(s) they route on."""
        at = Where("routing", field="teams").item(i)
        if rule.team not in self.teams:
            self.r.add(at.dot("team"), f"unknown team {rule.team!r}",
                       "declare it under `teams`, or route a declared team",
                       tuple(suggest(rule.team, self.teams)) or tuple(sorted(self.teams)))
            return {}
        if rule.cluster is not None and rule.cluster not in self.clusters:
            self.r.add(at.dot("cluster"), f"unknown cluster {rule.cluster!r}",
                       "name a declared cluster, or leave `cluster` out",
                       tuple(suggest(rule.cluster, self.clusters)) or tuple(self.clusters))
            return {}
        entries = [e for j, text in enumerate(rule.prefer)
                   if (e := self._entry(at.dot("prefer").item(j), j, text, rule.prefer[:j]))]
        home = rule.cluster or next((e.pool.cluster.name for e in entries
                                     if e.pool is not None and e.pool.cluster), None)
        for e in entries:
            pool = e.pool
            if pool is not None and pool.cluster is not None and pool.cluster.name != home:
                self.r.add(at.dot("prefer").item(e.index),
                           f"{e.text!r} is a pool of cluster {pool.cluster.name!r}, and this "
                           f"routing is for cluster {home!r}: a Kueue queue admits work to "
                           "its own cluster's nodes only",
                           f"route team {rule.team!r} on {pool.cluster.name!r} in a routing "
                           f"entry of its own with `cluster: {pool.cluster.name}`")
        entries = [e for e in entries if e.pool is None or
                   (e.pool.cluster is not None and e.pool.cluster.name == home)]
        if home is not None:
            return {home: entries}
        own = [c for c in self.clusters
               if any(p.team == rule.team for p in self.in_cluster.get(c, []))]
        if not own:
            self.r.add(at.dot("cluster"),
                       f"team {rule.team!r} has no pools on any cluster, and its routing names "
                       "no pool: the cluster of its queue is unknown",
                       "add `cluster:` (the cluster whose pools it borrows), or name a pool",
                       tuple(self.clusters))
        return {c: entries for c in own}

    def _entry(self, where: Where, j: int, text: str, before: Sequence[str]) -> _Entry | None:
        if text in before:
            self.r.add(where, f"{text!r} is named twice", "name each pool or accelerator once")
            return None
        pool = self.by_name.get(text)
        if pool is None and text in self.declared:
            return None  # declared but unresolved: its own problem says why
        if pool is not None:
            if pool.runtime == "tpu-vm":
                self.r.add(where, f"{text!r} is a Cloud TPU VM pool (runtime: tpu-vm), outside "
                           "Kubernetes: Kueue cannot send work to it",
                           "route to pools that join a cluster")
                return None
            return _Entry(j, text, pool=pool)
        if text == SYSTEM_POOL:
            self.r.add(where, f"{SYSTEM_POOL!r} is every cluster's system pool: it runs the "
                       "add-ons (Kueue, JobSet, DNS), and no team's queue admits work to it",
                       "route to a CPU pool of your own instead (accelerator: n2-standard-8)")
            return None
        try:
            shape = self.catalog.resolve(text)
        except AccelfleetError:
            near = suggest(text, self.by_name) or suggest(text, self.catalog.known_names())
            self.r.add(where, f"{text!r} is neither a pool nor an accelerator"
                       + (f"; did you mean {', '.join(map(repr, near))}?" if near else ""),
                       f"use {near[0]!r}" if near else
                       "name a pool of the stack, or an accelerator (`accelfleet catalog list`)",
                       tuple(near))
            return None
        return _Entry(j, text, shape=shape)

    # -- one queue ---------------------------------------------------------------------------
    def _queue(self, team: str, cluster: str,
               planned: tuple[int, RoutingTeam, list[_Entry]] | None) -> TeamQueue | None:
        pools = self.in_cluster.get(cluster, [])
        own = [p for p in pools if p.team == team]
        order: list[tuple[ResolvedPool, Where | None]] = []  # (pool, where a problem points)
        borrow = self.spec.routing.borrowing_limit_percent
        if planned is not None:
            i, rule, entries = planned
            if rule.borrowing_limit_percent is not None:
                borrow = rule.borrowing_limit_percent
            for e in entries:
                at = Where("routing", field="teams").item(i).dot("prefer").item(
                    e.index)
                if e.pool is not None:
                    order.append((e.pool, at))
                    continue
                matched = self._matching(e, pools, team)
                if not matched:
                    self.misses.setdefault((i, e.index), (e.text, []))[1].append(cluster)
                order += [(p, None) for p in matched]
        seen: set[str] = set()
        flavors: list[QueueFlavor] = []
        routed = 0  # flavors the routing chose; the team's other pools follow
        for n, (pool, where) in enumerate([*order, *((p, None) for p in default_order(own))]):
            if pool.name in seen:
                continue
            seen.add(pool.name)
            qf = self._queue_flavor(team, cluster, pool, borrow, where)
            if qf is not None:
                flavors.append(qf)
                routed += n < len(order)
        if not flavors:
            return None
        where = (Where("routing", field="teams").item(planned[0]) if planned
                 else Where("teams", name=team))
        if routed > MAX_FLAVORS:
            self.r.add(where, f"team {team!r} is routed to {routed} pools on cluster "
                       f"{cluster!r}; a Kueue ClusterQueue takes at most {MAX_FLAVORS} flavors",
                       f"route the team to {MAX_FLAVORS} pools or fewer")
        elif len(flavors) > MAX_FLAVORS:
            left = [f.flavor for f in flavors[MAX_FLAVORS:]]
            self.warnings.append(Problem(
                where, f"team {team!r} has {len(flavors)} pools on cluster {cluster!r}; its "
                f"Kueue queue takes the first {MAX_FLAVORS} (a ClusterQueue's most), without "
                f"{', '.join(left[:5])}{' and more' if len(left) > 5 else ''}",
                "route the team (routing.teams) to the pools its jobs should use first"))
            flavors = flavors[:MAX_FLAVORS]
        resources = covered([f.nominal for f in flavors] + [
            f.borrowing_limit for f in flavors if f.borrowing_limit is not None])
        flavors = [_cover(f, resources) for f in flavors]
        namespace = (planned[1].namespace if planned else None) or team
        assert namespace is not None
        return TeamQueue(team=team, cluster=cluster, name=namespace, cohort=cluster,
                         resources=resources, flavors=tuple(flavors), routed=planned is not None)

    def _matching(self, e: _Entry, pools: Sequence[ResolvedPool], team: str
                  ) -> list[ResolvedPool]:
        """The cluster's pools an accelerator entry stands for, the team's own first: a machine
        type matches that machine type; a TPU slice ("v6e 2x2", "v5p-128") its generation and
        topology; an accelerator or TPU generation ("h100", "l4", "v6e") every pool of it."""
        want, text = e.shape, " ".join(e.text.lower().split())
        assert want is not None
        if text in self.machine_words:
            hits = [p for p in pools if p.shape.machine_type == want.machine_type]
        elif want.tpu is not None and text not in self.generation_words:
            hits = [p for p in pools if p.shape.tpu is not None
                    and p.shape.tpu.key == want.tpu.key and p.shape.topology == want.topology]
        else:
            hits = [p for p in pools if p.shape.accelerator.key == want.accelerator.key]
        return [p for p in hits if p.team == team] + [p for p in hits if p.team != team]

    def _queue_flavor(self, team: str, cluster: str, pool: ResolvedPool, borrow: int,
                      at: Where | None) -> QueueFlavor | None:
        quota = self.flavors[pool.name].quota
        if pool.team == team:
            if not pool.node_range[1]:
                if at:
                    self._no_quota(at, pool, "it has no nodes at its largest",
                                   "give the pool nodes (or autoscaling max_nodes)")
                return None
            lend = self.lend.get((team, cluster), self.spec.routing.lending_limit_percent)
            return QueueFlavor(pool.name, team, dict(quota),
                               lending_limit=percent_of(quota, lend) if lend < 100 else None)
        lend = self.lend.get((pool.team, cluster), self.spec.routing.lending_limit_percent)
        limit = percent_of(quota, min(borrow, lend))
        if not any(limit.values()):
            if at:
                why = ("it has no nodes at its largest" if not pool.node_range[1] else
                       f"team {team!r} may borrow {borrow}% of it and its owner {pool.team!r} "
                       f"lends {lend}%")
                self._no_quota(at, pool, why, "raise `borrowing_limit_percent` (this team) "
                               f"and `lending_limit_percent` (team {pool.team!r}) above 0, or "
                               "route to a pool the team owns")
            return None
        return QueueFlavor(pool.name, pool.team, dict.fromkeys(quota, 0),
                           borrowing_limit=percent_of(quota, borrow))

    def _no_quota(self, at: Where, pool: ResolvedPool, why: str, fix: str) -> None:
        self.r.add(at, f"flavor {pool.name!r} would give this queue no quota: {why}", fix)

    # -- objects Kueue and Kubernetes refuse --------------------------------------------------
    def _flavor_limits(self, f: Flavor) -> None:
        at = Where("pools", name=f.pool)
        own = len(f.tolerations) - len(self.by_name[f.pool].spec.taints)  # accelfleet's
        if len(f.tolerations) > MAX_FLAVOR_TOLERATIONS:
            self.r.add(at.dot("taints"),
                       f"its nodes need {len(f.tolerations)} tolerations; a Kueue "
                       f"ResourceFlavor holds at most {MAX_FLAVOR_TOLERATIONS}",
                       f"keep at most {MAX_FLAVOR_TOLERATIONS - own} taints of your own")
        if len(f.node_labels) > MAX_FLAVOR_LABELS:
            self.r.add(at, f"{len(f.node_labels)} node labels select it; a Kueue "
                       f"ResourceFlavor holds at most {MAX_FLAVOR_LABELS}", "report it: "
                       "accelfleet chooses these labels")

    def _namespaces(self, cluster: str, queues: Sequence[TeamQueue],
                    planned: dict[tuple[str, str], tuple[int, RoutingTeam, list[_Entry]]]
                    ) -> list[TeamQueue]:
        """Each queue's namespace (its name): the one routing gives (checked: a namespace
        Kubernetes takes, not reserved, not another team's), else the team's name, made to fit
        where it does not (upper case or '_' in a team name, a reserved or taken name)."""
        reserved = (*RESERVED_NAMESPACES, self.spec.smoke.namespace)
        rule = self.catalog.names["k8s_namespace"]
        used: dict[str, str] = {}
        out: list[TeamQueue] = []
        for q in queues:
            plan = planned.get((q.team, cluster))
            name = q.name
            if plan is not None and plan[1].namespace is not None:
                where = Where("routing", field="teams").item(plan[0]).dot("namespace")
                if not check_name(self.r, where, "namespace", name, ("k8s_namespace",),
                                  frozenset(used) | set(reserved)):
                    pass
                elif name in reserved:
                    self.r.add(where, f"namespace {name!r} is Kubernetes' own or an "
                               "add-on's", "choose another namespace", reserved)
                elif name in used:
                    self.r.add(where, f"namespace {name!r} on cluster {cluster!r} is also "
                               f"team {used[name]!r}'s", "give each team its own namespace")
            elif rule.problem(name) or name in reserved or name in used:
                name = fixed_name(f"team-{name}" if name in reserved else name, rule,
                                  frozenset(used) | set(reserved)) or name
            used.setdefault(name, q.team)
            out.append(replace(q, name=name))
        return out


def _cover(f: QueueFlavor, resources: Sequence[str]) -> QueueFlavor:
    """Every resource of the queue in order, 0 where the flavor has none (Kueue wants each
    flavor of a resource group to list exactly the group's resources)."""
    def full(m: dict[str, int] | None) -> dict[str, int] | None:
        return None if m is None else {r: m.get(r, 0) for r in resources}

    return QueueFlavor(f.flavor, f.owner, full(dict(f.nominal)) or {},
                       borrowing_limit=full(dict(f.borrowing_limit))
                       if f.borrowing_limit is not None else None,
                       lending_limit=full(dict(f.lending_limit))
                       if f.lending_limit is not None else None)
