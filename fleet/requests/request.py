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

What a request is and what a change does (PoolRequest, Change, parse_until, check) are in
_change.py, a resize and a removal in _resize.py; this module re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from fleet.catalog import Catalog, Shape
from fleet.errors import (
    AccelfleetError,
    Problem,
    RequestRefused,
    SpecError,
    UnknownNameError,
)
from fleet.model import Fleet
from fleet.names import fixed_name
from fleet.requests._change import CAPACITIES as CAPACITIES
from fleet.requests._change import Action as Action
from fleet.requests._change import Change as Change
from fleet.requests._change import PoolRequest as PoolRequest
from fleet.requests._change import _base, check
from fleet.requests._change import parse_until as parse_until
from fleet.requests._resize import remove_pool as remove_pool
from fleet.requests._resize import resize_pool as resize_pool
from fleet.requests.edits import with_pool
from fleet.requests.options import alternatives, topology_options
from fleet.spec.fields import Cluster


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
