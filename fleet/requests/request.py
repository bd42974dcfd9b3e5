"""Pool requests as decisions: a stack's fleet mapping (plain data, as the stack file holds it)
and a request in; the new fleet mapping and what the change does out, or a refusal that says
why and what would work. No I/O here: `fleet.stack.edit` reads and writes the stack file and
`cli.pool` puts the change into words.

Every change is checked the way `fleet validate` checks a stack: the whole resulting fleet,
every rule and every team's budget. A stack that is invalid before the change is refused as it
is (fix it first); a change that breaks a rule is refused with each problem and the variants
that pass every rule (another zone, spot capacity, a smaller pool or slice), each one checked.

    request_pool(raw, PoolRequest(team="vision", accelerator="v6e 2x4"), catalog=..., today=...)
    resize_pool(raw, "h100-train", nodes=4, catalog=...)
    remove_pool(raw, "g6-ci", catalog=...)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Literal

from fleet.catalog import Catalog, Shape
from fleet.errors import (
    AccelfleetError,
    InputError,
    Problem,
    RequestRefused,
    SpecError,
    UnknownNameError,
    Where,
)
from fleet.model import Fleet, ResolvedPool
from fleet.names import fixed_name
from fleet.requests.edits import REMOVE, pools_of, with_pool, with_updates, without_pool
from fleet.requests.options import alternatives, pool_usd, topology_options
from fleet.rules.validate import validate_fleet
from fleet.spec.fields import Cluster

Action = Literal["add", "resize", "remove"]
CAPACITIES = ("on-demand", "spot", "flex-start", "queued")


@dataclass(frozen=True)
class PoolRequest:
    """What a team asks for; everything but team and accelerator is optional."""

    team: str
    accelerator: str
    topology: str | None = None
    nodes: int | None = None
    zone: str | None = None
    capacity: str | None = None
    name: str | None = None
    cluster: str | None = None
    reason: str | None = None
    requested_by: str | None = None
    expires: date | None = None


@dataclass(frozen=True)
class Change:
    """What a request, resize or removal does.

    spec: the whole fleet mapping after it; before / after: both fleets, validated. entry: the
    new pool as written (add); updates: the keys set on the pool, None deleting one (resize);
    empty for a resize to the size the pool has (nothing to write).
    """

    action: Action
    name: str
    spec: dict[str, Any]
    before: Fleet
    after: Fleet
    entry: dict[str, Any] | None = None
    updates: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def changes_nothing(self) -> bool:
        return self.action == "resize" and not self.updates

    @property
    def pool(self) -> ResolvedPool:
        """The pool as it is after the change (as it was, for a removal)."""
        fleet = self.before if self.action == "remove" else self.after
        return next(p for p in fleet.pools if p.name == self.name)

    @property
    def previous(self) -> ResolvedPool | None:
        """The pool as it was before the change (None for a new pool)."""
        return next((p for p in self.before.pools if p.name == self.name), None)

    def summary(self) -> dict[str, Any]:
        """What changes, JSON-ready: the pool, the team's cost and budget before and after."""
        pool = self.pool
        team = pool.team
        old, new = self.before.team_cost(team), self.after.team_cost(team)
        budget = new.monthly_budget_usd
        previous = self.previous
        return {
            "action": self.action, "pool": {
                **pool.summary(), "accelerator": pool.shape.describe(),
                "devices": pool.devices, "zones": list(pool.spec.zones),
                "requested_by": pool.spec.requested_by, "reason": pool.spec.reason,
                "expires": pool.spec.expires.isoformat() if pool.spec.expires else None},
            "previous": None if previous is None or self.action == "remove" else {
                "nodes": previous.node_count, "devices": previous.devices,
                "topology": previous.shape.topology_str or None,
                "max_monthly_usd": _round(pool_usd(previous))},
            "team": {"name": team, "monthly_budget_usd": budget,
                     "max_monthly_usd_before": _round(old.max_monthly_usd),
                     "max_monthly_usd_after": _round(new.max_monthly_usd),
                     "left_after_usd": None if budget is None else
                     _round(budget - new.max_monthly_usd),
                     "unpriced": list(new.unpriced)},
            "entry": _plain(self.entry), "updates": _plain(self.updates),
            "notes": list(self.notes)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _plain(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def parse_until(text: str, today: date) -> date:
    """`--until`: the last day a pool is needed, as a date (2026-12-31) or a span from today
    (30d, 8w)."""
    m = re.fullmatch(r"(\d{1,4})([dw])", text.strip().lower())
    if m is not None:
        return today + timedelta(days=int(m[1]) * (7 if m[2] == "w" else 1))
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text.strip()):
        try:
            return date.fromisoformat(text.strip())
        except ValueError:
            pass
    raise InputError(f"--until {text!r} is not a date",
                     hint="give the last day the pool is needed as YYYY-MM-DD (e.g. "
                     f"{today + timedelta(days=30)}), or a span from today: 30d, 8w")


# -- checking ----------------------------------------------------------------------------------
def check(raw: Mapping[str, Any], catalog: Catalog) -> Fleet | SpecError:
    """The validated fleet, or the SpecError naming every problem."""
    try:
        return validate_fleet(raw, catalog=catalog)
    except SpecError as exc:
        return exc


def _base(raw: Mapping[str, Any], catalog: Catalog, what: str) -> Fleet:
    result = check(raw, catalog)
    if isinstance(result, SpecError):
        raise RequestRefused(what, result.problems, hint="the stack is invalid before this "
                             "change: fix it first (`accelfleet fleet validate` names every "
                             "problem and its fix)")
    return result


def _find(fleet: Fleet, name: str, what: str) -> ResolvedPool:
    pool = next((p for p in fleet.pools if p.name == name), None)
    if pool is None:
        names = [p.name for p in fleet.pools]
        err = UnknownNameError("pool", name, names, hint="run `accelfleet pool list` to see "
                               "the stack's pools")
        raise RequestRefused(what, [Problem("pool", err.message, err.hint, tuple(names[:12]))])
    return pool


# -- request -----------------------------------------------------------------------------------
def request_pool(raw: Mapping[str, Any], req: PoolRequest, *, catalog: Catalog,
                 today: date) -> Change:
    """A new pool for `req.team`, checked with the whole fleet (see the module docstring)."""
    what = f"the pool request of team {req.team}"
    before = _base(raw, catalog, what)
    _check_request(before, req, today, what)
    cluster, shape = _placement(before, req, catalog, what)
    taken = {p.name for p in before.pools} | {p.name for p in before.system_pools}
    name = _name(req, shape, taken, catalog, what)
    zones, notes, known = _zone_candidates(before, cluster, shape, req, catalog)
    first: tuple[dict[str, Any], SpecError] | None = None
    for zone in zones:
        entry = _entry(req, name, cluster.name, shape, zone)
        spec = with_pool(raw, entry)
        result = check(spec, catalog)
        if isinstance(result, Fleet):
            if req.zone is None:
                notes.append(f"zone {zone} chosen: " + (
                    "the first zone that offers it (zones.yaml) and passes every rule, "
                    "those the cluster's pools use first" if known else
                    "a zone the cluster's pools use, that passes every rule"))
            return Change("add", name, spec, before, result, entry=entry, notes=tuple(notes))
        first = first or (entry, result)
    assert first is not None
    entry, error = first
    raise RequestRefused(what, error.problems, alternatives=alternatives(
        raw, before, catalog, error.problems, entry=entry))


def _check_request(before: Fleet, req: PoolRequest, today: date, what: str) -> None:
    teams = [t.name for t in before.spec.teams]
    if req.team not in teams:
        err = UnknownNameError("team", req.team, teams)
        raise RequestRefused(what, [Problem("--team", err.message, "use a team the stack "
                                            "declares, or add it under `teams:` first",
                                            tuple(teams))])
    if req.expires is not None and req.expires < today:
        raise RequestRefused(what, [Problem("--until", f"{req.expires} is in the past",
                                            "give the last day the pool is needed, today "
                                            f"({today}) or later")])
    if req.capacity is not None and req.capacity not in CAPACITIES:
        raise RequestRefused(what, [Problem("--capacity", f"{req.capacity!r} is not a "
                                            "capacity", f"use one of {', '.join(CAPACITIES)}",
                                            CAPACITIES)])
    if req.nodes is not None and req.nodes < 1:
        raise RequestRefused(what, [Problem("--nodes", f"{req.nodes} nodes", "ask for 1 node "
                                            "or more (`pool remove` gives a pool back)")])


def _resolve(catalog: Catalog, req: PoolRequest, cloud: Any, what: str) -> Shape:
    try:
        shape = catalog.resolve(req.accelerator, cloud=cloud, topology=req.topology)
    except AccelfleetError as exc:
        topo = req.topology is not None and "topolog" in exc.message
        flag = "--topology" if topo else "--accelerator"
        near = getattr(exc, "suggestions", ())
        options = [f"{flag} {s!r}" if " " in s else f"{flag} {s}" for s in near]
        raise RequestRefused(what, [Problem(flag, exc.message, exc.hint)],
                             alternatives=options) from None
    if shape.tpu is not None and req.nodes is not None and req.nodes != shape.hosts:
        raise RequestRefused(what, [Problem(
            "--nodes", f"a TPU slice of topology {shape.topology_str} has {shape.hosts} "
            f"node(s), not {req.nodes}: a slice's nodes follow from its topology",
            "leave out --nodes and choose the slice with --topology")],
            alternatives=[f"--topology {t}" for t in topology_options(catalog, shape,
                                                                      req.nodes)])
    return shape


def _placement(before: Fleet, req: PoolRequest, catalog: Catalog, what: str
               ) -> tuple[Cluster, Shape]:
    """The cluster (of the accelerator's cloud, the team's own first) and the shape."""
    clusters = before.spec.clusters
    if req.cluster is not None:
        cluster = next((c for c in clusters if c.name == req.cluster), None)
        if cluster is None:
            names = [c.name for c in clusters]
            err = UnknownNameError("cluster", req.cluster, names)
            raise RequestRefused(what, [Problem("--cluster", err.message, "use a cluster the "
                                                "stack declares", tuple(names))])
        return cluster, _resolve(catalog, req, cluster.cloud, what)
    shape = _resolve(catalog, req, None, what)
    on_cloud = [c for c in clusters if c.cloud == shape.cloud]
    if not on_cloud and shape.tpu is None:  # an accelerator ("h100") may be on the other cloud
        for cloud in dict.fromkeys(c.cloud for c in clusters):
            try:
                shape = catalog.resolve(req.accelerator, cloud=cloud)
            except AccelfleetError:
                continue
            on_cloud = [c for c in clusters if c.cloud == cloud]
            break
    if not on_cloud:
        kind = "GKE" if shape.cloud == "gcp" else "EKS"
        raise RequestRefused(what, [Problem(
            "--accelerator", f"{shape.machine_type} runs on {shape.cloud}, and the stack has "
            f"no {kind} cluster", f"add a cluster with `cloud: {shape.cloud}` under "
            "`clusters:`, or ask for an accelerator of a cloud the stack has")])
    mine = {p.cluster.name for p in before.pools if p.team == req.team and p.cluster}
    return next((c for c in on_cloud if c.name in mine), on_cloud[0]), shape


def _name(req: PoolRequest, shape: Shape, taken: set[str], catalog: Catalog,
          what: str) -> str:
    rule = catalog.names["gke_node_pool"]  # the strictest place a pool name lands
    if req.name is not None:
        if req.name in taken:
            free = fixed_name(req.name, rule, taken)
            raise RequestRefused(what, [Problem("--name", f"the stack already has a pool named "
                                                f"{req.name!r}", "choose a name no pool has")],
                                 alternatives=[f"--name {free}"] if free else [])
        return req.name  # a name that does not fit is refused by the rules, with the fix
    suffix = (f"{shape.tpu.key}-{shape.topology_str}" if shape.tpu is not None
              else shape.machine_type)
    name = fixed_name(f"{req.team}-{suffix}", rule, taken)
    if name is None:
        raise RequestRefused(what, [Problem("--name", "no free pool name could be made from "
                                            "the team and the accelerator", "give one with "
                                            "--name")])
    return name


def _region(fleet: Fleet, cluster: Cluster) -> str:
    region = fleet.spec.region_of(cluster.cloud)
    assert region is not None  # a valid fleet declares its clusters' clouds
    return region


def _zone_candidates(before: Fleet, cluster: Cluster, shape: Shape, req: PoolRequest,
                     catalog: Catalog) -> tuple[list[str], list[str], bool]:
    """Zones to try, best first: those that offer the shape (zones.yaml), the ones the
    cluster's pools of this accelerator, then the team's, then any pool's already use first."""
    region = _region(before, cluster)
    answer = catalog.zones_offering(shape, region)
    notes = [] if answer.known else [f"which zones offer {answer.what} is not known here"
                                     + (f": {answer.note}" if answer.note else "")]
    if req.zone is not None:
        return [req.zone], notes, answer.known
    pools = [p for p in before.pools if p.cluster is not None and p.cluster.name == cluster.name]
    used = [z for p in pools if p.shape.accelerator.key == shape.accelerator.key
            for z in p.spec.zones]
    used += [z for p in pools if p.team == req.team for z in p.spec.zones]
    used += [z for p in pools for z in p.spec.zones]
    region_zones = list(catalog.regions[cluster.cloud].zones.get(region, ()))
    if answer.known:
        offered = list(answer.offered) or region_zones[:1]  # none: the rules say where it is
    else:
        offered = [z for z in used if z in region_zones] + region_zones
    ordered = [z for z in used if z in offered] + offered
    return list(dict.fromkeys(ordered)), notes, answer.known


def _entry(req: PoolRequest, name: str, cluster: str, shape: Shape, zone: str
           ) -> dict[str, Any]:
    """The new pool as it is written, keys in the order people read them."""
    entry: dict[str, Any] = {"name": name, "cluster": cluster, "team": req.team}
    if shape.tpu is not None:
        entry["accelerator"] = shape.tpu.key
        entry["topology"] = shape.topology_str
    else:
        entry["accelerator"] = shape.machine_type
        entry["nodes"] = req.nodes or 1
    entry["zone"] = zone
    if req.capacity not in (None, "on-demand"):
        entry["capacity"] = req.capacity
    for key in ("requested_by", "reason"):
        if getattr(req, key) is not None:
            entry[key] = getattr(req, key)
    if req.expires is not None:  # as text: a bare YAML date is a timestamp to some readers
        entry["expires"] = req.expires.isoformat()
    return entry


# -- resize and remove ---------------------------------------------------------------------------
def resize_pool(raw: Mapping[str, Any], name: str, *, catalog: Catalog,
                nodes: int | None = None, topology: str | None = None,
                reason: str | None = None) -> Change:
    """Pool `name` with `nodes` nodes (GPU, CPU) or of `topology` (a TPU slice). A resize
    that raises the pool's monthly cost needs a `reason`, kept in the stack as the pool's
    `reason` (issue 38: a resize could double a pool's cost with nothing recorded); one that
    lowers it may carry one."""
    what = f"the resize of pool {name}"
    before = _base(raw, catalog, what)
    pool = _find(before, name, what)
    if (nodes is None) == (topology is None):
        raise RequestRefused(what, [Problem("--nodes/--topology", "give one of them",
                                            "--nodes N for a GPU or CPU pool, --topology AxB "
                                            "for a TPU slice")])
    updates = _tpu_updates(pool, topology, nodes, catalog, what, raw) if pool.shape.tpu \
        else _node_updates(pool, topology, nodes, what)
    if not updates:
        return Change("resize", name, dict(raw), before, before)
    spec = with_updates(raw, name, updates)
    result = check(spec, catalog)
    if isinstance(result, SpecError):
        raise RequestRefused(what, result.problems, alternatives=alternatives(
            raw, before, catalog, result.problems, resize=(name, updates)))
    raised = _cost_raised(pool, next(p for p in result.pools if p.name == name))
    if raised and not (reason or "").strip():
        raise RequestRefused(what, [Problem(
            "--reason", f"the resize raises {name}'s cost {raised}, and no reason was given",
            f"say why with --reason TEXT (kept in the stack as the pool's `reason`), e.g. "
            f"accelfleet pool resize {name} "
            + (f"--nodes {nodes}" if nodes is not None else f"--topology {topology}")
            + ' --reason "INC-123: the eval backlog"')])
    if reason is not None and reason.strip():
        updates = {**updates, "reason": reason.strip()}
        spec = with_updates(raw, name, updates)
        result = check(spec, catalog)
        if isinstance(result, SpecError):  # the reason itself (too long, control characters)
            raise RequestRefused(what, result.problems)
    notes = (_recreated(pool), *_named_for(pool, updates)) if pool.shape.tpu else ()
    return Change("resize", name, spec, before, result, updates=updates, notes=notes)


def _cost_raised(before: ResolvedPool, after: ResolvedPool) -> str:
    """`from about $X to about $Y a month` when `after` may cost more a month than `before`
    (its largest size; a pool priced before and unpriced after counts as raised), else ''."""
    from fleet.words import usd

    old = before.cost.max_monthly_usd if before.cost else None
    new = after.cost.max_monthly_usd if after.cost else None
    if new is None:
        return "" if old is None else f"from about {usd(old)} a month to an unpriced size"
    if old is None or new <= old + 0.005:
        return ""
    return f"from about {usd(old)} to about {usd(new)} a month"


def _named_for(pool: ResolvedPool, updates: Mapping[str, Any]) -> tuple[str, ...]:
    """A slice whose name carries its old topology (`vision-v6e-2x2`, as `pool request` names
    it) says so once resized: the name stays (what refers to it keeps working), the note says
    how to rename it while the slice is recreated anyway."""
    old = pool.shape.topology_str
    new = str(updates.get("topology") or "")
    if not old or not new or old == new or old not in pool.name.split("-"):
        return ()
    renamed = "-".join(new if part == old else part for part in pool.name.split("-"))
    return (f"its name {pool.name} still says {old}: the name is kept (what refers to it "
            f"keeps working); to rename it {renamed}, change its `name:` and every reference "
            "to it in the stack in the same change",)


def _recreated(pool: ResolvedPool) -> str:
    """What a TPU slice's resize does to it: a slice's topology is fixed when it is created
    (components/engine/data/replacements.yaml: placementPolicy.tpuTopology for a GKE slice,
    acceleratorConfig for a TPU VM), so the new topology is a new slice."""
    from fleet.words import counted

    shape = pool.shape
    return (f"the slice is recreated, not resized in place: `pulumi up` deletes {pool.name} "
            f"({shape.topology_str}: {counted(shape.hosts, 'host')} and the work on "
            f"{'it' if shape.hosts == 1 else 'them'}) and creates it anew at the new topology; "
            "drain it first (`accelfleet plan --diff` flags the replacement)")


def _node_updates(pool: ResolvedPool, topology: str | None, nodes: int | None,
                  what: str) -> dict[str, Any]:
    if topology is not None:
        raise RequestRefused(what, [Problem("--topology", f"{pool.name} is a "
                                            f"{pool.shape.kind.upper()} pool of "
                                            f"{pool.shape.machine_type}; only TPU slices take a "
                                            "topology", "give its node count with --nodes N")])
    assert nodes is not None
    if nodes < 0:
        raise RequestRefused(what, [Problem("--nodes", f"{nodes} nodes", "give 0 nodes or more "
                                            "(`pool remove` gives the pool back)")])
    return {} if pool.spec.nodes == nodes else {"nodes": nodes}


def _tpu_updates(pool: ResolvedPool, topology: str | None, nodes: int | None,
                 catalog: Catalog, what: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    shape = pool.shape
    assert shape.tpu is not None
    if nodes is not None:
        kind = "a multi-host TPU slice" if shape.multi_host else "a TPU slice"
        raise RequestRefused(what, [Problem(
            "--nodes", f"{pool.name} is {kind} ({shape.topology_str}: {shape.chips} chips on "
            f"{shape.hosts} host{'s' if shape.hosts != 1 else ''}); {kind} changes topology, "
            "never node count", "resize it with --topology (its nodes follow from the "
            "topology); for more identical slices set `multislice`")],
            alternatives=[f"--topology {t}" for t in topology_options(catalog, shape, nodes)])
    assert topology is not None
    try:
        new = catalog.tpu_slice(shape.tpu.key, topology,
                                single_host=pool.runtime == "tpu-vm")
    except AccelfleetError as exc:
        near = getattr(exc, "suggestions", ())
        raise RequestRefused(what, [Problem("--topology", exc.message, exc.hint)],
                             alternatives=[f"--topology {t}" for t in near]) from None
    if new.topology == shape.topology:
        return {}
    entry = next(p for p in pools_of(raw) if p.get("name") == pool.name)
    updates: dict[str, Any] = {"accelerator": shape.tpu.key, "topology": new.topology_str}
    if "nodes" in entry:
        updates["nodes"] = REMOVE  # a slice's nodes follow from its topology
    auto = pool.spec.autoscaling
    if auto is not None and shape.multi_host and (auto.min_nodes, auto.max_nodes) == (
            0, shape.hosts):
        updates["autoscaling"] = {"min_nodes": 0, "max_nodes": new.hosts}  # still atomic
    return updates


def remove_pool(raw: Mapping[str, Any], name: str, *, catalog: Catalog) -> Change:
    """The fleet without pool `name` (refused where the rest would break a rule)."""
    what = f"the removal of pool {name}"
    before = _base(raw, catalog, what)
    _find(before, name, what)
    spec = without_pool(raw, name)
    result = check(spec, catalog)
    if isinstance(result, SpecError):
        raise RequestRefused(what, [_named_by(p, name, raw) for p in result.problems],
                             hint="the rest of the stack refers to this pool: change what "
                             "each problem names first")
    return Change("remove", name, spec, before, result)


def _named_by(problem: Problem, name: str, raw: Mapping[str, Any]) -> Problem:
    """A routing entry that names the removed pool, said as what it is (the did-you-mean of
    an unknown name would offer another GPU, maybe on another cloud): which team's `prefer`
    names it, and that the entry goes first."""
    at = problem.where
    if not isinstance(at, Where) or at.section != "routing" or f"{name!r}" not in problem.message:
        return problem
    match at.steps:
        case ("teams", int(i), "prefer", int(j)):
            pass
        case _:
            return problem
    teams = (raw.get("routing") or {}).get("teams") if isinstance(raw.get("routing"),
                                                                  Mapping) else None
    rule = teams[i] if isinstance(teams, list) and i < len(teams) else {}
    team = rule.get("team", "?") if isinstance(rule, Mapping) else "?"
    return Problem(problem.where, f"team {team}'s routing `prefer` list names pool {name} "
                   f"(entry {j + 1}): Kueue would route its jobs to a pool that is "
                   "gone", f"remove {name!r} from routing.teams[{i}].prefer first (team "
                   f"{team}), then remove the pool")
