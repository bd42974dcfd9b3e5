"""Pools past their `expires` date (request metadata, `fleet.spec.fields.Pool`): `fleet validate`
warns about each, and `accelfleet pool expired` lists them with what they cost, for the platform
team to reclaim. A pool's `expires` is the last day it is needed: it has expired the day after."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from fleet import words as W
from fleet.errors import Problem, Where
from fleet.model import ResolvedPool


def is_expired(pool: ResolvedPool, today: date) -> bool:
    return pool.spec.expires is not None and pool.spec.expires < today


def expired_pools(pools: Sequence[ResolvedPool], today: date) -> list[ResolvedPool]:
    """The pools whose `expires` date has passed, the longest expired first."""
    return sorted((p for p in pools if is_expired(p, today)),
                  key=lambda p: (p.spec.expires or today, p.name))


def days_expired(pool: ResolvedPool, today: date) -> int:
    return (today - pool.spec.expires).days if pool.spec.expires else 0


def cost_words(pool: ResolvedPool) -> str:
    """`about $12,345 a month`, or that its cost is unknown (never $0)."""
    usd = pool.monthly_usd
    return "an unknown amount a month (no price)" if usd is None else f"about {W.usd(usd)} a month"


def expiry_warnings(pools: Sequence[ResolvedPool], today: date) -> list[Problem]:
    """One warning per expired pool: when it expired, what it still costs, what to do."""
    out = []
    for p in expired_pools(pools, today):
        days = days_expired(p, today)
        out.append(Problem(
            Where("pools", name=p.name, field="expires"),
            f"expired on {p.spec.expires} ({days} day{'s' if days != 1 else ''} ago) and still "
            f"costs {cost_words(p)}" + (f"; requested by {p.spec.requested_by}"
                                         if p.spec.requested_by else ""),
            f"remove it (`accelfleet pool remove {p.name}`), or move `expires` later if it is "
            "still needed"))
    return out
