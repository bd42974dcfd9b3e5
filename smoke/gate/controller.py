"""The gate controller of one cluster: every node of a gated pool is proven before it takes
work (docs/gate.md).

    gate = Gate(client, "ml-gke", inventory, GateOptions(namespace="accelfleet-gate"))
    summary = gate.run(stop)               # until `stop` (in the cluster)
    summary = Gate(..., GateOptions(..., once=True)).run(stop)  # the nodes present now

The loop, on the leader only (a Lease; a standby watches and waits):
- the nodes are listed, then watched from the list's resourceVersion (`_watch`);
- on becoming leader, a node left `proving` by a controller that died mid-proof is cleaned
  up: its proof's objects are deleted and it goes back to unproven (proven afresh);
- a gated node (the gate taint, a gated pool by its `accelfleet.io/pool` label) that is Ready
  is claimed (`proving` + the run id, a patch guarded by its resourceVersion, so two
  controllers never prove it at once), then proven (`_proof`): on a GPU pool without the
  fabric check with the pool's other ready new nodes (a batch of at most `batch`, each node
  judged on its own), on a fabric pool with the pool's other new nodes or one proven node,
  a multi-host TPU slice with all the hosts of its slice once every one is Ready, else
  alone; a re-proof of an idle node on a pool Kueue routes goes through the pool's queue
  (`_proof.reproof_queue`);
- pass: the taint lifted, `proven`, the proof recorded, condition True, an Event; fail: the
  taint kept, `failed`, condition False with the reason, a Warning Event, quarantine within
  the pool's cap; an infrastructure error (the proof could not run, an API error): back to
  unproven and retried with backoff; a node deleted mid-proof: its proof is cancelled and
  every object it created deleted.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from smoke.cluster.access import with_retries
from smoke.gate import _hours as H
from smoke.gate import _kube as K
from smoke.gate import _once as O
from smoke.gate import _verdict as V
from smoke.gate import lifecycle as L
from smoke.gate import nodes as N
from smoke.gate._cap import Caps
from smoke.gate._exporter import Exporters
from smoke.gate._guard import Guard
from smoke.gate._model import LEASE_NAME, GateOptions, GateSummary, NodeResult
from smoke.gate._proof import Unit
from smoke.gate._verdict import CROSS_NODE_TIER

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from fleet.inventory import Inventory, InventoryPool


IDLE_RECHECK_S = 10.0  # shadow mode: how long a node found running work is left alone


# the helper threads (watch, pod cache, elector, exporters) end this long after the loop at
# most: a thread still writing when the interpreter exits can abort it (SIGABRT, seen on ctrl-C
# to `gate run --once` under load); one blocked in a watch's read is left to its daemon end
JOIN_HELPERS_S = 3.0

__all__ = ["CROSS_NODE_TIER", "LEASE_NAME", "Gate", "GateOptions", "GateSummary", "NodeResult"]


class Gate:
    def __init__(self, client: ApiClient, cluster: str, inventory: Inventory,
                 options: GateOptions) -> None:
        from kubernetes import client as k

        self.client, self.cluster, self.inventory, self.options = (client, cluster,
                                                                   inventory, options)
        self.core, self.batch = k.CoreV1Api(client), k.BatchV1Api(client)
        self.custom = k.CustomObjectsApi(client)
        self.pools: dict[str, InventoryPool] = {
            p.name: p for p in inventory.pools if p.cluster == cluster and p.gated}
        self.wake = threading.Condition()
        self.lock = threading.Lock()
        self.inflight: dict[str, tuple[Unit, str, threading.Event]] = {}  # node -> proof
        self.claimed: dict[str, dict[str, str]] = {}  # node -> the uid and boot ID claimed
        self.backoff: dict[str, tuple[float, float]] = {}  # node -> (not before, delay)
        self.busy_until: dict[str, float] = {}  # shadow: a node found busy, not asked till
        self.summary = GateSummary(cluster)
        self.targets: set[str] | None = None  # --once: the nodes to prove
        self.started = time.monotonic()
        self.ready = threading.Event()  # synced and running (/readyz)
        self.adopted = False
        self.watch: Any = None
        self.pods: Any = None  # smoke.gate._informer.PodInformer: the idle check's cache
        self._read_nodes: dict[str, N.GateNode] = {}  # name -> the node read (`_nodes`)
        self._dirty = True  # something changed since the last round
        self._round_at = -float("inf")  # when the last round ran (monotonic)
        self._counts: tuple[tuple[int, int, int], dict[tuple[str, str, str], int]] | None \
            = None  # state_counts, by the watch's changes
        self.elector: Any = None
        self.follower: Any = None  # smoke.gate.pools.Follower: labels, open pools
        self.last_loop = time.monotonic()
        # metrics (smoke.gate._metrics)
        self.verdict_counts: dict[tuple[str, str], int] = {}  # (pool, verdict) -> proofs
        self.ready_to_proven: dict[str, list[float]] = {}  # pool -> seconds, per node
        self.node_hours: dict[tuple[str, str, str], float] = {}  # (pool, team, kind) -> h
        self.hours_at: datetime | None = None  # node_hours counted through (smoke.gate._hours)
        self.reproof_seconds: dict[str, list[float]] = {}  # pool -> a re-proof's seconds
        self.guard = Guard(self)  # malformed objects, loop errors (smoke.gate._guard)
        self.caps = Caps(ratio=options.breaker_ratio, window_s=options.breaker_window_s,
                         min_verdicts=options.breaker_min_verdicts)
        self.exporters = Exporters(self)  # the DCGM exporters between proofs (_exporter)

    def is_leader(self) -> bool:
        return self.elector is None or bool(self.elector.is_leader())

    def state_counts(self) -> dict[tuple[str, str, str], int]:
        """(pool, team, state) -> nodes, over the gated pools (quarantined: its own state);
        counted again when the nodes changed, or `round_every_s` passed (issue 35)."""
        out: dict[tuple[str, str, str], int] = {}
        if self.watch is None:
            return out
        key = (self.watch.lists, self.watch.events,
               int(time.monotonic() // self.options.round_every_s))
        known = self._counts
        if known is not None and known[0] == key:
            return dict(known[1])
        for n in self._nodes():
            if n.pool in self.pools:
                state = "quarantined" if n.quarantined else n.state
                row = (n.pool, n.team or self.pools[n.pool].team, state)
                out[row] = out.get(row, 0) + 1
        self._counts = (key, out)
        return dict(out)

    def _problem(self, text: str) -> None:
        """An error the operator must see (in the summary, `gate run`'s output), once."""
        if text and text not in self.summary.errors and len(self.summary.errors) < 200:
            self.summary.errors.append(text)

    def _event(self, node: dict[str, Any], reason: str, message: str, *,
               warning: bool) -> None:
        """An Event about the node; a refused one is an error to see, a lost one is not."""
        why = K.node_event(self.core, node, reason, message, warning=warning)
        if "refused" in why:
            self._problem(why)

    # -- the loop ----------------------------------------------------------------------
    def _changed(self, name: str | None) -> None:
        self._dirty = True  # the next round runs at once (`_round_due`)
        if name is not None:
            with self.lock:
                proof = self.inflight.get(name)
            if proof is not None and self.watch.get(name) is None:
                proof[2].set()  # the node was deleted mid-proof: cancel, clean up
        with self.wake:
            self.wake.notify_all()

    def run(self, stop: threading.Event) -> GateSummary:
        from smoke.gate._lease import Elector
        from smoke.gate._watch import NodeWatch
        from smoke.gate.pools import Follower

        o = self.options
        self.follower = Follower(self.core, o.namespace, self.pools)
        inner = threading.Event()  # ends the helper threads once this returns
        self.watch = NodeWatch(self.core, self._changed, inner,
                               watch_timeout_s=o.watch_timeout_s, rejected=self.guard.rejected)
        threads = [threading.Thread(target=self.watch.run, daemon=True, name="gate-watch")]
        if self._needs_idle():
            from smoke.gate._informer import PodInformer

            self.pods = PodInformer(self.core, inner, watch_timeout_s=o.watch_timeout_s,
                                    rejected=lambda *_: self.guard.skipped("pod"))
            threads.append(threading.Thread(target=self.pods.run, daemon=True,
                                            name="gate-pods"))
        if o.elect:
            self.elector = Elector(self.client, o.namespace, o.lease_name, o.identity,
                                   lease_s=o.lease_s, stop=inner,
                                   annotations=lambda: H.record(self.node_hours,
                                                                self.elector, self.hours_at))
            threads.append(threading.Thread(target=self.elector.run, daemon=True,
                                            name="gate-lease"))
        if not o.once and o.exporter_namespace and o.exporter_interval_s:
            threads.append(threading.Thread(target=self.exporters.run, args=(inner,),
                                            daemon=True, name="gate-exporters"))
        for t in threads:
            t.start()
        pool = ThreadPoolExecutor(max_workers=max(1, o.parallel),
                                  thread_name_prefix="gate-proof")
        futures: list[Future[None]] = []
        try:
            if not self.watch.wait_synced(o.sync_wait_s) and o.once:
                self.summary.unsynced = True
                self.guard.problem(f"the node list did not answer within {o.sync_wait_s:g} s "
                                   f"({self.watch.last_error or 'no answer'})")
            self.ready.set()
            deadline = None if o.once_wait_s is None else time.monotonic() + o.once_wait_s
            while not stop.is_set() and not (o.once and not self.watch.synced.is_set()):
                leader = self.elector is None or self.elector.is_leader()
                self.summary.leader = self.summary.leader or leader
                if leader and self.watch.synced.is_set():
                    if not self.adopted:
                        H.take_up(self.node_hours, self.elector)
                        self.adopted = self.guard.guarded("adopting nodes left proving",
                                                          self._adopt)
                        self._dirty = True
                    running = [f for f in futures if not f.done()]
                    self._dirty = self._dirty or len(running) < len(futures)  # one ended
                    futures = running
                    if o.once or self._round_due():
                        self.guard.guarded("following open pools", self._follow)
                        if o.once and self.targets is None:
                            self.targets = self._once_targets()
                        jobs: list[tuple[Unit, InventoryPool]] = self.guard.attempt(
                            "planning proofs", self._plan, [])
                        futures += [pool.submit(self._prove, *job) for job in jobs]
                    if o.once and self._once_done(deadline):
                        break
                elif not leader:
                    self.adopted = False  # adopt again on winning the lease back
                    if o.once and time.monotonic() - self.started > 2 * o.lease_s + 5:
                        holder = self.elector.holder if self.elector is not None else ""
                        self.summary.errors.append(
                            f"another gate controller ({holder or 'unknown'}) holds the Lease "
                            f"{o.namespace}/{o.lease_name}: it proves this cluster's nodes "
                            "(`accelfleet gate status` shows them)")
                        break
                with self.wake:
                    self.wake.wait(0.5)
                rest_s = self._round_at + o.round_min_s - time.monotonic()
                if rest_s > 0 and not o.once:
                    stop.wait(rest_s)  # changes meanwhile coalesce into the next round
                self._problem(self.watch.last_refusal)
                if self.pods is not None:
                    self._problem(self.pods.last_refusal)
                if self.elector is not None:
                    self._problem(self.elector.last_refusal)
                now = time.monotonic()
                if self.watch.synced.is_set() and self.is_leader():
                    H.tick(self)  # node-hours from the nodes' timestamps
                elif not self.is_leader():
                    H.standby(self)  # a standby exports the leader's totals
                self.last_loop = now
        finally:
            for _, _, cancel in list(self.inflight.values()):
                cancel.set()
            pool.shutdown(wait=True)
            inner.set()
            if self.elector is not None:
                self.elector.release()
            _join(threads, JOIN_HELPERS_S)
            self.summary.lists = self.watch.lists
            self.summary.targets = tuple(sorted(self.targets or ()))
        return self.summary

    # -- which nodes, as which units ----------------------------------------------------
    def _round_due(self) -> bool:
        """Whether a round runs now: something changed since the last, or `round_every_s`
        passed. (The flag is cleared before the round reads the nodes: a change meanwhile is
        in what it reads, or makes the next round run.)"""
        now = time.monotonic()
        if not self._dirty and now - self._round_at < self.options.round_every_s:
            return False
        self._dirty, self._round_at = False, now
        return True

    def _nodes(self) -> list[N.GateNode]:
        """Every node, as the gate reads it; each read once per resourceVersion (issue 35:
        5,000 nodes read afresh twice a round took most of the idle controller's CPU). The
        watch keeps only nodes that read as Nodes (`checked`)."""
        memo = self._read_nodes
        fresh: dict[str, N.GateNode] = {}
        for name, node in self.watch.snapshot().items():
            known = memo.get(name)
            rv = str((node.get("metadata") or {}).get("resourceVersion", ""))
            fresh[name] = known if known is not None and known.resource_version == rv \
                else N.GateNode.of(node, checked=True)
        self._read_nodes = fresh
        return list(fresh.values())

    def _follow(self) -> None:
        """Label the gated nodes seen for the first time, open an open pool's new nodes
        (smoke.gate.pools); a refused call is reported, and tried again next round."""
        try:
            self.follower.step(list(self.watch.snapshot().values()))
        except Exception as exc:
            self._problem(K.refused(exc, "following the pools' state") or str(exc)
                          if isinstance(exc, PermissionError) or K.refused(exc, "x") else
                          f"following the pools' state: {type(exc).__name__}")

    def _once_targets(self) -> set[str]:
        return O.once_targets(self)

    def _once_done(self, deadline: float | None) -> bool:
        return O.once_done(self, deadline)

    def _eligible(self, n: N.GateNode, now: float) -> bool:
        pool = self.pools.get(n.pool)
        if pool is None or not n.ready or self.follower.is_open(n.pool):
            return False
        if pool.gate is not None and pool.gate.shadow:
            # shadow mode: an unheld node that has no proof, proven only while idle (a proof
            # never competes with work on a node it does not hold)
            if n.state not in (N.UNPROVEN, N.UNGATED) or n.proof is not None \
                    or n.name in self.inflight or now < self.busy_until.get(n.name, 0.0):
                return False
            if not self._idle(n.name):  # asked again in IDLE_RECHECK_S, not every round
                self.busy_until[n.name] = now + IDLE_RECHECK_S
                return False
        elif n.state != N.UNPROVEN or n.quarantined:  # `smoke release` first
            return False
        if self.targets is not None and n.name not in self.targets:
            return False
        if n.name in self.inflight:
            return False
        not_before = self.backoff.get(n.name, (0.0, 0.0))[0]
        return now >= not_before

    def _plan(self) -> list[tuple[Unit, InventoryPool]]:
        now = time.monotonic()
        nodes = self._nodes()
        by_pool: dict[str, list[N.GateNode]] = {}
        for n in nodes:
            by_pool.setdefault(n.pool, []).append(n)
        jobs: list[tuple[Unit, InventoryPool]] = []
        for name, pool in sorted(self.pools.items()):
            members = sorted(by_pool.get(name, []), key=lambda n: n.name)
            ready = [n for n in members if self._eligible(n, now)]
            if not ready:
                continue
            if pool.kind == "tpu" and pool.hosts_per_slice > 1:
                slices: dict[str, list[N.GateNode]] = {}
                for n in members:
                    slices.setdefault(n.slice, []).append(n)
                for sl, hosts in sorted(slices.items()):
                    if len(hosts) == pool.hosts_per_slice and all(
                            self._eligible(h, now) for h in hosts):
                        jobs.append((Unit(name, tuple(h.name for h in hosts), slice=sl), pool))
            elif pool.gate is not None and pool.gate.fabric and pool.kind == "gpu":
                if len(ready) >= 2:
                    jobs.append((Unit(name, tuple(n.name for n in ready)), pool))
                else:
                    peers = [n for n in members if n.state == N.PROVEN and n.ready
                             and n.name not in self.inflight]
                    if not peers and any(
                            n.name != ready[0].name and (n.state == N.PROVING
                                                         or n.name in self.inflight)
                            for n in members):
                        continue  # a peer is being proven: wait for it, so the lone new
                        # node gets the cross-node fabric check, never a proof without it
                    jobs.append((Unit(name, (ready[0].name,),
                                      (peers[0].name,) if peers else ()), pool))
            elif pool.kind == "gpu" and V.pool_tier(self, pool) < CROSS_NODE_TIER:
                # per-node tiers only: the pool's ready new nodes in one proof (one Job, a pod
                # pinned to each), at most `batch` a proof; each node still gets its verdict
                size = max(1, self.options.batch)
                jobs += [(Unit(name, tuple(n.name for n in ready[i:i + size]),
                               independent=True), pool)
                         for i in range(0, len(ready), size)]
            else:
                jobs += [(Unit(name, (n.name,)), pool) for n in ready]
        if not self.options.once:
            jobs += self._due(by_pool, now)
        out = []
        for unit, pool in jobs:
            claimed = self._claim(unit)
            if claimed is not None:
                out.append((claimed, pool))
        return out

    # -- re-proof on a schedule ------------------------------------------------------------
    def _due(self, by_pool: dict[str, list[N.GateNode]], now: float
             ) -> list[tuple[Unit, InventoryPool]]:
        """Proven nodes due for their re-proof, idle, within each pool's `max_unavailable`
        (smoke.gate._reproof): re-proof never evicts work, never takes a pool at once."""
        from smoke.gate._reproof import due_units

        with self.lock:
            reproving: dict[str, set[str]] = {}
            for name, (unit, _, _) in self.inflight.items():
                if unit.reproof:
                    reproving.setdefault(unit.pool, set()).add(name)
        return due_units(self.pools, by_pool, reproving=reproving, now=now, idle=self._idle,
                         not_before=lambda n: self.backoff.get(n, (0.0, 0.0))[0],
                         skip=[p for p in self.pools if self.follower.is_open(p)],
                         flagged=self.exporters.due)

    def _needs_idle(self) -> bool:
        """Whether a node's idleness is asked: a shadow pool's proofs, or re-proofs."""
        return any(p.gate is not None and (p.gate.shadow or (
            not self.options.once and p.gate.reprove_interval_s is not None))
            for p in self.pools.values())

    def _idle(self, node: str) -> bool:
        """No pod but DaemonSet pods is running or starting on the node, as the pod cache
        says (smoke.gate._informer: one list, then a watch; no API call per node per loop,
        issue 35). False while the cache is not synced."""
        return self.pods is not None and self.pods.idle(node)

    def _idle_now(self, node: str) -> bool:
        return O.idle_now(self, node)

    def _claim(self, unit: Unit) -> Unit | None:
        """Every node of the unit marked `proving` with the run id (guarded: a node changed
        meanwhile is left for the next round); None when none could be claimed."""
        from smoke.cluster.launcher import new_run_id

        run_id = new_run_id()
        cancel = threading.Event()
        got = []
        for name in unit.nodes:
            node = self.watch.get(name)
            if node is None or not self.is_leader():  # stepped down meanwhile: act no more
                continue
            held = self._enforced(unit.pool)  # shadow: never tainted
            try:
                with_retries(self.core.patch_node, name,
                             N.claim_patch(N.GateNode.of(node), run_id, taint=held),
                             _preload_content=False, _request_timeout=K.REQUEST_TIMEOUT_S)
            except Exception as exc:
                if K.status_of(exc) in (404, 409):
                    continue
                self.summary.errors.append(f"claiming {name}: {type(exc).__name__}")
                continue
            got.append(name)
            self.claimed[name] = N.GateNode.of(node).identity  # the claim was guarded by rv
        busy = unit.reproof and not all(self._idle_now(name) for name in got)  # bound
        # meanwhile
        if not got or busy or (unit.slice and len(got) != len(unit.nodes)):
            for name in got:  # a slice is proven whole or not at all
                self.claimed.pop(name, None)
                K.patch_node(self.core, name, self._release(unit))
            return None
        unit = replace(unit, nodes=tuple(got))
        with self.lock:
            for name in unit.nodes:
                self.inflight[name] = (unit, run_id, cancel)
        for name in unit.nodes:
            self._condition(name, L.condition("Unknown", "Proving",
                                              f"accelfleet gate: proof {run_id} running"))
        return unit

    def _condition(self, name: str, cond: dict[str, Any]) -> None:
        try:
            K.set_condition(self.core, name, cond)
        except Exception as exc:
            self.summary.errors.append(f"the {cond['reason']} condition of {name}: "
                                       f"{K.status_of(exc) or type(exc).__name__}")

    def _enforced(self, pool: str) -> bool:
        """Whether the gate holds the pool's nodes (not shadow mode)."""
        p = self.pools.get(pool)
        return p is not None and p.gate is not None and p.gate.enforced

    @staticmethod
    def _release(unit: Unit) -> Any:
        """The patch that gives a claimed node back: unproven, or (a re-proof) proven."""
        def change(node: dict[str, Any]) -> dict[str, Any]:
            g = N.GateNode.of(node)
            return N.restore_proven_patch(g) if unit.reproof else N.unclaim_patch(g)

        return change

    # -- a restart mid-proof ----------------------------------------------------------------
    def _adopt(self) -> None:
        """Nodes left `proving` by a controller that is gone: delete what their proof
        created, and put them back to unproven (they are proven afresh, once)."""
        runs: dict[str, list[str]] = {}
        with self.lock:
            ours = {run for _, run, _ in self.inflight.values()}
        for n in self._nodes():
            if n.state == N.PROVING and n.run not in ours:
                runs.setdefault(n.run, []).append(n.name)
        for run_id, names in sorted(runs.items()):
            if run_id:
                for ns in self._namespaces():
                    self.summary.errors += K.delete_run(self.core, self.batch, self.custom,
                                                        ns, run_id)
            for name in names:
                K.patch_node(self.core, name, lambda n: N.unclaim_patch(N.GateNode.of(n)))

    def _namespaces(self) -> list[str]:
        """Where proofs run: the controller's namespace, and each queue namespace its pools'
        re-proofs go through (`smoke.gate._proof.proof_namespace`)."""
        queued = {p.gate.queue_namespace or p.gate.queue for p in self.pools.values()
                  if p.gate is not None and p.gate.queue}
        return [self.options.namespace, *sorted(queued - {self.options.namespace})]

    # -- one proof (smoke/gate/_verdict.py) ----------------------------------------------
    def _prove(self, unit: Unit, pool: InventoryPool) -> None:
        V.prove_unit(self, unit, pool)

    def _unit_tier(self, pool: InventoryPool, unit: Unit) -> int:
        return V.unit_tier(self, pool, unit)


def _join(threads: list[threading.Thread], timeout_s: float) -> None:
    """Wait for the controller's helper threads to end, `timeout_s` in all."""
    end = time.monotonic() + timeout_s
    for t in threads:
        if t.is_alive() and t is not threading.current_thread():
            t.join(max(0.0, end - time.monotonic()))
