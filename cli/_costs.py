"""Costs in words, shared by `fleet validate` and `plan`: a pool's or a team's monthly range
(fewest to most nodes: budgets check the most) and where its price comes from. A pool with no
price says "unpriced", never $0."""

from __future__ import annotations

from typing import Any

from fleet.words import UNPRICED as UNPRICED
from fleet.words import amount_span as usd_range
from fleet.words import rate_usd, usd, usd_span


def pool_usd(row: dict[str, Any]) -> str:
    """A pool summary's monthly cost cell."""
    return usd_range(row.get("min_monthly_usd"), row.get("max_monthly_usd"))


def price_source(row: dict[str, Any], region: str | None = None, *,
                 provenance: bool = False) -> str:
    """Where a pool summary's rate comes from: list, stack rate, capacity block; "-" if none.
    With `provenance`, a rate read in another region than the pool's (`region`) names that
    region, and a dated rate its month: `list (us-east-1, 2026-06)`, `list (2024-11)`."""
    price = row.get("price") or {}
    source = price.get("source") or UNPRICED
    if source == UNPRICED:
        return "-"
    if not provenance:
        return str(source)
    where, when = price.get("region"), str(price.get("as_of") or "")[:7]
    bits = [*([str(where)] if where and where != region else []), *([when] if when else [])]
    return f"{source} ({', '.join(bits)})" if bits else str(source)


def foreign_price(row: dict[str, Any], region: str | None) -> str:
    """`us-east-1, 2026-11` when a pool summary's rate was read in another region than the
    pool's own (`region`), else empty: a price that may not be the pool's."""
    price = row.get("price") or {}
    where = price.get("region")
    if not where or not region or where == region or price.get("source") in (None, UNPRICED):
        return ""
    when = str(price.get("as_of") or "")[:7]
    return f"{where}, {when}" if when else str(where)


def team_words(team: dict[str, Any]) -> str:
    """`~$1,234..$5,678/month, budget $9,000; unpriced: a, b` for a team summary (the cost
    an estimate, the budget exact)."""
    text = f"{usd_span(team['min_monthly_usd'], team['max_monthly_usd'], estimate=True)}/month"
    if team.get("monthly_budget_usd") is not None:
        text += f", budget {usd(team['monthly_budget_usd'])}"
    if team.get("unpriced"):
        text += f"; unpriced: {', '.join(team['unpriced'])} (no price: not counted)"
    return text


def control_plane_words(plane: dict[str, Any]) -> str:
    """`control plane eks: EKS 1.35, standard support until 2027-03-27, $0.10/hour, ~$73/month
    (platform)` for a control-plane summary."""
    return (f"control plane {plane['cluster']}: EKS {plane['kubernetes_version']}, "
            f"{plane['support']} support until {plane['support_ends']}, "
            f"{rate_usd(plane['usd_per_hour'])}/hour, "
            f"{usd_span(plane['monthly_usd'], plane['monthly_usd'], estimate=True)}/month "
            "(platform)")


def platform_pays(system_pools: bool, control_planes: bool) -> str:
    """What the platform team's cost covers, in words."""
    parts = [*(["the system pools"] if system_pools else []),
             *(["the EKS control planes"] if control_planes else [])]
    return " and ".join(parts) or "nothing yet"
