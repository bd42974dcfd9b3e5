"""What `gate run --once` waits for (`once_targets`, `once_done`), and a node's idleness asked of
the API server itself (`idle_now`), for the gate controller (controller.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from smoke.cluster.access import with_retries
from smoke.cluster.objects import pod_problem, valid
from smoke.gate import _kube as K
from smoke.gate import lifecycle as L
from smoke.gate import nodes as N
from smoke.gate._model import NodeResult
from smoke.gate._proof import FAIL, FINAL

if TYPE_CHECKING:
    from smoke.gate.controller import Gate


def once_targets(self: Gate) -> set[str]:
    """--once: every node of a gated pool waiting for a proof, and each failed one, which
    gets a fresh proof now (a quarantined one waits for `smoke release`)."""
    out = set()
    for n in self._nodes():
        pool = self.pools.get(n.pool)
        if pool is None or self.follower.is_open(n.pool):
            continue
        waiting = (N.UNPROVEN, N.PROVING, N.FAILED) + (
            (N.UNGATED,) if pool.gate is not None and pool.gate.shadow else ())
        if n.state not in waiting:
            continue
        out.add(n.name)
        if n.state == N.FAILED and n.quarantined:
            self.summary.results[n.name] = NodeResult(
                n.name, n.pool, FAIL, "failed an earlier proof and is quarantined ("
                + str((n.condition or {}).get("message", ""))[:300]
                + "); `accelfleet smoke release` sends it to a fresh proof")
        elif n.state == N.FAILED:
            K.patch_node(self.core, n.name, L.fresh_proof_patch)
            K.set_condition(self.core, n.name, L.condition(
                "Unknown", "AwaitingProof", "accelfleet gate run --once: a fresh proof "
                "after a failed one"))
    return out

def once_done(self: Gate, deadline: float | None) -> bool:
    assert self.targets is not None
    present = {n.name for n in self._nodes()}
    waiting = []
    for name in sorted(self.targets):
        result = self.summary.results.get(name)
        if name not in present and name not in self.inflight:
            if result is None or result.verdict not in FINAL:
                self.summary.results[name] = NodeResult(name, "", "gone",
                                                        "the node was deleted")
            continue
        if result is None or result.verdict not in FINAL or name in self.inflight:
            waiting.append(name)
    if not waiting:
        return True
    if deadline is not None and time.monotonic() > deadline:
        for name in waiting:
            if name not in self.inflight:
                old = self.summary.results.get(name)
                self.summary.results[name] = NodeResult(
                    name, old.pool if old else "", "waiting",
                    (old.reason if old else "never Ready") + " (gave up waiting)")
        return not self.inflight
    return False

def idle_now(self: Gate, node: str) -> bool:
    """`_idle` asked of the API server itself, for a node just claimed (a pod bound in
    the instant before the claim may not be in the cache yet)."""
    try:
        page = K.raw(with_retries(self.core.list_pod_for_all_namespaces,
                                  field_selector=f"spec.nodeName={node}",
                                  _preload_content=False,
                                  _request_timeout=K.REQUEST_TIMEOUT_S))
    except Exception as exc:
        self._problem(K.refused(exc, "listing a node's pods (a re-proof takes only an "
                                     "idle node)"))
        return False
    pods, bad = valid(page.get("items"), pod_problem)
    if bad:  # a pod that does not read as one: the node may be busy
        self.guard.skipped("pod", len(bad))
        return False
    for pod in pods:
        if (pod.get("status") or {}).get("phase") not in ("Pending", "Running"):
            continue
        owners = (pod.get("metadata") or {}).get("ownerReferences") or []
        if not any(o.get("kind") == "DaemonSet" for o in owners):
            return False
    return True
