"""Rolling re-proof (docs/gate.md, "Re-proven"): which proven nodes are proven again this
round, never more of a pool at once than its `gate.max_unavailable`.

A proven node is due when its proof is older than the pool's `reprove_interval` and it runs
nothing but DaemonSet pods (a multi-host TPU slice: every host). Re-proofs already running on
the pool (this controller's, and any node left `proving` with a standing proof) count against
the budget: `max_unavailable` nodes (a count, or a share of the pool's nodes rounded down,
never less than one); a unit larger than the budget (a TPU slice) runs alone. The oldest
proofs go first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from smoke.gate import lifecycle as L
from smoke.gate import nodes as N
from smoke.gate._proof import Unit

if TYPE_CHECKING:
    from fleet.inventory import InventoryPool


def due_units(pools: Mapping[str, InventoryPool], by_pool: Mapping[str, list[N.GateNode]],
              *, reproving: Mapping[str, set[str]], not_before: Callable[[str], float],
              now: float, idle: Callable[[str], bool], skip: Iterable[str] = (),
              flagged: Callable[[N.GateNode], bool] = lambda n: False,
              ) -> list[tuple[Unit, InventoryPool]]:
    """The re-proof units to start now, per pool within its budget. `reproving`: pool ->
    the nodes this controller is re-proving; `not_before(node)`: its retry backoff; `idle`:
    whether a node runs nothing but DaemonSet pods; `skip`: pools not to re-prove (open);
    `flagged(node)`: the DCGM exporter asked for its re-proof (smoke.gate._exporter)."""
    out: list[tuple[Unit, InventoryPool]] = []
    skipped = set(skip)
    for name, pool in sorted(pools.items()):
        gate = pool.gate
        if gate is None or gate.reprove_interval_s is None or name in skipped:
            continue
        members = by_pool.get(name, [])
        busy = set(reproving.get(name, set())) | {
            n.name for n in members if n.state == N.PROVING and n.proof is not None}
        budget = L.reproof_budget(gate.max_unavailable, len(members))
        due = [n for n in members if n.state == N.PROVEN and n.ready
               and n.name not in busy and not n.quarantined
               and now >= not_before(n.name)
               and ((N.proof_age_s(n) or 0.0) > gate.reprove_interval_s
                    or n.signal is not None  # another agent's GPU condition (issue 37)
                    or flagged(n))]  # the DCGM exporter's counters (issue 37)
        due.sort(key=lambda n: (-(N.proof_age_s(n) or 0.0), n.name))
        taken = len(busy)
        if pool.kind == "tpu" and pool.hosts_per_slice > 1:
            slices: dict[str, list[N.GateNode]] = {}
            for n in due:
                slices.setdefault(n.slice, []).append(n)
            for sl, hosts in sorted(slices.items(), key=lambda kv: kv[0]):
                if len(hosts) != pool.hosts_per_slice:
                    continue
                if taken and taken + len(hosts) > budget:
                    break
                if all(idle(h.name) for h in hosts):
                    out.append((Unit(name, tuple(sorted(h.name for h in hosts)), slice=sl,
                                     reproof=True), pool))
                    taken += len(hosts)
            continue
        for n in due:
            if taken >= budget:
                break
            if idle(n.name):
                out.append((Unit(name, (n.name,), reproof=True), pool))
                taken += 1
    return out
