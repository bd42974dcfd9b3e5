"""The gate's node-hours totals (docs/gate.md, "Metrics"): unproven and quarantined
node-hours per pool and team, counted by the leader from the nodes' own timestamps and carried
on its Lease (annotations `accelfleet.io/gate-node-hours`, the totals, and
`accelfleet.io/gate-node-hours-at`, the time they are counted through), so a restarted
controller, or the standby that takes over, continues them, never below what the Lease
carries.

    H.tick(gate)                                           # the leader, each round
    H.take_up(gate.node_hours, gate.elector)               # on winning the Lease; a standby
    annotations = H.record(gate.node_hours, gate.elector, gate.hours_at)  # each renewal

Counted from the nodes, not from the controller's loop (issue 35: node-hours stopped counting
while the controller was down). The totals are counted through a wall-clock watermark
(`gate.hours_at`, written on the Lease beside them). Each round adds, for every node of
a gated pool in a counted state, the time from the later of the watermark and the moment the
node entered that state (`since`) to now. A leader that takes over continues from the
watermark on the Lease, so the time no controller ran counts too: every node still unproven
or quarantined then was so through the gap (nothing proves a node while no controller runs:
the gate fails closed). The first controller of a cluster (no totals on the Lease) counts each
node from its `since`, hours before the gate was deployed included. What is not counted: a
node deleted while no controller ran (its hours in the gap), and with `elect=False` (no Lease)
the totals live in memory only.

When a node entered its state (`since`), from the Node object:
    unproven, proving     its creationTimestamp; for a node proven before (a fresh proof after
                          a reboot, `smoke release`, `gate close`), the later of its last
                          proof's time and its Ready condition's lastTransitionTime when that
                          is after the proof (the reboot)
    failed, quarantined   the gate condition's lastTransitionTime (it turned False with the
                          failed proof); its creationTimestamp when the condition has none
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from smoke.cluster.nodeapi import aware_time

if TYPE_CHECKING:
    from smoke.gate.controller import Gate
    from smoke.gate.nodes import GateNode

Totals = dict[tuple[str, str, str], float]  # (pool, team, kind) -> hours
KIND = {"unproven": "unproven", "proving": "unproven", "failed": "quarantined",
        "quarantined": "quarantined"}  # a node's gate state -> what its hours count as


def count(node_hours: Totals, counts: dict[tuple[str, str, str], int], dt_s: float) -> None:
    """Add `dt_s` to the totals of every (pool, team, state) count: unproven and proving
    nodes as unproven, failed and quarantined nodes as quarantined (a plain interval, no
    node timestamps: `count_nodes` is what the controller uses)."""
    for (pool, team, state), n in counts.items():
        kind = KIND.get(state)
        if kind is not None:
            key = (pool, team, kind)
            node_hours[key] = node_hours.get(key, 0.0) + n * dt_s / 3600


def state_of(n: GateNode) -> str:
    """The node's gate state as the metrics count it (quarantined: its own state)."""
    return "quarantined" if n.quarantined else n.state


def since(n: GateNode) -> datetime | None:
    """When the node entered its present counted state, from its own timestamps (the table in
    the module's docstring); None when the node says nothing usable."""
    state = state_of(n)
    if state in ("failed", "quarantined"):
        cond = n.condition or {}
        at = aware_time(cond.get("lastTransitionTime")) if cond.get("status") == "False" \
            else None
        return at or n.created
    if state not in ("unproven", "proving"):
        return None
    start = n.created
    proven_at = aware_time((n.proof or {}).get("at"))
    if proven_at is not None and (start is None or proven_at > start):
        start = proven_at
        if n.ready_since is not None and n.ready_since > proven_at:
            start = n.ready_since  # the reboot after the last proof
    return start


