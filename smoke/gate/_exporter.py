"""Between proofs, the gate reads the DCGM exporter of each proven GPU node (issue 37): through
the API server's proxy to the exporter pod on that node, judged by DCGM's health-watch limits
(smoke.gate.signals.judge_exporter), only for the signals the node's GPU part has
(fleet.catalog `health_signals`: an unread signal is never called healthy).

    GET /api/v1/namespaces/<ns>/pods?labelSelector=<exporter>&fieldSelector=spec.nodeName=<node>
    GET /api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy/metrics      (RBAC: get pods/proxy)

The pod's proxy, not the Service's: a Service's proxy reaches whichever exporter pod it picks,
not the one on the node read (Kubernetes API reference, core/v1 Pod "connect GET" proxy;
read 2026-11-28). The port is the exporter container's port named `metrics` (the chart's),
9400 when it names none.

What it does with a reading (each once per signal and boot of the node):
- a rule that FAILs (uncorrectable ECC since the driver loaded, a row remapping that failed,
  retired pages past DCGM's limit, a devastating Xid, NVLink replays or recoveries during the
  interval): the node is failed as a proof fails it (its pool's `on_fail`, the gate's taint,
  cordoned), a Warning Event naming the counter and its value, and quarantined within the
  pool's cap (smoke.gate._cap, the breaker included); a shadow pool's node is only reported;
- a rule that WARNs: the node is due for a re-proof (idle only, within `max_unavailable`,
  as any re-proof: smoke.gate._reproof), with a Warning Event that names the counter.
Bounded: one read per node per `exporter_interval_s`, each call within `exporter_timeout_s`
and `exporter_max_bytes` (smoke.cluster.access.bounded: a drip or an endless body is cut); an
answer that is not the exporter's text judges nothing and is said once in the summary.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from fleet.gate import DCGM_EXPORTER_PORT, DCGM_EXPORTER_PORT_NAME
from smoke.gate import _kube as K
from smoke.gate import lifecycle as L
from smoke.gate import nodes as N
from smoke.gate._model import NodeResult
from smoke.gate._proof import FAIL
from smoke.gate.signals import QUARANTINE, REPROVE, Signal, judge_exporter, parse_metrics

if TYPE_CHECKING:
    from fleet.inventory import InventoryPool
    from smoke.gate.controller import Gate

LOG = logging.getLogger(__name__)
TICK_S = 1.0  # how often the reader looks for nodes due a reading
# what the gate says of a proven GPU node where it finds no exporter to read (issue 37)
NO_EXPORTER = "no DCGM exporter on the node: passive signals not read"
POD_PAGE = 500  # exporter pods a page (one a GPU node)
MAX_POD_LIST_BYTES = 16 * 2**20  # a page of them: 500 pods of a few KiB each


@dataclass
class _Reading:
    identity: tuple[str, str]  # (uid, boot ID) of the node read: counters reset on reboot
    at: float  # time.monotonic() of the reading
    samples: list[Any]


@dataclass
class _NodeState:
    next_at: float = 0.0
    last: _Reading | None = None
    acted: set[str] = field(default_factory=set)  # signals acted on, this boot
    flagged_run: str | None = None  # due for re-proof while its proof is this run's
    unread_said: tuple[str, str] | None = None  # "no exporter" said for this (uid, boot ID)


def signal_words(s: Signal) -> str:
    """`DCGM_FI_DEV_ECC_DBE_VOL_TOTAL=2 on GPU 3 (...)`: the counter, its value and the GPU."""
    head = s.source + (f"={s.value:g}" if s.value is not None else "")
    gpu = f" on GPU {s.gpu[:16]}" if s.gpu else ""
    return f"{head}{gpu} ({s.text})"


class Exporters:
    """The exporter reader of one gate controller (one per `Gate`)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.lock = threading.Lock()
        self.nodes: dict[str, _NodeState] = {}
        self.reads = 0  # readings judged
        self.failures = 0  # readings that could not be made or read
        # proven GPU nodes whose last look found no exporter pod on them: node -> pool (the
        # metric accelfleet_gate_exporter_unread_nodes; said once per boot, NO_EXPORTER)
        self.unread: dict[str, str] = {}
        # the exporter pods of this step, by node: listed once a step that reads any node
        # (issue 35's scale: a list per node per interval was 5,000 lists a minute at 5,000
        # nodes), None until then
        self._pods: dict[str, list[Any]] | None = None

    # -- the loop ----------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Until `stop`: on the leader, read the exporters of the nodes due a reading."""
        while not stop.wait(TICK_S):
            g = self.gate
            if g.watch is None or not g.watch.synced.is_set() or not g.is_leader():
                continue
            g.guard.guarded("reading the DCGM exporters", self.step)

    def step(self, now: float | None = None) -> None:
        o = self.gate.options
        if o.exporter_namespace is None or o.exporter_interval_s is None:
            return
        now = time.monotonic() if now is None else now
        looked: set[str] = set()
        self._pods = None  # listed afresh, once, by the first read of this step
        for n in self.gate._nodes():
            pool = self.gate.pools.get(n.pool)
            if pool is None or pool.kind != "gpu" or n.state != N.PROVEN or not n.ready \
                    or n.quarantined or n.name in self.gate.inflight:
                continue
            looked.add(n.name)
            with self.lock:
                st = self.nodes.setdefault(n.name, _NodeState())
                if now < st.next_at:
                    continue
                st.next_at = now + o.exporter_interval_s
            try:
                self._read_node(n, pool, st, now)
            except Exception as exc:  # acting on it failed (an API error): said, and the
                # other nodes are still read; tried again at its next interval
                self.failures += 1
                self.gate._problem(K.refused(exc, f"acting on the DCGM exporter of {n.name}")
                                   or f"acting on the DCGM exporter of {n.name}: "
                                   f"{K.status_of(exc) or type(exc).__name__}")
        with self.lock:  # gone, unproven or busy proving: no longer an unread proven node
            for name in [m for m in self.unread if m not in looked]:
                del self.unread[name]

    # -- one node ----------------------------------------------------------------------------
    def _read_node(self, n: N.GateNode, pool: InventoryPool, st: _NodeState,
                   now: float) -> None:
        identity = (n.uid, n.boot_id)
        if st.last is not None and st.last.identity != identity:
            st.last, st.acted = None, set()  # another Node object, or a reboot: afresh
        try:
            text = self.read(n.name)
        except Exception as exc:  # said once per node and kind of failure, never judged
            self.failures += 1
            self.gate._problem(K.refused(exc, f"reading the DCGM exporter of {n.name} "
                                         "(pods/proxy)") or
                               f"the DCGM exporter of {n.name} could not be read "
                               f"({K.status_of(exc) or type(exc).__name__}); its counters "
                               "are not judged until it answers")
            return
        if text is None:  # no exporter pod on the node: nothing is read, nothing judged
            self._unread(n, pool, st)
            return
        with self.lock:
            self.unread.pop(n.name, None)
        try:
            samples = parse_metrics(text)
        except ValueError as exc:
            self.failures += 1
            self.gate._problem(f"the DCGM exporter of {n.name}: {exc}")
            return
        self.reads += 1
        previous = st.last
        st.last = _Reading(identity, now, samples)
        signals = judge_exporter(samples, previous.samples if previous else (),
                                 elapsed_s=(now - previous.at) if previous else None)
        signals = _known(signals, pool)
        fresh = [s for s in signals if s.action in (QUARANTINE, REPROVE)
                 and signal_words(s) not in st.acted]
        if not fresh:
            return
        st.acted.update(signal_words(s) for s in fresh)
        worst = [s for s in fresh if s.action == QUARANTINE] or fresh
        if worst[0].action == QUARANTINE:
            self._fail(n, pool, worst)
        else:
            st.flagged_run = str((n.proof or {}).get("run", ""))
            node = self.gate.watch.get(n.name) or {"metadata": {"name": n.name}}
            self.gate._event(node, "GateHealthSignal", "accelfleet gate: the DCGM exporter "
                             "says " + "; ".join(signal_words(s) for s in worst)
                             + ": re-proof due (idle only, within the pool's "
                             "max_unavailable)", warning=True)

    def _unread(self, n: N.GateNode, pool: InventoryPool, st: _NodeState) -> None:
        """A proven GPU node with no Running exporter pod: counted in the metric while so,
        and said loudly once per boot of the node (a Warning Event on it, the log), never
        once per loop."""
        with self.lock:
            self.unread[n.name] = pool.name
            identity = (n.uid, n.boot_id)
            if st.unread_said == identity:
                return
            st.unread_said = identity
        o = self.gate.options
        words = (f"{NO_EXPORTER} (no Running pod labelled {o.exporter_selector} in namespace "
                 f"{o.exporter_namespace} on {n.name}; the stack's gate.dcgm_exporter, on by "
                 "default, installs it on every GPU node: docs/gate.md \"Between proofs\")")
        LOG.warning("%s: %s", n.name, words)
        node = self.gate.watch.get(n.name) or {"metadata": {"name": n.name}}
        self.gate._event(node, "GateExporterUnread", f"accelfleet gate: {words}",
                         warning=True)

    def read(self, node: str) -> str | None:
        """The exporter's text of `node`, or None when no exporter pod runs there (each
        call answers a Body: `_preload_content=False`, smoke.cluster.access.bounded)."""
        from smoke.cluster.access import Body, bounded

        g, o = self.gate, self.gate.options
        assert o.exporter_namespace is not None
        budget = o.exporter_timeout_s
        if self._pods is None:
            self._pods = self.pods_by_node()
        pod = _running_pod({"items": self._pods.get(node, [])})
        if pod is None:
            return None
        name, port = pod
        body: Body = bounded(  # type: ignore[assignment]
            g.core.connect_get_namespaced_pod_proxy_with_path, f"{name}:{port}",
            o.exporter_namespace, "metrics", _preload_content=False,
            _request_timeout=budget, budget_s=budget, max_bytes=o.exporter_max_bytes)
        if body.truncated:
            raise ValueError(f"the exporter's answer is past {o.exporter_max_bytes:,} bytes "
                             "(GateOptions.exporter_max_bytes)")
        if not 200 <= body.status < 300:
            raise ValueError(f"the exporter's answer has status {body.status}")
        return body.data.decode("utf-8", "replace")

    def pods_by_node(self) -> dict[str, list[Any]]:
        """Every exporter pod (the namespace's pods with the exporter's labels), by the node
        it is bound to: one paged list, each page bounded in time and bytes."""
        from smoke.cluster.access import Body, bounded, pages

        g, o = self.gate, self.gate.options
        budget = o.exporter_timeout_s

        def fetch(token: str | None) -> dict[str, Any]:
            more: dict[str, Any] = {"_continue": token} if token else {}
            listed: Body = bounded(  # type: ignore[assignment]
                g.core.list_namespaced_pod, o.exporter_namespace,
                label_selector=o.exporter_selector, limit=POD_PAGE, _preload_content=False,
                _request_timeout=budget, budget_s=budget, max_bytes=MAX_POD_LIST_BYTES,
                **more)
            if listed.truncated:
                raise ValueError(f"a page of the exporter pods is past "
                                 f"{MAX_POD_LIST_BYTES:,} bytes")
            page = json.loads(listed.data or b"{}")
            return page if isinstance(page, dict) else {}

        items, _ = pages(fetch, what="the DCGM exporter pods")
        out: dict[str, list[Any]] = {}
        for pod in items:
            spec = pod.get("spec") if isinstance(pod, dict) else None
            node = spec.get("nodeName") if isinstance(spec, dict) else None
            if isinstance(node, str):
                out.setdefault(node, []).append(pod)
        return out

    def due(self, node: N.GateNode) -> bool:
        """Whether the exporter asked for `node`'s re-proof since its last proof."""
        with self.lock:
            st = self.nodes.get(node.name)
        if st is None or st.flagged_run is None:
            return False
        if str((node.proof or {}).get("run", "")) != st.flagged_run:
            st.flagged_run = None  # proven again since: the request is met
            return False
        return True

    # -- the failure -------------------------------------------------------------------------
    def _fail(self, n: N.GateNode, pool: InventoryPool, signals: list[Signal]) -> None:
        from smoke.cluster.launcher import new_run_id
        from smoke.gate._cap import quarantine_failed

        g = self.gate
        said = "; ".join(signal_words(s) for s in signals)
        held = g._enforced(pool.name)
        if not held:  # shadow mode: reported, nothing held
            node = g.watch.get(n.name) or {"metadata": {"name": n.name}}
            g._event(node, "GateHealthSignal", f"accelfleet gate: the DCGM exporter says "
                     f"{said}; shadow mode, nothing is held", warning=True)
            return
        on_fail = pool.gate.on_fail if pool.gate is not None else "keep"

        def change(node: dict[str, Any]) -> dict[str, Any] | None:
            now = N.GateNode.of(node)
            if now.state != N.PROVEN or (now.uid, now.boot_id) != (n.uid, n.boot_id):
                return None  # claimed for a proof, or another machine, meanwhile
            return partial(L.failed_patch, on_fail=on_fail)(node)

        patched = K.patch_node(g.core, n.name, change)
        if patched is None:
            return
        run_id = new_run_id()
        reason = f"the DCGM exporter says {said}"
        K.set_condition(g.core, n.name, N.condition(False, "HealthSignal", reason))
        g._event(patched, "GateHealthSignal", f"accelfleet gate: {reason}; the node is held "
                 f"(cordoned, on_fail: {on_fail}) and quarantined within the pool's cap",
                 warning=True)
        g.summary.results[n.name] = NodeResult(n.name, pool.name, FAIL, reason, run_id)
        key = (pool.name, FAIL)
        g.verdict_counts[key] = g.verdict_counts.get(key, 0) + 1
        g.caps.judged(pool.name, [FAIL])
        quarantine_failed(g, _report(run_id, g, pool, n.name, signals), pool, [n.name])


