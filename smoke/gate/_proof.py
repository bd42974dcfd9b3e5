"""One proof: the smoke run of one unit (a node, a fabric pair or batch, a TPU slice), pinned
to its nodes, launched and re-judged exactly as `smoke run` does (`smoke.cluster.launcher`:
the pod's own verdict is never trusted; a pod that printed nothing judgeable fails), then read
per node as pass, fail (a verdict) or an infrastructure error (retried, never a verdict)."""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from fleet.gate import REPROOF_PRIORITY_CLASS
from smoke.cluster.nodeapi import COVERAGE
from smoke.cluster.run import PoolStatus, RunReport
from smoke.gate.nodes import HOSTNAME_LABEL, NODEPOOL_LABEL, gate_toleration
from smoke.probes.results import Verdict

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from fleet.inventory import Inventory, InventoryPool
    from smoke.cluster.workload import RenderedRun

PASS, FAIL, INFRA = "pass", "fail", "infra"
# A node of a unit proven as one (a multi-host TPU slice, a fabric pool's nodes proven
# together) that did not fail on its own while its unit failed: not proven (a slice or a
# fabric passes whole or not at all) and not failed (nothing blames it); it stays gated with
# its unit and is proven again with it (docs/gate.md, "Blame")
UNIT = "unit"
FINAL = (PASS, FAIL, UNIT)  # verdicts a proof ends with (INFRA is retried)
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True)
class Unit:
    """What one proof covers: `nodes` (each gets the verdict), and `peers`, proven nodes of the
    pool taken along for the cross-node fabric check (their state is not changed)."""

    pool: str
    nodes: tuple[str, ...]
    peers: tuple[str, ...] = ()
    slice: str = ""  # a multi-host TPU slice: its GKE node pool
    reproof: bool = False  # proven nodes proven again (on the pool's schedule, idle only)
    # a batch of nodes run together for speed, per-node tiers only: each node is judged on its
    # own results, never on the batch's (a pod of another node that never ran, the deadline)
    independent: bool = False

    @property
    def hosts(self) -> tuple[str, ...]:
        return self.nodes + self.peers


@dataclass(frozen=True)
class Outcome:
    """A proof's reading: per node of the unit, pass, fail or infra, and why."""

    report: RunReport | None
    verdicts: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


def reproof_queue(pool: InventoryPool, unit: Unit) -> tuple[str, str] | None:
    """(LocalQueue, namespace) a proof goes through: a RE-proof on a pool routed through Kueue
    (docs/gate.md: it takes quota of a node in service, at the lowest priority); None for a
    first proof (its node is not in service: it must run before any workload can land, and
    nothing of the pool's quota is taken) and on a pool Kueue does not route."""
    gate = pool.gate
    if not unit.reproof or gate is None or gate.queue is None:
        return None
    return gate.queue, gate.queue_namespace or gate.queue


def proof_namespace(pool: InventoryPool, unit: Unit, namespace: str) -> str:
    """Where the proof's objects live: its queue's namespace (a LocalQueue takes jobs of its
    own namespace only), else the controller's `namespace`."""
    queued = reproof_queue(pool, unit)
    return queued[1] if queued is not None else namespace


def proof_pool(pool: InventoryPool, unit: Unit) -> InventoryPool:
    """The pool as one proof sees it: only the unit's hosts, the gate tolerated, and the Kueue
    queue of a re-proof (`reproof_queue`), none for a first proof."""
    queued = reproof_queue(pool, unit)
    queue = queued[0] if queued is not None else None
    tolerations = list(pool.tolerations)
    if gate_toleration() not in tolerations:
        tolerations.append(gate_toleration())
    selector = dict(pool.node_selector)
    if pool.kind == "tpu":
        if unit.slice:
            selector[NODEPOOL_LABEL] = unit.slice
        else:
            selector[HOSTNAME_LABEL] = unit.hosts[0]
        return replace(pool, slices=1, node_selector=selector, tolerations=tolerations,
                       kueue_queue=queue)
    if len(unit.hosts) == 1:
        selector[HOSTNAME_LABEL] = unit.hosts[0]
    return replace(pool, nodes=len(unit.hosts), node_selector=selector,
                   tolerations=tolerations, kueue_queue=queue)


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj.get("kind") == "Job":
        return [obj["spec"]["template"]["spec"]]
    if obj.get("kind") == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in obj["spec"]["replicatedJobs"]]
    return []


