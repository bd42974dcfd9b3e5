"""One spot-price policy for `fleet validate` and `advise` (issue 22): a spot pool costs the
catalog's published spot price (fleet/catalog/data/prices.yaml, each with its source and date),
or the stack's own spot rate; where neither exists it is unpriced, never the on-demand price
passed off as a spot price. Both commands read fleet.catalog.list_rate.list_usd."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fleet.advise.offers import place, pool_offers
from fleet.catalog import load_catalog
from fleet.rules.validate import validate_fleet
from tests.fleet.conftest import BASE, pool

cat = load_catalog()


def _pools(*pools: dict[str, Any], prices: list[dict[str, Any]] | None = None) -> Any:
    spec = copy.deepcopy(BASE)
    spec["pools"] = list(pools)
    if prices:
        spec["prices"] = prices
    return {p.name: p for p in validate_fleet(spec, source="test").pools}


def test_a_spot_pool_with_no_published_spot_price_is_unpriced_in_both() -> None:
    """prices.yaml lists g4dn.12xlarge's on-demand price (3.912, us-east-1) and no spot price
    (its SpotPrice differs per AZ). `advise` had no spot price for it while `fleet validate`
    costed the spot pool at the on-demand price."""
    price = cat.prices[("aws", "g4dn.12xlarge")]
    assert price.on_demand_usd and price.spot_usd is None
    t4 = _pools(pool(name="t4", cluster="eks", accelerator="g4dn.12xlarge", nodes=1,
                     zone="us-east-1a", capacity="spot"))["t4"]
    assert t4.cost is not None
    assert t4.cost.source == "unpriced" and t4.cost.usd_per_node_hour is None
    assert "no spot list price" in t4.cost.detail
    assert cat.hourly_usd(t4.shape, spot=True) is None  # what advise reads for a spot price
    placed = place(cat, pool_offers([t4])[0], 4)
    assert placed.usd_per_hour is None and placed.spot_usd_per_hour is None


def test_a_spot_pool_costs_the_same_in_advise_as_in_validate() -> None:
    """A spot pool at the stack's spot rate: advise's spot figure for it was the catalog's list
    spot price, not the rate `fleet validate` costs it at."""
    rate = [{"machine_type": "a3-highgpu-8g", "usd_per_hour": 20, "capacity": "spot"}]
    sp = _pools(pool(name="sp", nodes=2, capacity="spot"), prices=rate)["sp"]
    assert sp.cost is not None and sp.cost.usd_per_node_hour == pytest.approx(20)
    placed = place(cat, pool_offers([sp])[0], 16)
    assert placed.units == 2
    assert placed.usd_per_hour == pytest.approx(40)
    assert placed.spot_usd_per_hour == pytest.approx(40)


def test_a_published_spot_price_is_the_same_in_both() -> None:
    price = cat.prices[("gcp", "a3-highgpu-8g")]
    assert price.spot_usd is not None
    sp = _pools(pool(name="sp", nodes=1, capacity="spot"))["sp"]
    assert sp.cost is not None and sp.cost.usd_per_node_hour == pytest.approx(price.spot_usd)
    assert cat.hourly_usd(sp.shape, spot=True) == pytest.approx(price.spot_usd)
    placed = place(cat, pool_offers([sp])[0], 8)
    assert placed.usd_per_hour == placed.spot_usd_per_hour == pytest.approx(price.spot_usd)
