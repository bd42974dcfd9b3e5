"""What would work instead of a refused pool request or resize: other zones, spot capacity, a
smaller pool or slice, and the team's remaining budget. Every variant offered is checked the
way the request was (the whole fleet, every rule and budget), so none of them is a guess."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from math import prod
from typing import Any

from fleet import words as W
from fleet.catalog import Catalog, Shape
from fleet.errors import AccelfleetError, Problem, SpecError
from fleet.model import Fleet, ResolvedPool
from fleet.requests.edits import with_pool, with_updates
from fleet.rules.validate import validate_fleet

MAX_ZONES = 3  # other zones offered
MAX_TRIES = 16  # smaller slices tried, largest first


def pool_usd(pool: ResolvedPool) -> float | None:
    """The most the pool can cost a month (budgets check the most), None when unpriced."""
    return pool.cost.max_monthly_usd if pool.cost else None


def _usd(fleet: Fleet, name: str) -> str:
    pool = next(p for p in fleet.pools if p.name == name)
    usd = pool_usd(pool)
    return W.UNPRICED if usd is None else f"{W.usd(usd)}/month"


def _passes(spec: Mapping[str, Any], catalog: Catalog) -> Fleet | None:
    try:
        return validate_fleet(spec, catalog=catalog)
    except SpecError:
        return None


def topology_options(catalog: Catalog, shape: Shape, nodes: int | None) -> list[str]:
    """Topologies of the slice's generation: those with `nodes` hosts when given (and any),
    else the nearest in chips below and above the slice."""
    assert shape.tpu is not None
    valid = catalog.topologies(shape.tpu.key)
    if nodes is not None:
        exact = [t for t in valid if catalog.tpu_slice(shape.tpu.key, t).hosts == nodes]
        if exact:
            return exact[:3]
    chips = shape.chips
    below = [t for t in valid if _chips(t) < chips][-2:]
    above = [t for t in valid if _chips(t) > chips][:2]
    return below + above


def _chips(topology: str) -> int:
    return prod(int(s) for s in topology.split("x"))


def alternatives(raw: Mapping[str, Any], before: Fleet, catalog: Catalog,
                 problems: Sequence[Problem], *, entry: Mapping[str, Any] | None = None,
                 resize: tuple[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Variants of a refused request (`entry`, the new pool) or resize (`resize`: the pool's
    name and the keys it would set) that pass every rule, in words, with what each costs."""
    if entry is not None:
        name, current = str(entry["name"]), dict(entry)

        def attempt(changes: Mapping[str, Any]) -> Fleet | None:
            return _passes(with_pool(raw, {**current, **changes}), catalog)
    else:
        assert resize is not None
        name, current = resize[0], dict(resize[1])

        def attempt(changes: Mapping[str, Any]) -> Fleet | None:
            return _passes(with_updates(raw, name, {**current, **changes}), catalog)

    old = next((p for p in before.pools if p.name == name), None)
    out: list[str] = []
    if entry is not None:
        out += _zones(entry, before, catalog, attempt)
    capacity = entry.get("capacity") if entry is not None else (
        old.spec.capacity.label if old is not None else None)
    if capacity in (None, "on-demand"):
        fleet = attempt({"capacity": "spot"})
        if fleet is not None:
            how = "--capacity spot" if entry is not None else \
                "`capacity: spot` on the pool (edit the stack file)"
            out.append(f"{how} ({_usd(fleet, name)} at the spot price; spot nodes can be "
                       "taken back at any time)")
    out += _smaller(entry, current, old, catalog, attempt, name)
    if entry is not None:
        out += _other_cloud(entry, before, catalog, attempt)
    team = str(entry["team"]) if entry is not None else (old.team if old else "")
    out += _budget(before, team, problems)
    return out


def _zones(entry: Mapping[str, Any], before: Fleet, catalog: Catalog,
           attempt: Callable[[Mapping[str, Any]], Fleet | None]) -> list[str]:
    cluster = next((c for c in before.spec.clusters if c.name == entry.get("cluster")), None)
    if cluster is None:
        return []
    region = before.spec.region_of(cluster.cloud)
    if region is None:
        return []
    try:
        shape = catalog.resolve(str(entry["accelerator"]), cloud=cluster.cloud,
                                topology=entry.get("topology"))
    except AccelfleetError:
        return []
    answer = catalog.zones_offering(shape, region)
    zones = answer.offered if answer.known else catalog.regions[cluster.cloud].zones.get(
        region, ())
    out: list[str] = []
    for zone in zones:
        if zone == entry.get("zone") or len(out) == MAX_ZONES:
            continue
        fleet = attempt({"zone": zone})
        if fleet is not None:
            out.append(f"--zone {zone} ({_usd(fleet, str(entry['name']))})")
    return out


