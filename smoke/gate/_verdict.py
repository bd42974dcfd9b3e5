"""One proof's run and its verdict on the nodes, for the gate controller (controller.py):
`prove_unit` runs a unit's proof and `apply` writes each node's verdict (pass: taint lifted,
proven, condition, Event; fail: held per the pool's `on_fail`, quarantined within the cap;
otherwise held by the guard), on the leader only."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from smoke.gate import _kube as K
from smoke.gate import lifecycle as L
from smoke.gate import nodes as N
from smoke.gate._model import NodeResult
from smoke.gate._proof import FAIL, INFRA, PASS, Outcome, Unit

if TYPE_CHECKING:
    from fleet.inventory import InventoryPool
    from smoke.gate.controller import Gate

CROSS_NODE_TIER = 3  # the agent's first tier across nodes (smoke.cluster.workload --cross-node)

def prove_unit(self: Gate, unit: Unit, pool: InventoryPool) -> None:
    from smoke.gate._proof import proof_namespace, prove, render

    _, run_id, cancel = self.inflight[unit.nodes[0]]
    o = self.options
    started = time.monotonic()
    self.summary.proofs += 1
    try:
        assert pool.gate is not None
        tier = unit_tier(self, pool, unit)
        rendered = render(self.inventory, pool, unit, run_id=run_id,
                          namespace=o.namespace, tier=tier, timeout_s=o.timeout_s,
                          images=dict(o.images), pull_secrets=o.image_pull_secrets)
        outcome = prove(self.client, self.cluster, rendered, unit,
                        stack=self.inventory.stack, timeout_s=o.timeout_s, stop=cancel,
                        poll_s=o.poll_s)
    except Exception as exc:
        K.delete_run(self.core, self.batch, self.custom,
                     proof_namespace(pool, unit, o.namespace), run_id)
        why = f"the proof failed to run: {type(exc).__name__}: {str(exc)[:300]}"
        outcome = Outcome(None, dict.fromkeys(unit.nodes, INFRA),
                          dict.fromkeys(unit.nodes, why))
    proof_s = time.monotonic() - started
    try:
        if self.is_leader():
            try:
                apply(self, unit, pool, run_id, outcome, proof_s)
            except Exception as exc:  # an API error, a node turned malformed: no claim
                # outlives it, and the operator sees why the verdict was not written
                self._problem(K.refused(exc, f"writing proof {run_id}'s verdict") or "")
                self.guard.apply_failed(unit, pool, run_id, exc)
        else:  # the lease was lost mid-proof (a hang, a stopped process): the verdict is
            # not written; the leader adopts the node (`_adopt`) and proves it afresh
            for name in unit.nodes:
                self.summary.results[name] = NodeResult(
                    name, pool.name, INFRA, "this replica lost the lease during the "
                    "proof; the leader proves the node afresh", run_id)
    finally:
        with self.lock:
            for name in unit.nodes:
                self.inflight.pop(name, None)
                self.claimed.pop(name, None)
        with self.wake:
            self.wake.notify_all()

def apply(self: Gate, unit: Unit, pool: InventoryPool, run_id: str, outcome: Outcome,
           proof_s: float) -> None:
    o = self.options
    failed = []
    for name in unit.nodes:
        verdict, reason = outcome.verdicts[name], outcome.reasons[name]
        node = K.read_node(self.core, name)
        if node is None:
            self.summary.results[name] = NodeResult(name, pool.name, "gone",
                                                    "deleted mid-proof", run_id)
            continue
        now_gate = N.GateNode.of(node)
        if verdict == PASS:
            proof: dict[str, Any] = {
                     "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "tiers": f"0-{unit_tier(self, pool, unit)}" + (
                         "+fabric" if len(unit.hosts) > 1 and pool.gate is not None
                         and pool.gate.fabric else ""),
                     "version": _version(), "run": run_id, "verdict": "pass",
                     "peers": list(unit.peers), **self.claimed.get(name, {})}
            if K.patch_node(self.core, name, _passing(proof)) is None:
                _replaced(self, unit, name, node, run_id, pool)
                continue
            K.set_condition(self.core, name, N.condition(True, "ProofPassed",
                                                         f"proof {run_id} passed"))
            self._event(node, "GateProofPassed", f"accelfleet gate: proof "
                         f"{run_id} passed (tiers {proof['tiers']}); the gate taint is "
                         "lifted", warning=False)
            since = now_gate.ready_since
            to_proven = None if since is None or unit.reproof else max(
                0.0, (datetime.now(UTC) - since).total_seconds())
            self.backoff.pop(name, None)
            if unit.reproof:  # a proven node proven again: its proof's own time, apart
                # (its Ready was long before: never a Ready-to-proven figure)
                self.reproof_seconds.setdefault(pool.name, []).append(proof_s)
            elif to_proven is not None:
                self.ready_to_proven.setdefault(pool.name, []).append(to_proven)
            self.summary.results[name] = NodeResult(
                name, pool.name, PASS, reason, run_id, to_proven, proof_s,
                _probe_s(outcome, name), time.time())
        elif verdict == FAIL:
            held = self._enforced(pool.name)
            on_fail = pool.gate.on_fail if pool.gate is not None else "keep"
            K.patch_node(self.core, name, partial(L.failed_patch, on_fail=on_fail)
                         if held else L.shadow_failed_patch)
            K.set_condition(self.core, name, N.condition(False, "ProofFailed",
                                                         f"proof {run_id}: {reason}"))
            self._event(node, "GateProofFailed", f"accelfleet gate: proof "
                        f"{run_id} failed; " + (
                            f"the node is held (cordoned, on_fail: {on_fail}): {reason}"
                            if held else f"shadow mode, nothing is held: {reason}"),
                        warning=True)
            failed.append(name)
            self.summary.results[name] = NodeResult(name, pool.name, FAIL, reason, run_id,
                                                    None, proof_s, _probe_s(outcome, name))
        else:  # no verdict of its own: an infrastructure error, or its unit failed
            self.guard.held(unit, pool, name, node, verdict, reason, run_id)
    mine = [r for r in map(self.summary.results.get, unit.nodes)
            if r is not None and r.run_id == run_id]
    for r in mine:
        key = (pool.name, r.verdict)
        self.verdict_counts[key] = self.verdict_counts.get(key, 0) + 1
    self.caps.judged(pool.name, [r.verdict for r in mine])
    report = outcome.report
    if report is not None and not report.cancelled:
        if failed and self._enforced(pool.name):  # shadow mode quarantines nothing
            _quarantine(self, report, pool, failed)
        if o.record_history:
            _record(self, report)

def _replaced(self: Gate, unit: Unit, name: str, node: dict[str, Any], run_id: str,
              pool: InventoryPool) -> None:
    """A pass that belongs to no node now: the node of that name is another Node object
    (deleted and registered again) or rebooted during the proof. Nothing is lifted; a
    rebooted node still claimed by this run is given back (it is proven afresh); another
    Node object is not this proof's to touch."""
    def release(n: dict[str, Any]) -> dict[str, Any] | None:
        return self._release(unit)(n) if N.GateNode.of(n).run == run_id else None

    K.patch_node(self.core, name, release)
    now = N.GateNode.of(node)
    why = (f"the node changed during proof {run_id} (now uid {now.uid or '?'}, boot ID "
           f"{now.boot_id or '?'}: registered again or rebooted); its pass is not "
           "carried over, it is proven afresh")
    self._event(node, "GateProofVoided", f"accelfleet gate: {why}",
                 warning=True)
    self.summary.results[name] = NodeResult(name, pool.name, INFRA, why, run_id)

