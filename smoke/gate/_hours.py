"""The gate's node-hours totals (docs/gate.md, "Metrics"): unproven and quarantined
node-hours per pool and team, counted by the leader each round and carried on its Lease
(annotation `accelfleet.io/gate-node-hours`), so a restarted controller, or the standby that
takes over, continues them, never below what the Lease carries.

    H.count(gate.node_hours, gate.state_counts(), dt_s)    # the leader, each round
    H.take_up(gate.node_hours, gate.elector)               # on winning the Lease; a standby
    annotations = H.record(gate.node_hours, gate.elector)  # with each renewal

(Moved out of `smoke.gate.controller`, unchanged.)
"""

from __future__ import annotations

import json
from typing import Any

Totals = dict[tuple[str, str, str], float]  # (pool, team, kind) -> hours


def count(node_hours: Totals, counts: dict[tuple[str, str, str], int], dt_s: float) -> None:
    """Add `dt_s` to the totals of every (pool, team, state) count: unproven and proving
    nodes as unproven, failed and quarantined nodes as quarantined."""
    for (pool, team, state), n in counts.items():
        kind = {"unproven": "unproven", "proving": "unproven", "failed": "quarantined",
                "quarantined": "quarantined"}.get(state)
        if kind is not None:
            key = (pool, team, kind)
            node_hours[key] = node_hours.get(key, 0.0) + n * dt_s / 3600


def stored(elector: Any) -> Totals:
    """The node-hours totals the Lease carries (what its holder last wrote)."""
    from fleet.labels import GATE_NODE_HOURS_ANNOTATION

    text = elector.stored.get(GATE_NODE_HOURS_ANNOTATION) if elector else None
    try:
        rows = json.loads(text) if text else []
    except ValueError:
        return {}
    out: Totals = {}
    for r in rows if isinstance(rows, list) else []:
        try:
            key = (str(r["pool"]), str(r["team"]), str(r["kind"]))
            out[key] = max(out.get(key, 0.0), float(r["hours"]))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def take_up(node_hours: Totals, elector: Any) -> None:
    """Take up the totals the Lease carries where they are ahead of ours: node-hours never
    drop when the controller restarts or another replica takes over."""
    for key, hours in stored(elector).items():
        if hours > node_hours.get(key, 0.0):
            node_hours[key] = hours


def record(node_hours: Totals, elector: Any) -> dict[str, str]:
    """The Lease annotation the holder writes with each renewal: its totals, never less than
    those already on the Lease."""
    from fleet.labels import GATE_NODE_HOURS_ANNOTATION

    totals = dict(stored(elector))
    for key, hours in list(node_hours.items()):
        totals[key] = max(totals.get(key, 0.0), hours)
    rows = [{"pool": p, "team": t, "kind": k, "hours": round(h, 6)}
            for (p, t, k), h in sorted(totals.items())]
    return {GATE_NODE_HOURS_ANNOTATION: json.dumps(rows, separators=(",", ":"))}
