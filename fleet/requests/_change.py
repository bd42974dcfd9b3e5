"""What a pool request is and what a change does (fleet.requests.request re-exports these):
the request (PoolRequest), the change it becomes (Change: the fleet before and after, the
entry or updates written, its summary), `--until` read as a date, and the check every change
goes through: the whole resulting fleet validated as `fleet validate` validates a stack."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Literal

from fleet.catalog import Catalog
from fleet.errors import InputError, Problem, RequestRefused, SpecError, UnknownNameError
from fleet.model import Fleet, ResolvedPool
from fleet.requests.options import pool_usd
from fleet.rules.validate import validate_fleet

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