def pinned(rendered: RenderedRun, unit: Unit) -> RenderedRun:
    """`rendered` with its pods held to the unit's hosts (required node affinity on the
    hostname) when they are more than one (one host is pinned by its node selector)."""
    if len(unit.hosts) < 2 or unit.slice:
        return rendered
    pools = []
    for w in rendered.pools:
        objects = copy.deepcopy(w.objects)
        for obj in objects:
            for spec in _pod_specs(obj):
                affinity = spec.setdefault("affinity", {})
                affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{
                        "key": HOSTNAME_LABEL, "operator": "In",
                        "values": sorted(unit.hosts)}]}]}}
        pools.append(replace(w, objects=objects))
    return replace(rendered, pools=pools)


def render(inventory: Inventory, pool: InventoryPool, unit: Unit, *, run_id: str,
           namespace: str, tier: int, timeout_s: int, images: dict[str, str],
           pull_secrets: tuple[str, ...] = ()) -> RenderedRun:
    import smoke.expectations as expect
    from smoke.cluster.workload import RenderOptions, render_run
    from smoke.gate._pull import with_pull_secrets

    one = proof_pool(pool, unit)
    options = RenderOptions(run_id=run_id, namespace=proof_namespace(pool, unit, namespace),
                            tier=tier, timeout_s=timeout_s, images=images)
    run = render_run(replace(inventory, pools=(one,)), options, expectation=expect.for_pool)
    run = with_pull_secrets(run, pull_secrets)  # the stack's gate.image_pull_secrets
    return prioritized(pinned(run, unit)) if one.kueue_queue is not None else pinned(run, unit)


def prioritized(rendered: RenderedRun) -> RenderedRun:
    """`rendered` with its queued Job or JobSet at the gate's lowest Kueue priority (label
    `kueue.x-k8s.io/priority-class`: kubernetes-sigs/kueue v0.19.2 pkg/controller/constants
    WorkloadPriorityClassLabel)."""
    pools = []
    for w in rendered.pools:
        objects = copy.deepcopy(w.objects)
        for obj in objects:
            if obj.get("kind") in ("Job", "JobSet"):
                meta = obj.setdefault("metadata", {})
                meta["labels"] = {**(meta.get("labels") or {}),
                                  PRIORITY_CLASS_LABEL: REPROOF_PRIORITY_CLASS}
        pools.append(replace(w, objects=objects))
    return replace(rendered, pools=pools)


def prove(client: ApiClient, cluster: str, rendered: RenderedRun, unit: Unit, *, stack: str,
          timeout_s: int, stop: threading.Event, poll_s: float = 0.5) -> Outcome:
    """Launch the proof, follow it, clean up everything it created, and read it per node."""
    from smoke.cluster.launcher import launch

    # coverage judged centrally, as `smoke run` judges it: each host of the unit needs exactly
    # one judged report from a pod that ran on it (smoke.cluster._rejudge.coverage)
    targets = {w.pool.name: tuple(unit.hosts) for w in rendered.pools}
    report = launch(rendered, {cluster: client}, stack=stack, timeout_s=timeout_s, stop=stop,
                    poll_s=poll_s, targets=targets)
    return judge(report, unit)


