"""What every pool costs, and the budget rule: the cost decisions of the fleet model.

A pool's rate per node-hour comes from, in this order:
1. the stack's own rate (`prices:` in the fleet spec: negotiated or committed-use rates per
   machine type, or per TPU chip-hour per generation), for the pool's capacity kind or for all;
2. on an EC2 Capacity Block, the catalog's Capacity Block rate (never the On-Demand price);
3. the catalog's public list price (`fleet.catalog.list_rate`, the policy `advise` shows too): the
   spot price for a spot pool (none where no spot price is published: the pool is unpriced,
   never costed at the on-demand price), else the on-demand price (reservations, flex-start and
   queued pools are billed at on-demand rates unless a commitment applies);
4. else none: the pool is "unpriced", never $0.
A pool costs its rate times its nodes, from its fewest to its most (`ResolvedPool.node_range`).
Budgets check the most a team's pools can cost, and a budgeted team's pool with no price at all
is an error naming the fix. `fleet.rules.validate` calls `stack_rates`, `priced` and
`check_budgets`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from fleet import words as W
from fleet.catalog import Catalog, Shape
from fleet.catalog.list_rate import list_usd
from fleet.errors import AccelfleetError, Where, suggest
from fleet.model import PoolCost, PriceSource, ResolvedPool
from fleet.rules.problems import RuleProblems as Checks
from fleet.spec.fields import Capacity, FleetSpec, StackRate

CapacityKind = Literal["on-demand", "spot", "reservation"]


@dataclass(frozen=True)
class Rate:
    """A checked stack rate: per machine-hour (`tpu` False) or per TPU chip-hour."""

    key: str  # a machine type, or a TPU generation's key
    tpu: bool
    usd: float
    capacity: CapacityKind | None
    where: Where  # prices[i], for the report


@dataclass(frozen=True)
class RateBook:
    """The stack's rates by (machine type or TPU generation, capacity kind or None: any)."""

    rates: dict[tuple[str, CapacityKind | None], Rate]

    def find(self, key: str, kind: CapacityKind) -> Rate | None:
        return self.rates.get((key, kind)) or self.rates.get((key, None))


def capacity_kind(capacity: Capacity) -> CapacityKind:
    """How a pool's capacity is billed: spot, a reservation (Capacity Blocks included), or
    on-demand (flex-start and queued too: their nodes are on-demand VMs)."""
    if capacity.spot:
        return "spot"
    return "reservation" if capacity.reservation else "on-demand"


def stack_rates(checks: Checks, spec: FleetSpec) -> RateBook:
    """The stack's `prices:`, each checked against the catalog; every bad entry is reported
    (unknown name with did-you-mean, a rate not above 0, the wrong unit, a duplicate)."""
    book: dict[tuple[str, CapacityKind | None], Rate] = {}
    for i, entry in enumerate(spec.prices):
        rate = _rate(checks, entry, Where("prices", position=i))
        if rate is None:
            continue
        taken = book.get((rate.key, rate.capacity))
        if taken is not None:
            kind = rate.capacity or "every capacity kind"
            checks.add(rate.where, f"{taken.where} already gives a rate for {rate.key} "
                       f"({kind})", "keep one of the two entries, or set `capacity` "
                       "(on-demand, spot or reservation) to tell them apart")
            continue
        book[(rate.key, rate.capacity)] = rate
    return RateBook(book)


