"""The controller's OpenMetrics (`/metrics` on the metrics port):

    accelfleet_gate_up{cluster} 1                              the controller answers
    accelfleet_gate_leader{cluster}                            1 on the replica that acts
    accelfleet_gate_nodes{cluster, pool, team, state}          nodes by gate state
    accelfleet_gate_proofs_total{cluster, pool, verdict}       proofs judged: pass, fail, infra
    accelfleet_gate_ready_to_proven_seconds{cluster, pool}     histogram: node Ready -> proven
        (a node's first proof, or a fresh one after a failure, release or reboot)
    accelfleet_gate_reproof_seconds{cluster, pool}             histogram: a proven node's
        scheduled re-proof, from its claim to its pass (its Ready was long before)
    accelfleet_gate_oldest_unproven_seconds{cluster, pool}     how long the pool's oldest
        unproven (or proving) node has waited, from its own timestamps (smoke.gate._hours.since):
        past the autoscaler's 15-minute window it counts as unready (docs/gate.md "Alerts")
    accelfleet_gate_exporter_unread_nodes{cluster, pool}       proven GPU nodes where the gate
        finds no DCGM exporter pod to read between proofs (smoke.gate._exporter)
    accelfleet_gate_unproven_node_hours_total{cluster, pool, team}     gated, not yet proven
    accelfleet_gate_quarantined_node_hours_total{cluster, pool, team}
    accelfleet_gate_unproven_cost_usd_total{...}, accelfleet_gate_quarantined_cost_usd_total
        the node-hours at the node's public list price (fleet.catalog.list_rate: on-demand;
        a pool without a list price has no cost sample)

Node-hours are counted by the leader from the nodes' own timestamps (creationTimestamp, the
gate condition's and the Ready condition's transitions: `smoke.gate._hours`) through a
watermark kept on the controller's Lease with the totals
(`fleet.labels.GATE_NODE_HOURS_ANNOTATION`, written with each renewal, every third of the
lease): a restarted controller, or the standby that takes over, continues from there, and the
time no controller ran counts too (its nodes stayed unproven). The standby exports the
leader's totals as last read. A controller run without leader election (`elect=False`) keeps
them in memory only. A controller that is down exports nothing: alert on
`absent(accelfleet_gate_up)` or `gate status` (fail closed: its nodes stay gated); the alert
rules in docs/gate.md ("Alerts") are checked against this module's output
(tests/smoke/test_gate_alerts.py).

What a hostile or broken API server made it skip or survive (issue 35; `_guard`, `_watch`,
`_cap`):

    accelfleet_gate_malformed_objects_total{cluster, kind}     node, pod, lease objects
        skipped because they do not read as the API defines them (a Warning Event each node)
    accelfleet_gate_loop_errors_total{cluster}                 loop steps an API error cut
        short (tried again on the next loop)
    accelfleet_gate_watch_restarts_total{cluster, reason}      the node watch restarted:
        expired (410: listed again), oversized (a line past the bound: dropped, listed
        again), error; each after client-go's reflector backoff
    accelfleet_gate_node_lists_total{cluster}                  full node lists
    accelfleet_gate_quarantine_breaker_open{cluster, pool}     1 while more than half of the
        pool's recent proofs failed: quarantine stops (`_cap`); alert on it
    accelfleet_gate_quarantines_held_total{cluster, pool, why} failed nodes not quarantined:
        cap (the pool's max_quarantine) or breaker
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

from smoke.reports.metrics import labels as label_set

if TYPE_CHECKING:
    from fleet.inventory import InventoryPool
    from smoke.gate.controller import Gate

PREFIX = "accelfleet_gate_"
BUCKETS_S = (30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0)


@cache
def _hourly(cloud: str, machine: str, accelerator: str, kind: str, chips: int) -> float | None:
    from fleet.catalog import load_catalog
    from fleet.catalog.list_rate import list_usd

    cat = load_catalog()
    if kind == "tpu":
        price = cat.prices.get(("gcp", accelerator))
        usd, _ = list_usd(price, "on-demand")
        return None if usd is None else usd * chips
    usd, _ = list_usd(cat.prices.get((cloud, machine)), "on-demand")  # type: ignore[arg-type]
    return usd


def node_hourly_usd(pool: InventoryPool) -> float | None:
    """One node's public on-demand list price per hour (a TPU host: its chips' price)."""
    return _hourly(pool.cloud, pool.machine_type, pool.accelerator, pool.kind,
                   pool.devices_per_node)


def render(gates: Sequence[Gate]) -> str:
    lines = [f"# TYPE {PREFIX}up gauge", f"# HELP {PREFIX}up The gate controller answers."]
    lines += [f"{PREFIX}up{label_set(cluster=g.cluster)} 1" for g in gates]
    lines += [f"# TYPE {PREFIX}leader gauge",
              f"# HELP {PREFIX}leader 1 on the replica that holds the Lease and acts."]
    lines += [f"{PREFIX}leader{label_set(cluster=g.cluster)} {int(g.is_leader())}"
              for g in gates]
    lines += [f"# TYPE {PREFIX}nodes gauge",
              f"# HELP {PREFIX}nodes Nodes of gated pools by gate state."]
    for g in gates:
        for (pool, team, state), count in sorted(g.state_counts().items()):
            labels = label_set(cluster=g.cluster, pool=pool, team=team, state=state)
            lines.append(f"{PREFIX}nodes{labels} {count}")
    lines += [f"# TYPE {PREFIX}proofs counter",
              f"# HELP {PREFIX}proofs Proofs judged, by verdict (infra: retried)."]
    for g in gates:
        for (pool, verdict), count in sorted(g.verdict_counts.items()):
            labels = label_set(cluster=g.cluster, pool=pool, verdict=verdict)
            lines.append(f"{PREFIX}proofs_total{labels} {count}")
    lines += _histogram("ready_to_proven_seconds", "From a node's Ready to its pass (a first "
                        "or fresh proof).", [(g.cluster, g.ready_to_proven) for g in gates])
    lines += _histogram("reproof_seconds", "A proven node's scheduled re-proof, from its "
                        "claim to its pass.",
                        [(g.cluster, g.reproof_seconds) for g in gates])
    lines += [f"# TYPE {PREFIX}oldest_unproven_seconds gauge",
              f"# HELP {PREFIX}oldest_unproven_seconds How long the pool's oldest unproven "
              "node has waited for its proof."]
    for g in gates:
        for pool, age_s in sorted(oldest_unproven_s(g).items()):
            lines.append(f"{PREFIX}oldest_unproven_seconds"
                         f"{label_set(cluster=g.cluster, pool=pool)} {age_s:.1f}")
    lines += [f"# TYPE {PREFIX}exporter_unread_nodes gauge",
              f"# HELP {PREFIX}exporter_unread_nodes Proven GPU nodes with no DCGM exporter "
              "pod: their passive signals are not read."]
    for g in gates:
        with g.exporters.lock:
            unread = list(g.exporters.unread.values())
        for pool in sorted(set(unread)):
            lines.append(f"{PREFIX}exporter_unread_nodes"
                         f"{label_set(cluster=g.cluster, pool=pool)} {unread.count(pool)}")
    for what in ("unproven", "quarantined"):
        lines += [f"# TYPE {PREFIX}{what}_node_hours counter",
                  f"# HELP {PREFIX}{what}_node_hours Node-hours {what}, kept across "
                  "restarts on the controller's Lease.",
                  f"# TYPE {PREFIX}{what}_cost_usd counter",
                  f"# HELP {PREFIX}{what}_cost_usd Those node-hours at list price, USD."]
        for g in gates:
            for (pool, team, kind), hours in sorted(g.node_hours.items()):
                if kind != what:
                    continue
                labels = label_set(cluster=g.cluster, pool=pool, team=team)
                lines.append(f"{PREFIX}{what}_node_hours_total{labels} {hours:.6f}")
                info = g.pools.get(pool)
                rate = node_hourly_usd(info) if info is not None else None
                if rate is not None:
                    lines.append(f"{PREFIX}{what}_cost_usd_total{labels} {hours * rate:.4f}")
    lines += _guard_lines(gates)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def oldest_unproven_s(gate: Gate) -> dict[str, float]:
    """Per gated pool with an unproven or proving node: the longest such a node has waited
    (now less the time it entered that state, smoke.gate._hours.since)."""
    from datetime import UTC, datetime

    from smoke.gate._hours import since, state_of

    if gate.watch is None:
        return {}
    now = datetime.now(UTC)
    out: dict[str, float] = {}
    for n in gate._nodes():
        if n.pool not in gate.pools or state_of(n) not in ("unproven", "proving"):
            continue
        start = since(n)
        if start is not None:
            out[n.pool] = max(out.get(n.pool, 0.0), max(0.0, (now - start).total_seconds()))
    return out


def _histogram(name: str, help_text: str,
               series: Sequence[tuple[str, Mapping[str, list[float]]]]) -> list[str]:
    """One OpenMetrics histogram over BUCKETS_S: per (cluster, pool), cumulative buckets,
    +Inf, sum and count."""
    lines = [f"# TYPE {PREFIX}{name} histogram", f"# HELP {PREFIX}{name} {help_text}"]
    for cluster, by_pool in series:
        for pool, values in sorted(by_pool.items()):
            for le in BUCKETS_S:
                n = sum(1 for v in values if v <= le)
                labels = label_set(cluster=cluster, pool=pool, le=format(le, "g"))
                lines.append(f"{PREFIX}{name}_bucket{labels} {n}")
            lines.append(f"{PREFIX}{name}_bucket"
                         f"{label_set(cluster=cluster, pool=pool, le='+Inf')} {len(values)}")
            lines.append(f"{PREFIX}{name}_sum"
                         f"{label_set(cluster=cluster, pool=pool)} {sum(values):.3f}")
            lines.append(f"{PREFIX}{name}_count"
                         f"{label_set(cluster=cluster, pool=pool)} {len(values)}")
    return lines


def _guard_lines(gates: Sequence[Gate]) -> list[str]:
    lines = [f"# TYPE {PREFIX}malformed_objects counter",
             f"# HELP {PREFIX}malformed_objects API objects skipped: not as the API defines "
             "them."]
    for g in gates:
        with g.guard.lock:
            counts = dict(g.guard.malformed)
        if g.elector is not None and g.elector.malformed:
            counts["lease"] = counts.get("lease", 0) + g.elector.malformed
        for kind, count in sorted(counts.items()):
            lines.append(f"{PREFIX}malformed_objects_total"
                         f"{label_set(cluster=g.cluster, kind=kind)} {count}")
    lines += [f"# TYPE {PREFIX}loop_errors counter",
              f"# HELP {PREFIX}loop_errors Loop steps an API error cut short (retried)."]
    lines += [f"{PREFIX}loop_errors_total{label_set(cluster=g.cluster)} {g.guard.loop_errors}"
              for g in gates]
    lines += [f"# TYPE {PREFIX}watch_restarts counter",
              f"# HELP {PREFIX}watch_restarts Node watch restarts, after a backoff."]
    watches = [(g.cluster, g.watch) for g in gates if g.watch is not None]
    for cluster, w in watches:
        for reason, count in (("expired", w.expired), ("oversized", w.oversized),
                              ("error", w.errors)):
            lines.append(f"{PREFIX}watch_restarts_total"
                         f"{label_set(cluster=cluster, reason=reason)} {count}")
    lines += [f"# TYPE {PREFIX}node_lists counter",
              f"# HELP {PREFIX}node_lists Full node lists (the first, then one per restart "
              "that lost the watch's place)."]
    lines += [f"{PREFIX}node_lists_total{label_set(cluster=cluster)} {w.lists}"
              for cluster, w in watches]
    lines += [f"# TYPE {PREFIX}quarantine_breaker_open gauge",
              f"# HELP {PREFIX}quarantine_breaker_open 1 while quarantine of the pool is "
              "stopped: most of its recent proofs failed."]
    for g in gates:
        for pool, is_open in g.caps.open_pools().items():
            lines.append(f"{PREFIX}quarantine_breaker_open"
                         f"{label_set(cluster=g.cluster, pool=pool)} {int(is_open)}")
    lines += [f"# TYPE {PREFIX}quarantines_held counter",
              f"# HELP {PREFIX}quarantines_held Failed nodes not quarantined (cap, breaker)."]
    for g in gates:
        for (pool, why), count in sorted(g.caps.held.items()):
            lines.append(f"{PREFIX}quarantines_held_total"
                         f"{label_set(cluster=g.cluster, pool=pool, why=why)} {count}")
    return lines
