"""The one list-price policy: which published figure of prices.yaml a kind of capacity costs.
`fleet.pricing` (what `fleet validate` costs a pool at), `Catalog.hourly_usd` (what `advise` and
`catalog list` show) both read it, so that no command prices the same pool differently.

A spot pool costs the published spot price; where none is published it has no list price (never
the on-demand price passed off as a spot price: declare the rate under the stack's `prices:`).
Every other kind (on-demand, reservations, flex-start, queued) costs the on-demand price."""

from __future__ import annotations

from fleet.catalog.records import Price


def list_usd(price: Price | None, kind: str) -> tuple[float | None, str]:
    """The published figure for `kind` of capacity, in the price's unit (machine-hour or
    chip-hour), and what it is; (None, why) where the catalog publishes none."""
    if price is None:
        return None, "no entry in prices.yaml"
    if kind == "spot":
        if price.spot_usd is None:
            return None, f"no spot list price: {price.note}"
        return price.spot_usd, "spot"
    if price.on_demand_usd is None:
        return None, f"no {kind} list price: {price.note}"
    return price.on_demand_usd, ("on-demand" if kind == "on-demand"
                                 else f"on-demand ({kind} billed at on-demand)")
