"""A GPU pool is tested at its live size, not its declared one (issue 19 item 9).

An autoscaled pool may run more nodes than the stack declares, or fewer; a node may be
cordoned or not Ready. Before a run, the launcher lists each GPU pool's nodes by the pool's
node selector: every schedulable, Ready node gets a pod, and every node that does not is named
in the report with why (a SKIPPED check: never a pass, never a fail). A pool with no live
node keeps its declared size: its pods wait for the autoscaler, or the scheduler says why.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fleet.errors import SetupError
from smoke.cluster._api import CALL_CAP_S, ApiTimeout, TooLong
from smoke.cluster.access import with_retries
from smoke.cluster.run import WORKLOAD, Check
from smoke.probes.results import ProbeResult, Verdict

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from smoke.cluster.workload import PoolWorkload


@dataclass(frozen=True)
class LivePool:
    """One GPU pool as the cluster has it now."""

    declared: int
    testable: tuple[str, ...]
    untested: dict[str, str] = field(default_factory=dict)  # node -> why it gets no pod

    @property
    def size(self) -> int:
        """The pods to run: one per testable node; the declared count when none is live yet
        (the pods then wait for the scheduler, which names why, or for the autoscaler)."""
        return len(self.testable) or self.declared

    def checks(self) -> list[Check]:
        out = [Check(node, ProbeResult("host", WORKLOAD, 0, Verdict.SKIPPED,
                                       f"not tested: {why}"))
               for node, why in sorted(self.untested.items())]
        if self.testable and len(self.testable) != self.declared:
            out.append(Check(None, ProbeResult(
                "host", WORKLOAD, 0, Verdict.WARN,
                f"{len(self.testable)} testable node(s) live, {self.declared} declared: every "
                "live node is tested")))
        return out


def _why_untestable(node: Mapping[str, Any]) -> str:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    if not isinstance(spec, dict) or not isinstance(status, dict):
        return "its spec or status is not an object (a malformed answer)"
    if spec.get("unschedulable"):
        return "cordoned (spec.unschedulable)"
    conditions = status.get("conditions") or []
    for cond in conditions if isinstance(conditions, list) else []:
        if not isinstance(cond, dict):
            continue
        if cond.get("type") == "Ready" and cond.get("status") != "True":
            return f"not Ready ({cond.get('reason') or cond.get('status')})"
    return ""


def live_pool(client: ApiClient, w: PoolWorkload) -> LivePool:
    """The pool's nodes by its node selector: who can take a pod, and who cannot and why."""
    from kubernetes import client as k

    selector = ",".join(f"{key}={value}" for key, value in sorted(
        w.pool.node_selector.items()))
    try:  # one attempt's bound in all (retries of quick errors fit in it)
        resp = with_retries(k.CoreV1Api(client).list_node, label_selector=selector,
                            deadline=time.monotonic() + CALL_CAP_S, _preload_content=False,
                            _request_timeout=(5.0, 30.0))
    except (ApiTimeout, TooLong) as exc:
        raise SetupError(f"cluster {w.cluster}: listing the nodes of pool {w.pool.name} "
                         f"failed: {exc.message}; the run tested nothing",
                         hint=exc.hint) from None
    data = getattr(resp, "data", None)
    if getattr(resp, "truncated", False):
        raise TooLong(f"cluster {w.cluster}: the API server's node list for pool {w.pool.name} "
                      f"ran past {len(data or b'')} bytes: read no further; the run tested "
                      "nothing")
    try:
        answer = json.loads(data if isinstance(data, bytes) else b"{}")
    except ValueError:
        answer = None
    items = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(items, list | None):
        items = None
    if not isinstance(answer, dict) or (items is None and "items" in answer):
        raise SetupError(f"cluster {w.cluster}: the API server's node list for pool "
                         f"{w.pool.name} is not a NodeList", hint="check the API server (or "
                         "a proxy in front of it) with `kubectl get nodes -l "
                         f"{selector}`; the run tested nothing")
    testable, untested = [], {}
    for node in items or []:  # an item that is not a Node (no name) tells of no node
        meta = node.get("metadata") if isinstance(node, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            continue
        why = _why_untestable(node)
        if why:
            untested[name] = why
        else:
            testable.append(name)
    return LivePool(w.pods, tuple(sorted(testable)), untested)


def live_pools(workloads: Sequence[PoolWorkload],
               clients: Mapping[str, ApiClient]) -> dict[str, LivePool]:
    """Every GPU pool's live nodes (TPU slices have a fixed shape: their hosts all run)."""
    return {w.pool.name: live_pool(clients[w.cluster], w) for w in workloads
            if w.kind == "job" and w.cluster in clients}


def run_targets(workloads: Sequence[PoolWorkload], clients: Mapping[str, ApiClient],
                live: Mapping[str, LivePool]) -> dict[str, tuple[str, ...]]:
    """The nodes each pool's reports must come from (`launch(targets=...)`): a GPU pool's
    testable live nodes (the run is sized to them); a TPU pool's testable nodes, listed now
    (its slices' hosts: each pod must land on one of them). A pool with no live node is left
    out: its nodes are not known before the autoscaler makes them."""
    out = {name: lp.testable for name, lp in live.items() if lp.testable}
    for w in workloads:
        if w.kind == "jobset" and w.cluster in clients:
            nodes = live_pool(clients[w.cluster], w).testable
            if nodes:
                out[w.pool.name] = nodes
    return out