def _rate(checks: Checks, entry: StackRate, at: Where) -> Rate | None:
    if (entry.machine_type is None) == (entry.tpu is None):
        both = entry.machine_type is not None
        checks.add(at, "names both `machine_type` and `tpu`" if both else
                   "names neither `machine_type` nor `tpu`",
                   "give one of `machine_type` (with `usd_per_hour`) or `tpu` (a generation "
                   "such as v5p, with `usd_per_chip_hour`)")
        return None
    key, ok = _rate_key(checks, entry, at)
    tpu = entry.tpu is not None
    unit, wrong = ("usd_per_chip_hour", "usd_per_hour") if tpu else ("usd_per_hour",
                                                                       "usd_per_chip_hour")
    what = f"TPU {key} per chip-hour" if tpu else f"one {key} machine per hour"
    if getattr(entry, wrong) is not None:
        checks.add(at.dot(f"{wrong}"), f"a {'TPU' if tpu else 'machine type'} rate is given as "
                   f"`{unit}`", f"rename `{wrong}` to `{unit}` (US dollars for {what})")
        return None
    usd = getattr(entry, unit)
    if usd is None:
        checks.add(at, f"gives no rate: `{unit}` is required",
                   f"add `{unit}: N`, the US dollars the stack pays for {what}")
        return None
    if not math.isfinite(usd) or usd <= 0:
        checks.add(at.dot(f"{unit}"), f"{usd!r} is not a rate: a rate must be above 0 US dollars",
                   f"give the dollars you pay for {what}, e.g. `{unit}: 2.5`; to leave a "
                   "pool unpriced, remove the entry")
        return None
    if not ok:
        return None
    return Rate(key=key, tpu=tpu, usd=float(usd), capacity=entry.capacity, where=at)


def _rate_key(checks: Checks, entry: StackRate, at: Where) -> tuple[str, bool]:
    """(the machine type or TPU generation key, whether it is known); reports unknown names."""
    cat = checks.catalog
    if entry.tpu is not None:
        try:
            return cat.tpu_generation(entry.tpu).key, True
        except AccelfleetError as exc:
            generations = sorted(cat.tpus)
            checks.add(at.dot("tpu"), exc.message, "name a Cloud TPU generation: "
                       + ", ".join(generations), tuple(generations))
            return entry.tpu, False
    name = str(entry.machine_type)
    if name in cat.machines:
        return name, True
    tpu_machine = next((g.key for g in cat.tpus.values()
                        if name in {m for _c, m in g.machine_types}), None)
    if tpu_machine is not None:
        checks.add(at.dot("machine_type"), f"{name!r} is a Cloud TPU machine type: TPUs are "
                   "priced per chip-hour", f"use `tpu: {tpu_machine}` with "
                   "`usd_per_chip_hour`")
        return name, False
    near = suggest(name, cat.machines)
    message = f"unknown machine type {name!r}"
    if near:
        message += f"; did you mean {', '.join(repr(n) for n in near)}?"
    checks.add(at.dot("machine_type"), message, "name a GPU or CPU machine type from "
               "`accelfleet catalog list` (for a TPU: `tpu: <generation>`)")
    return name, False


def priced(pools: Sequence[ResolvedPool], catalog: Catalog, rates: RateBook
           ) -> list[ResolvedPool]:
    """The pools, each with its `cost`."""
    return [replace(p, cost=pool_cost(p, catalog, rates)) for p in pools]


def pool_cost(pool: ResolvedPool, catalog: Catalog, rates: RateBook) -> PoolCost:
    """What one pool costs, and where its rate comes from (see the module docstring)."""
    shape, kind = pool.shape, capacity_kind(pool.spec.capacity)
    low, high = pool.node_range

    def cost(source: PriceSource, per_node: float | None, detail: str,
             region: str | None = None, as_of: str | None = None) -> PoolCost:
        return PoolCost(source=source, usd_per_node_hour=per_node,
                        nodes=pool.node_count, min_nodes=low, max_nodes=high, detail=detail,
                        region=region, as_of=as_of)

    key = shape.tpu.key if shape.tpu is not None else shape.machine_type
    rate = rates.find(key, kind)
    if rate is not None:
        per_node = rate.usd * shape.devices_per_host if rate.tpu else rate.usd
        return cost("stack rate", per_node, f"{rate.where} ({rate.capacity or 'any capacity'})")
    if pool.spec.capacity.block:
        block = catalog.capacity_block_prices.get(shape.machine_type)
        if block is None:
            return cost("unpriced", None, f"no EC2 Capacity Block rate for {shape.machine_type}"
                        " in the catalog (never the On-Demand price)")
        confirmed = "" if block.confirmed else ", not confirmed as current"
        return cost("capacity block", block.instance_hour_usd,
                    f"EC2 Capacity Block rate{confirmed}", block.region, block.as_of)
    price = catalog.price(shape)
    if price is None or (price.on_demand_usd is None and price.spot_usd is None):
        note = price.note if price is not None else "no entry in prices.yaml"
        return cost("unpriced", None, note)
    per, detail = list_usd(price, kind)
    if per is None:
        return cost("unpriced", None, detail)
    per_node = _per_node(per, shape) if price.unit == "chip_hour" else per
    return cost("list", per_node, detail, price.region, price.as_of)