def count_nodes(node_hours: Totals, nodes: Iterable[GateNode], teams: Mapping[str, str],
                after: datetime | None, now: datetime) -> None:
    """Add each counted node's hours from the later of `after` (the watermark: totals are
    counted through it; None: from the start) and its `since` up to `now`. `teams`: the gated
    pools, each with its owner team (a node's own team label first)."""
    for n in nodes:
        if n.pool not in teams:
            continue
        kind = KIND.get(state_of(n))
        if kind is None:
            continue
        start = since(n)
        if after is not None and (start is None or start < after):
            start = after
        if start is None or start >= now:
            continue
        key = (n.pool, n.team or teams[n.pool], kind)
        node_hours[key] = node_hours.get(key, 0.0) + (now - start).total_seconds() / 3600


def tick(gate: Gate, now: datetime | None = None) -> None:
    """The leader's round: the totals counted up to `now` from the nodes' timestamps, from
    the watermark on (this leader's own, else the Lease's: the time no controller ran)."""
    now = now or datetime.now(UTC)
    after = getattr(gate, "hours_at", None)
    if after is None:  # this leader's first round: on from the Lease's totals and watermark
        take_up(gate.node_hours, gate.elector)  # first, or the gap would be maxed away
        after = stored_at(gate.elector)
        if after is None and stored(gate.elector):
            after = now  # totals written before the watermark: the gap is not known
    if after is not None and after > now:
        after = now  # a watermark ahead of this clock (skew) counts nothing, never negative
    teams = {name: pool.team for name, pool in gate.pools.items()}
    count_nodes(gate.node_hours, gate._nodes(), teams, after, now)
    gate.hours_at = now


def stored_at(elector: Any) -> datetime | None:
    """The watermark the Lease's totals are counted through (None: none recorded)."""
    from fleet.labels import GATE_NODE_HOURS_AT_ANNOTATION

    return aware_time(elector.stored.get(GATE_NODE_HOURS_AT_ANNOTATION)) if elector else None


def stored(elector: Any) -> Totals:
    """The node-hours totals the Lease carries (what its holder last wrote)."""
    from fleet.labels import GATE_NODE_HOURS_ANNOTATION

    text = elector.stored.get(GATE_NODE_HOURS_ANNOTATION) if elector else None
    try:
        rows = json.loads(text) if text else []
    except (ValueError, RecursionError):
        return {}
    out: Totals = {}
    for r in rows if isinstance(rows, list) else []:
        try:
            key = (str(r["pool"]), str(r["team"]), str(r["kind"]))
            out[key] = max(out.get(key, 0.0), float(r["hours"]))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def standby(gate: Gate) -> None:
    """A standby's round: it exports the leader's totals as last read, and keeps no
    watermark of its own (on winning the Lease it counts on from the Lease's)."""
    take_up(gate.node_hours, gate.elector)
    gate.hours_at = None


def take_up(node_hours: Totals, elector: Any) -> None:
    """Take up the totals the Lease carries where they are ahead of ours: node-hours never
    drop when the controller restarts or another replica takes over."""
    for key, hours in stored(elector).items():
        if hours > node_hours.get(key, 0.0):
            node_hours[key] = hours


def record(node_hours: Totals, elector: Any, at: datetime | None = None) -> dict[str, str]:
    """The Lease annotations the holder writes with each renewal: its totals (a JSON list of
    pool, team, kind, hours), never less than those already on the Lease, and beside them the
    watermark `at` they are counted through (this holder's; the Lease's own when this holder
    has counted nothing yet)."""
    from fleet.labels import GATE_NODE_HOURS_ANNOTATION, GATE_NODE_HOURS_AT_ANNOTATION

    mark = at or stored_at(elector)  # read before the totals: never ahead of them
    totals = dict(stored(elector))
    for key, hours in list(node_hours.items()):
        totals[key] = max(totals.get(key, 0.0), hours)
    rows = [{"pool": p, "team": t, "kind": k, "hours": round(h, 6)}
            for (p, t, k), h in sorted(totals.items())]
    out = {GATE_NODE_HOURS_ANNOTATION: json.dumps(rows, separators=(",", ":"))}
    if mark is not None:
        out[GATE_NODE_HOURS_AT_ANNOTATION] = mark.astimezone(UTC).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ")
    return out