def unit_tier(self: Gate, pool: InventoryPool, unit: Unit) -> int:
    """The tier a proof runs: the pool's per-node tiers, and on a fabric pool's unit of
    several hosts the cross-node tier too (the fabric check: `gate.max_tier` stops at the
    per-node tiers, fleet.spec.fields GATE_TOP_TIER)."""
    tier = pool_tier(self, pool)
    if pool.gate is not None and pool.gate.fabric and len(unit.hosts) > 1 \
            and not unit.independent:
        return max(tier, CROSS_NODE_TIER)
    return tier

def pool_tier(self: Gate, pool: InventoryPool) -> int:
    assert pool.gate is not None
    return pool.gate.max_tier if self.options.tier is None else self.options.tier

def _quarantine(self: Gate, report: Any, pool: InventoryPool, failed: list[str]) -> None:
    from smoke.gate._cap import quarantine_failed

    quarantine_failed(self, report, pool, failed)

def _record(self: Gate, report: Any) -> None:
    from smoke.history import default_path, record

    try:
        record(report, self.options.history or default_path(), kind="gate")
    except Exception as exc:  # said once (the same words each proof), never once per proof
        self._problem(f"history: {type(exc).__name__}: {str(exc)[:300]}")


def _probe_s(outcome: Outcome, node: str) -> float | None:
    """The agent's own run time on `node` (its pod's start to finish), from the report."""
    for pool in outcome.report.pools if outcome.report is not None else ():
        for o in pool.nodes:
            if o.node == node and o.timing and o.timing.get("run_s") is not None:
                return float(o.timing["run_s"])
    return None


def _passing(proof: dict[str, Any]) -> Any:
    def change(node: dict[str, Any]) -> dict[str, Any] | None:
        return N.proven_patch(N.GateNode.of(node), proof)

    return change


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("accelfleet")
    except PackageNotFoundError:
        return "unknown"


