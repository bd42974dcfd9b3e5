"""What every pool costs: list prices with their sources, the stack's own rates, ranges for
autoscaling pools, and budgets that count everything (issue 10, "Costs that count everything").

Sources of the figures checked here (fleet/catalog/data/prices.yaml):
- Cloud TPU list prices per chip-hour: skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv
  (generated from the Cloud Billing Catalog API): tpu-v5p-8 in us-central1 is $16.80 an hour for
  4 chips, tpu-v5p-128 $268.80 for 64 chips, so $4.20 per chip-hour.
- G2 (L4) machine prices: Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleet import load_fleet, validate_fleet
from fleet.catalog import HOURS_PER_MONTH, Catalog, load_catalog
from fleet.errors import Problem
from fleet.stack.read import EXAMPLE_STACK
from tests.fleet.conftest import pool, problems


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()




def budgeted(spec: dict[str, Any], usd: float = 10_000_000) -> dict[str, Any]:
    spec["teams"][0]["monthly_budget_usd"] = usd
    return spec


def at(spec: dict[str, Any], where: str) -> Problem:
    found = [p for p in problems(spec) if p.where.startswith(where)]
    assert found, f"no problem at {where}: {[p.render() for p in problems(spec)]}"
    return found[0]


# -- the catalog's list prices -------------------------------------------------------------------
def test_every_machine_and_tpu_generation_has_a_price_or_says_why(cat: Catalog) -> None:
    """No shape is silently unpriced: each has a prices.yaml entry, with a figure and its
    source and date, or with no figure and a note saying why none could be confirmed."""
    keys = {m.name for m in cat.machines.values()} | {g.accelerator for g in cat.tpus.values()}
    listed = {machine for (_cloud, machine) in cat.prices}
    assert keys <= listed, sorted(keys - listed)
    for price in cat.prices.values():
        assert price.source and price.as_of
        if price.on_demand_usd is None:
            assert price.note, price.machine


@pytest.mark.parametrize("generation", ["v4", "v5e", "v5p", "v6e"])
def test_tpu_generations_have_a_chip_hour_list_price(cat: Catalog, generation: str) -> None:
    gen = cat.tpu_generation(generation)
    price = cat.prices[("gcp", gen.accelerator)]
    assert price.unit == "chip_hour" and price.on_demand_usd and price.spot_usd
    assert "skypilot-catalog" in price.source and price.as_of


def test_tpu7x_list_price_is_not_invented(cat: Catalog) -> None:
    price = cat.prices[("gcp", "tpu7x")]
    assert price.on_demand_usd is None and "could not" in price.note


def test_v5p_128_hand_check(cat: Catalog) -> None:
    """v5p-128 is 64 chips; at $4.20 per chip-hour (us-central1) for 730 hours a month."""
    shape = cat.resolve("v5p-128")
    assert shape.chips == 64
    assert cat.hourly_usd(shape) == pytest.approx(64 * 4.20)
    assert cat.monthly_usd(shape, 1) == pytest.approx(64 * 4.20 * 730)  # $196,224


def test_example_v5p_slice_costs_its_chips_with_its_source() -> None:
    fleet = load_fleet(str(EXAMPLE_STACK))
    v5p = next(p for p in fleet.pools if p.name == "v5p-slice")
    assert v5p.cost is not None and v5p.cost.source == "list"
    assert v5p.monthly_usd == pytest.approx(64 * 4.20 * HOURS_PER_MONTH)
    price = v5p.summary()["price"]
    assert price["source"] == "list" and price["region"] == "us-central1" and price["as_of"]
    assert price["usd_per_node_hour"] == pytest.approx(4 * 4.20)  # 4 chips per host


def test_g2_pools_are_priced_at_spot_when_spot(spec: dict[str, Any], cat: Catalog) -> None:
    spec["pools"] = [pool(name="l4", accelerator="g2-standard-24", nodes=2, capacity="spot"),
                     pool(name="l4od", accelerator="g2-standard-24", nodes=2)]
    pools = {p.name: p for p in validate_fleet(spec).pools}
    price = cat.prices[("gcp", "g2-standard-24")]
    assert price.spot_usd and price.on_demand_usd
    assert pools["l4"].monthly_usd == pytest.approx(price.spot_usd * 2 * HOURS_PER_MONTH)
    assert pools["l4od"].monthly_usd == pytest.approx(price.on_demand_usd * 2 * HOURS_PER_MONTH)


# -- no price: an error under a budget, "unpriced" otherwise -------------------------------------
def test_budgeted_team_with_an_unpriced_pool_is_an_error(spec: dict[str, Any]) -> None:
    spec["pools"] = [pool(name="b200", accelerator="a4-highgpu-8g", nodes=1, zone="us-central1-b")]
    p = at(budgeted(spec), "pools 'b200'")
    assert "no price" in p.message and "research" in p.message
    assert "prices:" in p.hint and "monthly_budget_usd" in p.hint
    assert "a4-highgpu-8g" in p.hint


def test_budgeted_team_with_an_unpriced_tpu_names_the_chip_hour_fix(spec: dict[str, Any]
                                                                     ) -> None:
    spec["pools"] = [pool(name="iw", accelerator="tpu7x", topology="2x2x1", nodes=None)]
    p = at(budgeted(spec), "pools 'iw'")
    assert "tpu: tpu7x" in p.hint and "usd_per_chip_hour" in p.hint


def test_unbudgeted_team_may_have_an_unpriced_pool(spec: dict[str, Any]) -> None:
    spec["teams"] = [{"name": "research"}]
    spec["pools"] = [pool(name="b200", accelerator="a4-highgpu-8g", nodes=1, zone="us-central1-b")]
    fleet = validate_fleet(spec)
    b200 = fleet.pools[0]
    assert b200.cost is not None and b200.cost.source == "unpriced"
    assert b200.monthly_usd is None and b200.summary()["price"]["source"] == "unpriced"
    team = fleet.team_cost("research")
    assert team.unpriced == ("b200",)


# -- the stack's own rates ---------------------------------------------------------------------
def test_stack_rate_wins_over_the_list_price(spec: dict[str, Any]) -> None:
    spec["prices"] = [{"machine_type": "a3-highgpu-8g", "usd_per_hour": 50,
                       "note": "negotiated, contract 2026-01"}]
    h100 = validate_fleet(spec).pools[0]
    assert h100.cost is not None and h100.cost.source == "stack rate"
    assert h100.monthly_usd == pytest.approx(2 * 50 * HOURS_PER_MONTH)


def test_stack_rate_prices_an_unpriced_pool_under_a_budget(spec: dict[str, Any]) -> None:
    spec["prices"] = [{"machine_type": "a4-highgpu-8g", "usd_per_hour": 70.5}]
    spec["pools"] = [pool(name="b200", accelerator="a4-highgpu-8g", nodes=1, zone="us-central1-b")]
    b200 = validate_fleet(budgeted(spec)).pools[0]
    assert b200.monthly_usd == pytest.approx(70.5 * HOURS_PER_MONTH)


def test_stack_rate_per_capacity_kind(spec: dict[str, Any]) -> None:
    spec["prices"] = [{"machine_type": "a3-highgpu-8g", "usd_per_hour": 20, "capacity": "spot"}]
    spec["pools"] = [pool(name="od", nodes=1), pool(name="sp", nodes=1, capacity="spot")]
    pools = {p.name: p for p in validate_fleet(spec).pools}
    assert pools["sp"].cost is not None and pools["sp"].cost.source == "stack rate"
    assert pools["sp"].monthly_usd == pytest.approx(20 * HOURS_PER_MONTH)
    assert pools["od"].cost is not None and pools["od"].cost.source == "list"


def test_stack_rate_for_a_reservation_covers_a_capacity_block(spec: dict[str, Any]) -> None:
    spec["prices"] = [{"machine_type": "p6-b200.48xlarge", "usd_per_hour": 60,
                       "capacity": "reservation"}]
    spec["pools"] = [pool(name="blk", cluster="eks", accelerator="p6-b200.48xlarge", nodes=1,
                          zone="us-east-1a",
                          capacity={"reservation": "cr-0123456789abcdef0", "block": True})]
    block = validate_fleet(budgeted(spec)).pools[0]
    assert block.monthly_usd == pytest.approx(60 * HOURS_PER_MONTH)


def test_tpu_chip_hour_stack_rate(spec: dict[str, Any]) -> None:
    spec["prices"] = [{"tpu": "v5p", "usd_per_chip_hour": 2.0, "note": "1-year commitment"}]
    spec["pools"] = [pool(name="v5p", accelerator="v5p-128", nodes=None)]
    v5p = validate_fleet(spec).pools[0]
    assert v5p.monthly_usd == pytest.approx(64 * 2.0 * HOURS_PER_MONTH)


@pytest.mark.parametrize(("rate", "where", "words"), [
    ({"machine_type": "a3-highgpu-8", "usd_per_hour": 5}, "prices[0].machine_type",
     "did you mean 'a3-highgpu-8g'"),
    ({"tpu": "v5q", "usd_per_chip_hour": 2}, "prices[0].tpu", "did you mean 'v5p'"),
    ({"machine_type": "a3-highgpu-8g", "usd_per_hour": -3}, "prices[0].usd_per_hour",
     "above 0"),
    ({"machine_type": "a3-highgpu-8g", "usd_per_hour": 0}, "prices[0].usd_per_hour", "above 0"),
    ({"machine_type": "a3-highgpu-8g", "usd_per_hour": float("inf")}, "prices[0].usd_per_hour",
     "above 0"),
    ({"machine_type": "a3-highgpu-8g"}, "prices[0]", "usd_per_hour"),
    ({"usd_per_hour": 5}, "prices[0]", "machine_type"),
    ({"machine_type": "a3-highgpu-8g", "tpu": "v5p", "usd_per_hour": 5}, "prices[0]", "one of"),
    ({"tpu": "v5p", "usd_per_hour": 5}, "prices[0].usd_per_hour", "usd_per_chip_hour"),
    ({"machine_type": "a3-highgpu-8g", "usd_per_chip_hour": 5}, "prices[0].usd_per_chip_hour",
     "usd_per_hour"),
    ({"machine_type": "ct5p-hightpu-4t", "usd_per_hour": 5}, "prices[0].machine_type",
     "tpu: v5p"),
])
def test_stack_rates_are_checked(spec: dict[str, Any], rate: dict[str, Any], where: str,
                                 words: str) -> None:
    spec["prices"] = [rate]
    p = at(spec, where)
    assert words in p.message + p.hint, p.render()


def test_a_duplicate_stack_rate_is_refused(spec: dict[str, Any]) -> None:
    spec["prices"] = [{"machine_type": "a3-highgpu-8g", "usd_per_hour": 50},
                      {"machine_type": "a3-highgpu-8g", "usd_per_hour": 40}]
    p = at(spec, "prices[1]")
    assert "prices[0]" in p.message


def test_an_unknown_capacity_kind_is_refused(spec: dict[str, Any]) -> None:
    spec["prices"] = [{"machine_type": "a3-highgpu-8g", "usd_per_hour": 5,
                       "capacity": "preemptible"}]
    assert any(p.where.startswith("prices[0].capacity") for p in problems(spec))


# -- autoscaling: budgets check the most a pool can cost -----------------------------------------
def test_autoscaling_to_1000_nodes_fails_a_1000_dollar_budget(spec: dict[str, Any]) -> None:
    budgeted(spec, 1000)
    spec["pools"] = [pool(name="burst", nodes=None,
                          autoscaling={"min_nodes": 0, "max_nodes": 1000})]
    p = at(spec, "teams 'research'.monthly_budget_usd")
    assert "over its budget of $1,000" in p.message and "burst" in p.message
    assert "max_nodes" in p.hint


def test_autoscaling_pool_cost_is_a_range(spec: dict[str, Any], cat: Catalog) -> None:
    spec["pools"] = [pool(name="burst", nodes=None, autoscaling={"min_nodes": 1,
                                                                 "max_nodes": 10})]
    burst = validate_fleet(spec).pools[0]
    hourly = cat.hourly_usd(burst.shape)
    assert hourly is not None and burst.cost is not None
    assert burst.cost.min_monthly_usd == pytest.approx(hourly * HOURS_PER_MONTH)
    assert burst.cost.max_monthly_usd == pytest.approx(hourly * 10 * HOURS_PER_MONTH)
    summary = burst.summary()
    assert summary["min_monthly_usd"] < summary["max_monthly_usd"]


def test_multislice_autoscaling_counts_every_slice(spec: dict[str, Any]) -> None:
    spec["pools"] = [pool(name="ms", accelerator="v5p-128", nodes=None, multislice=2,
                          autoscaling={"min_nodes": 0, "max_nodes": 16})]
    ms = validate_fleet(spec).pools[0]
    assert ms.cost is not None and (ms.cost.min_nodes, ms.cost.max_nodes) == (0, 32)
    assert ms.cost.max_monthly_usd == pytest.approx(2 * 64 * 4.20 * HOURS_PER_MONTH)


def test_team_totals_are_ranges(spec: dict[str, Any]) -> None:
    spec["pools"] = [pool(name="fixed", nodes=1),
                     pool(name="burst", nodes=None, autoscaling={"min_nodes": 0,
                                                                 "max_nodes": 3})]
    team = validate_fleet(spec).team_cost("research")
    assert team.min_monthly_usd == pytest.approx(88.49 * HOURS_PER_MONTH)
    assert team.max_monthly_usd == pytest.approx(4 * 88.49 * HOURS_PER_MONTH)
    assert team.summary()["max_monthly_usd"] == round(team.max_monthly_usd, 2)