def _known(signals: Iterable[Signal], pool: InventoryPool) -> list[Signal]:
    """The signals the pool's GPU part has (fleet.catalog `health_signals`); the rest (a
    counter the part does not keep) are dropped, never read as healthy or as failing."""
    from fleet.catalog.health import metric_signal, signals_of

    have = signals_of(pool.accelerator)
    return [s for s in signals if have is None or metric_signal(s.source) is None
            or metric_signal(s.source) in have]


def _running_pod(page: Any) -> tuple[str, int] | None:
    """(name, metrics port) of the first Running exporter pod in a pod list; None when none."""
    items = page.get("items") if isinstance(page, dict) else None
    def part(obj: Any, key: str) -> dict[str, Any]:
        got = obj.get(key) if isinstance(obj, dict) else None
        return got if isinstance(got, dict) else {}

    for pod in items if isinstance(items, list) else []:
        if part(pod, "status").get("phase") != "Running":
            continue
        name = part(pod, "metadata").get("name")
        if not isinstance(name, str) or not name:
            continue
        port = DCGM_EXPORTER_PORT
        containers = part(pod, "spec").get("containers")
        for c in containers if isinstance(containers, list) else []:
            for p in (c.get("ports") or []) if isinstance(c, dict) else []:
                number = p.get("containerPort") if isinstance(p, dict) else None
                if isinstance(p, dict) and p.get("name") == DCGM_EXPORTER_PORT_NAME and \
                        type(number) is int and 0 < number < 65536:
                    port = number
        return name, port
    return None