def _other_cloud(entry: Mapping[str, Any], before: Fleet, catalog: Catalog,
                 attempt: Callable[[Mapping[str, Any]], Fleet | None]) -> list[str]:
    """The same GPU on each other cloud the stack has a cluster on: its machine with the
    nearest GPU count, in the first zone (zones.yaml) where the whole request passes."""
    cluster = next((c for c in before.spec.clusters if c.name == entry.get("cluster")), None)
    if cluster is None or entry.get("topology") is not None:
        return []
    try:
        shape = catalog.resolve(str(entry["accelerator"]), cloud=cluster.cloud)
    except AccelfleetError:
        return []
    if shape.tpu is not None:
        return []  # Cloud TPUs are on gcp only
    out: list[str] = []
    for other in before.spec.clusters:
        if other.cloud == cluster.cloud or any(f"(on {other.cloud}" in o for o in out):
            continue
        region = before.spec.region_of(other.cloud)
        same = [s for s in catalog.shapes(cloud=other.cloud, kind="gpu")
                if s.accelerator.key == shape.accelerator.key]
        if region is None or not same:
            continue
        try:  # the catalog's own machine for the accelerator there, when its count matches
            usual = catalog.resolve(shape.accelerator.key, cloud=other.cloud).machine_type
        except AccelfleetError:
            usual = ""
        match = min(same, key=lambda s: (abs(s.devices_per_host - shape.devices_per_host),
                                         s.machine_type != usual, s.machine_type))
        answer = catalog.zones_offering(match, region)
        zones = answer.offered if answer.known else catalog.regions[other.cloud].zones.get(
            region, ())
        for zone in list(zones)[:MAX_ZONES]:
            fleet = attempt({"cluster": other.name, "accelerator": match.machine_type,
                             "zone": zone})
            if fleet is not None:
                out.append(f"--accelerator {match.machine_type} --cluster {other.name} "
                           f"--zone {zone} (on {other.cloud}: {_usd(fleet, str(entry['name']))})")
                break
    return out


def _smaller(entry: Mapping[str, Any] | None, current: Mapping[str, Any],
             old: ResolvedPool | None, catalog: Catalog,
             attempt: Callable[[Mapping[str, Any]], Fleet | None], name: str) -> list[str]:
    topology = current.get("topology")
    if topology is not None:  # a TPU slice: the largest smaller topology that passes
        generation = str(current.get("accelerator") or "")
        try:
            valid = catalog.topologies(generation)
        except AccelfleetError:
            return []
        floor = old.shape.chips if old is not None and entry is None else 0  # a resize: up
        smaller = [t for t in valid if floor < _chips(t) < _chips(str(topology))]
        for t in list(reversed(smaller))[:MAX_TRIES]:
            if old is not None and old.shape.topology_str == t:
                continue
            fleet = attempt({"topology": t})
            if fleet is not None:
                return [f"--topology {t} ({_chips(t)} chips, {_usd(fleet, name)})"]
        return []
    nodes = current.get("nodes")
    if not isinstance(nodes, int) or nodes <= 1:
        return []
    low, high, best = 1, nodes - 1, None  # cost grows with nodes: the largest that passes
    if old is not None and old.spec.nodes is not None and entry is None:
        low = old.spec.nodes + 1 if old.spec.nodes < nodes else 1
    while low <= high:
        mid = (low + high) // 2
        fleet = attempt({"nodes": mid})
        if fleet is not None:
            best, low = (mid, fleet), mid + 1
        else:
            high = mid - 1
    if best is None:
        return []
    return [f"--nodes {best[0]} ({_usd(best[1], name)})"]


def _budget(before: Fleet, team: str, problems: Sequence[Problem]) -> list[str]:
    if not any(p.where == f"teams {team!r}.monthly_budget_usd" for p in problems):
        return []
    cost = before.team_cost(team)
    budget = cost.monthly_budget_usd
    if budget is None:
        return []
    left = budget - cost.max_monthly_usd
    return [f"a pool within team {team}'s remaining budget: {W.usd(max(left, 0))} a month of "
            f"its {W.usd(budget)} (its pools cost up to {W.usd(cost.max_monthly_usd)}), or a "
            "larger budget under `teams:`"]