def judge(report: RunReport, unit: Unit) -> Outcome:
    """Per node of the unit: a verdict failure (its own, or the unit's collective) fails it;
    a proof that never ran on it (unschedulable, not submitted, cancelled, an image that never
    pulled within the deadline; in a unit of several nodes, its own pod alone) or whose
    objects could not be cleaned up is an infrastructure error; a node whose report holds
    judged results and no failure passes."""
    pool = report.pools[0] if report.pools else None
    out = Outcome(report)
    infra = ""
    if pool is None or report.cancelled:
        infra = "the proof was cancelled"
    elif pool.status in (PoolStatus.UNSCHEDULABLE, PoolStatus.ERROR, PoolStatus.SKIPPED):
        infra = f"the proof could not run: {pool.status.value} ({pool.reason})"
    elif report.cleanup_errors:
        infra = "; ".join(report.cleanup_errors)
    ran = {o.node for o in (pool.nodes if pool is not None else ()) if o.exit_code is not None
           or o.report is not None}
    if not infra and pool is not None and pool.status is PoolStatus.TIMEOUT and \
            not ran & set(unit.nodes):
        infra = f"the proof never started on the node within its deadline ({pool.reason})"
    for node in unit.nodes:
        if infra:
            out.verdicts[node], out.reasons[node] = INFRA, infra
            continue
        if len(unit.hosts) > 1 and node not in ran:  # a batch: its pod never ran there
            out.verdicts[node] = INFRA
            out.reasons[node] = ("the proof never ran on the node (its pod was not scheduled "
                                 "or never started) while the rest of its batch did")
            continue
        assert pool is not None
        # a failure naming no node is this node's when it was proven alone; in a unit of
        # several it is the unit's (`_blame`).
        # the run's coverage of the batch (two pods on this node) is the placement's failure,
        # never the node's own (smoke.cluster._rejudge.coverage): the real scheduler places a
        # pending proof pod on a node whose first pod has already finished (a finished pod no
        # longer counts for the pods' anti-affinity), most of all while the batch's nodes turn
        # schedulable one by one; seen on the real control plane (benchmarks/bench_gate.py
        # --real), where it failed a healthy node. Both reports are this node's own (the
        # launcher checked each report's host against its pod's node): the node is judged on
        # them; the node no pod ran on is not proven (above) and is proved again
        placement = {r.reason for n, r in pool.verdicts()
                     if n == node and r.verdict is Verdict.FAIL and COVERAGE in r.details}
        mine = [f for f in pool.failures
                if (f.node == node or (f.node is None and not unit.independent
                                         and len(unit.hosts) == 1))
                and not (f.node == node and f.reason in placement)]
        tested = any(o.node == node and o.report is not None and o.report.results
                     for o in pool.nodes)
        if mine:
            out.verdicts[node] = FAIL
            out.reasons[node] = "; ".join(f.line() for f in mine)[:900]
        elif not tested:
            out.verdicts[node] = FAIL
            out.reasons[node] = "no report: nothing on this node was judged"
        else:
            out.verdicts[node], out.reasons[node] = PASS, "every probe passed"
    if not infra and pool is not None and not unit.independent and len(unit.hosts) > 1:
        _blame(out, unit, pool.failures)
    return out


def _blame(out: Outcome, unit: Unit, failures: list[Any]) -> None:
    """A unit proven as one passes whole or not at all: when it failed (a node's own
    failure, or a failure of the unit that names no node of it: the slice's collective, the
    fabric check), each node with no failure of its own is held with its unit (UNIT), never
    proven; nodes failing on their own keep their FAIL (they are the ones blamed)."""
    blamed = sorted(n for n in unit.nodes if out.verdicts.get(n) == FAIL)
    blamed_peers = sorted(p for p in unit.peers if any(f.node == p for f in failures))
    collective = [f for f in failures if f.node is None or f.node not in unit.hosts]
    if not blamed and not collective and not blamed_peers:
        return
    what = f"slice {unit.slice}" if unit.slice else f"unit of {len(unit.hosts)} nodes"
    if blamed or blamed_peers:
        why = (f"its {what} failed: {', '.join([*blamed, *blamed_peers][:8])} failed on its "
               "own; this node passed its own probes but is proven only with its "
               f"{'slice' if unit.slice else 'unit'} as a whole, and stays gated until then")
    else:
        why = (f"its {what} failed as a unit and no node is blamed "
               f"({'; '.join(f.line() for f in collective)[:500]}): every node of it stays "
               "gated, none is failed or quarantined; the unit is proven again")
    for node in unit.nodes:
        if out.verdicts.get(node) == PASS:
            out.verdicts[node], out.reasons[node] = UNIT, why[:900]