def _per_node(usd_per_chip_hour: float, shape: Shape) -> float:
    return usd_per_chip_hour * shape.devices_per_host


def check_budgets(checks: Checks, spec: FleetSpec, pools: Sequence[ResolvedPool],
                  fixed_monthly_usd: Mapping[str, float] | None = None) -> None:
    """Every budgeted team: each of its pools has a price, and together, at their largest,
    with what the team pays whatever its pools' size (`fixed_monthly_usd`: the platform's
    control planes), they fit its monthly budget."""
    for team in spec.teams:
        budget = team.monthly_budget_usd
        if budget is None:
            continue
        mine = [p for p in pools if p.team == team.name]
        for p in mine:
            if p.cost is None or p.cost.usd_per_node_hour is None:
                _unpriced(checks, p, team.name, budget)
        fixed = (fixed_monthly_usd or {}).get(team.name, 0.0)
        most = sum(p.cost.max_monthly_usd or 0.0 for p in mine if p.cost) + fixed
        if most > budget:
            listing = ", ".join([*(_cost_words(p) for p in mine
                                   if p.cost and p.cost.max_monthly_usd),
                                 *([f"control planes {W.usd(fixed)}"] if fixed else [])])
            checks.add(
                Where("teams", name=team.name, field="monthly_budget_usd"),
                f"the team's pools cost up to about {W.usd(most)} a month at their largest "
                f"({listing}), over its budget of {W.usd(budget)}",
                "shrink or remove a pool, lower an autoscaling `max_nodes`, use spot capacity, "
                "declare the rate you pay under `prices:`, or raise the budget",
            )


def _cost_words(pool: ResolvedPool) -> str:
    cost = pool.cost
    assert cost is not None and cost.max_monthly_usd is not None
    low, high = cost.min_monthly_usd or 0.0, cost.max_monthly_usd
    return f"{pool.name} {W.usd_span(low, high)}"


def _unpriced(checks: Checks, pool: ResolvedPool, team: str, budget: float) -> None:
    shape = pool.shape
    kind = capacity_kind(pool.spec.capacity)
    if shape.tpu is not None:
        example = f"{{tpu: {shape.tpu.key}, usd_per_chip_hour: N}}"
    else:
        scope = "" if kind == "on-demand" else f", capacity: {kind}"
        example = f"{{machine_type: {shape.machine_type}, usd_per_hour: N{scope}}}"
    reason = ("the catalog has no EC2 Capacity Block rate for it (a block is never costed at "
              "the On-Demand price)" if pool.spec.capacity.block else
              "the catalog has no public list price for it (none could be confirmed)")
    where = (Where("clusters", name=pool.cluster.name, field="system_pool")
             if pool.system and pool.cluster
             else Where("pools", name=pool.name))
    checks.add(where,
               f"{shape.machine_type} ({kind}) has no price: {reason} and the stack's "
               f"`prices:` gives none, so team {team}'s budget of {W.usd(budget)} cannot be "
               "checked",
               f"declare the rate you pay under `prices:`, e.g. `prices: [{example}]`, or "
               f"remove `monthly_budget_usd` from team {team}")
