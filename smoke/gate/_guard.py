"""What keeps one bad answer from stopping the gate (issue 35): a node object that is not a
Node is skipped with a Warning Event and a metric (`rejected`); a step of the loop that an API
error or an unreadable answer cut short is counted and tried again on the next loop, never the
end of the controller (`guarded`); a verdict that could not be written leaves no node claimed
(`apply_failed`); a node whose proof gave no verdict of its own (an infrastructure error, or
its unit failed) goes back to gated and is tried again with backoff (`held`)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from smoke.gate import _kube as K
from smoke.gate import nodes as N
from smoke.gate._proof import INFRA, UNIT

if TYPE_CHECKING:
    from fleet.inventory import InventoryPool
    from smoke.gate._proof import Unit
    from smoke.gate.controller import Gate

T = TypeVar("T")
MAX_PROBLEMS = 20  # API problems kept in a summary (the first ones, then a count)
MAX_PENDING_EVENTS = 256  # Events waiting to be sent; past it, dropped (and counted)
LEADER_WAIT_S = 60.0  # an Event queued by a standby waits this long for it to lead


class Guard:
    """One controller's record of what it skipped and what it survived (the metrics read
    it), and the thread that sends its Warning Events (never the watch's own thread: an
    Events API that hangs must not stop the view of the nodes)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.lock = threading.Lock()
        self.malformed: dict[str, int] = {}  # kind (node, pod, lease) -> objects skipped
        self.loop_errors = 0  # loop steps cut short by an API error or an unreadable answer
        self.events_dropped = 0
        self._events: queue.Queue[tuple[str, str, str]] = queue.Queue(MAX_PENDING_EVENTS)
        self._sender: threading.Thread | None = None

    # -- malformed objects -------------------------------------------------------------------
    def skipped(self, kind: str, count: int = 1) -> None:
        with self.lock:
            self.malformed[kind] = self.malformed.get(kind, 0) + count

    def rejected(self, name: str, node: Any, problem: str) -> None:
        """A node object the watch kept out (`_watch.NodeWatch.rejected`)."""
        self.skipped("node")
        if self.gate.options.once:  # a node it could not judge: never a clean exit 0
            from smoke.gate._model import NodeResult

            shown = name or "(no name)"
            self.problem(f"node {shown} does not read as a Node ({problem}): skipped")
            self.gate.summary.results.setdefault(shown, NodeResult(
                shown, _pool_of(node), "malformed", "the API server's answer does not read "
                f"as a Node: {problem}"))
        if name:
            self.event(name, "GateNodeMalformed", "accelfleet gate: the API server's answer "
                       f"for this node does not read as a Node ({problem}); the gate skips it "
                       "(it stays as it is: gated nodes stay gated) until it reads again")

    def event(self, node: str, reason: str, message: str) -> None:
        """A Warning Event about `node`, sent from the guard's own thread."""
        try:
            self._events.put_nowait((node, reason, message))
        except queue.Full:
            with self.lock:
                self.events_dropped += 1
            return
        with self.lock:
            if self._sender is None:
                self._sender = threading.Thread(target=self._send, daemon=True,
                                                name="gate-events")
                self._sender.start()

    def _send(self) -> None:
        """Send the queued Events, as the leader only (a standby that saw the same node says
        nothing; one that does not lead within LEADER_WAIT_S drops what it holds)."""
        while True:
            try:
                node, reason, message = self._events.get(timeout=5.0)
            except queue.Empty:
                with self.lock:  # none queued meanwhile: the next Event starts a new sender
                    if self._events.empty():
                        self._sender = None
                        return
                continue
            end = time.monotonic() + LEADER_WAIT_S
            while not self.gate.is_leader() and time.monotonic() < end:
                time.sleep(0.2)
            if self.gate.is_leader():
                K.node_event(self.gate.core, {"metadata": {"name": node}}, reason, message,
                             warning=True)

    # -- the loop --------------------------------------------------------------------------
    def attempt(self, what: str, step: Callable[[], T], default: T) -> T:
        """Run one step of the loop; an exception is counted, said once in the summary
        (`default` returned), and the step is tried again on the next loop."""
        try:
            return step()
        except Exception as exc:
            with self.lock:
                self.loop_errors += 1
            self.problem(f"{what}: {type(exc).__name__}: {str(exc)[:300]}")
            return default

    def guarded(self, what: str, step: Callable[[], Any]) -> bool:
        """`attempt` of a step with no result: True when it ran to its end."""
        return self.attempt(what, lambda: step() or True, False)

    def problem(self, text: str) -> None:
        """An API problem, kept in the summary (`gate run --once` exits 2 on one)."""
        problems = self.gate.summary.api_problems
        with self.lock:
            if text not in problems and len(problems) < MAX_PROBLEMS:
                problems.append(text)

    # -- verdicts ---------------------------------------------------------------------------
    def apply_failed(self, unit: Unit, pool: InventoryPool, run_id: str,
                     exc: BaseException) -> None:
        """Writing a proof's verdicts stopped (an API error, a node that turned malformed):
        each node of the unit still claimed by the run goes back to unproven (gated; the
        claim must not outlive the proof) and is tried again with backoff."""
        from smoke.gate._model import NodeResult

        why = f"its verdict could not be recorded: {type(exc).__name__}: {str(exc)[:300]}"
        self.problem(f"recording proof {run_id}: {type(exc).__name__}: {str(exc)[:300]}")
        for name in unit.nodes:
            done = self.gate.summary.results.get(name)
            if done is not None and done.run_id == run_id:
                continue
            self._backoff(name)

            def unclaim(node: dict[str, Any]) -> dict[str, Any] | None:
                try:
                    g = N.GateNode.of(node)
                except N.Malformed:
                    return None
                return N.unclaim_patch(g) if g.run == run_id else None

            try:
                K.patch_node(self.gate.core, name, unclaim)
            except Exception:  # adopted by the next leader, or by this one's next claim
                pass
            self.gate.summary.results[name] = NodeResult(name, pool.name, INFRA, why, run_id)

    def _backoff(self, name: str) -> float:
        o = self.gate.options
        delay = self.gate.backoff.get(name, (0.0, 0.0))[1]
        delay = min(o.retry_max_s, max(o.retry_first_s, delay * 2))
        self.gate.backoff[name] = (time.monotonic() + delay, delay)
        return delay

    def held(self, unit: Unit, pool: InventoryPool, name: str, node: dict[str, Any],
             verdict: str, reason: str, run_id: str) -> None:
        """A node the proof gave no verdict of its own: an infrastructure error (back to where
        it was: unproven, or a re-proof's node to proven) or its unit failed (UNIT: back to
        unproven, gated, even after a re-proof: a slice or a fabric unit that failed is not
        put back in service), tried again with backoff."""
        from smoke.gate._model import NodeResult

        delay = self._backoff(name)
        if verdict == UNIT:
            K.patch_node(self.gate.core, name, _unit_release(run_id))
            K.set_condition(self.gate.core, name, N.condition(
                False, "UnitFailed", f"proof {run_id}: {reason}"))
            K.node_event(self.gate.core, node, "GateUnitFailed", f"accelfleet gate: proof "
                         f"{run_id}: {reason}; tried again in {delay:.0f} s at the earliest",
                         warning=True)
        else:
            K.patch_node(self.gate.core, name, self.gate._release(unit))
            K.node_event(self.gate.core, node, "GateProofRetry", f"accelfleet gate: proof "
                         f"{run_id} could not judge the node ({reason}); retrying in "
                         f"{delay:.0f} s", warning=True)
        self.gate.summary.results[name] = NodeResult(name, pool.name, verdict, reason, run_id)


def _pool_of(node: Any) -> str:
    """The pool label of an object that does not read as a Node, where it reads; '?'."""
    from fleet.labels import POOL_LABEL

    meta = node.get("metadata") if isinstance(node, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    pool = labels.get(POOL_LABEL) if isinstance(labels, dict) else None
    return pool if isinstance(pool, str) and pool else "?"


def _unit_release(run_id: str) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """Back to unproven with the gate taint (restored where a re-proof's claim had not kept
    it), the claim of `run_id` dropped; nothing when the node is no longer that run's."""
    def change(node: dict[str, Any]) -> dict[str, Any] | None:
        g = N.GateNode.of(node)
        if g.run != run_id:
            return None
        body = N.unclaim_patch(g)
        if not g.tainted:
            body["spec"] = {"taints": [*(dict(t) for t in g.taints), N.gate_taint()]}
        return body

    return change