def _report(run_id: str, gate: Gate, pool: InventoryPool, node: str,
            signals: list[Signal]) -> Any:
    """A run report that says the node failed on the exporter's word (what the quarantine
    records on the node and in its Event)."""
    from datetime import UTC, datetime

    from smoke.cluster.run import NodeOutcome, PoolReport, PoolStatus, RunReport
    from smoke.probes.names import GPU_HEALTH
    from smoke.probes.results import HostReport, ProbeResult, Verdict
    from smoke.probes.verdict import THRESHOLDS_VERSION

    results = tuple(ProbeResult(f"gpu{s.gpu}" if s.gpu else "host", GPU_HEALTH, 0,
                                Verdict.FAIL, f"DCGM exporter: {signal_words(s)}",
                                measured=s.value, details={"metric": s.source,
                                                           "cite": s.cite})
                    for s in signals if s.action == QUARANTINE)
    host = HostReport(node, "dcgm-exporter", "gpu", {}, 0, results,
                      accelerator=pool.accelerator, thresholds_version=THRESHOLDS_VERSION)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return RunReport(run_id, gate.inventory.stack, now, 0.0, THRESHOLDS_VERSION, "", (
        PoolReport(pool.name, gate.cluster, pool.accelerator, "dcgm-exporter", 1,
                   PoolStatus.DONE, (NodeOutcome(0, "", node, host, 1),)),))
