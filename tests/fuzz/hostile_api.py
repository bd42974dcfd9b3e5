"""The fuzz run's hostile-API angle (issue 30): `accelfleet smoke run --quarantine` against the
tests' fake API server with lying rules in front of it (`FakeCluster.lie`): answers that say
pods ran where they did not, that lack metadata or hold the wrong types, refusals (403, 409,
503) where the real server may give them, a namespace another run made meanwhile.

Issue 29 adds the server that never finishes (ANGLES, `FakeCluster.hostile` and
`endless_pages`): an answer dripped byte by byte, an answer that never ends, a list that pages
for ever, a pod log without end, on the run's calls and on its cleanup's. Such a case holds
when the run also ends by its deadline (its timeout, the run's grace, the cleanup's budget:
`deadline_s`), never hangs. `run_interrupt_case` sends SIGINT or SIGTERM to the console
process while an answer drips in: it exits 130 within seconds and leaves nothing behind.

The real server's answers are the fake's; each rule changes one answer as a broken or hostile
server (or a proxy in front of one) would. A case holds when the run
- exits 0, 1 or 2 (never 3, never a traceback), within its deadline;
- passes (exit 0) only with every node of the pool judged once, from its own report;
- keeps what it measured: run.json, JUnit and the history row whenever a node was tested.

    case = random_case(random.Random(7))
    outcome = run_api_case(case, Path(tmp))
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fuzz.harness import CRASH, _invoke
from tests.stacks import ONE_GKE_CLUSTER

NODES = 3
NAMESPACE = "smoke-test"
STRANGER = "gke-stranger-default-pool-0"


def _items(answer: Any) -> list[Any]:
    return list(answer.get("items") or []) if isinstance(answer, dict) else []


def _on_pods(change: Callable[[dict[str, Any], int], None]) -> Callable[[Any], Any]:
    def rule(answer: Any) -> Any:
        for i, pod in enumerate(_items(answer)):
            if isinstance(pod, dict):
                change(pod, i)
        return answer
    return rule


def _set_node(node: str | None) -> Callable[[dict[str, Any], int], None]:
    def change(pod: dict[str, Any], i: int) -> None:
        spec = pod.setdefault("spec", {})
        if spec.get("nodeName"):
            if node is None:
                spec.pop("nodeName")
            else:
                spec["nodeName"] = node
    return change


def _refuse(code: int, reason: str, message: str) -> Callable[[Any], Any]:
    def rule(answer: Any) -> Any:
        from tests.smoke.fakekube import ApiError

        raise ApiError(code, reason, message)
    return rule


def _drop(*keys: str) -> Callable[[Any], Any]:
    def rule(answer: Any) -> Any:
        targets = [answer, *_items(answer)]
        for t in targets:
            if isinstance(t, dict):
                for key in keys:
                    t.pop(key, None)
        return answer
    return rule


def _set(path: tuple[str, ...], value: Any) -> Callable[[Any], Any]:
    def rule(answer: Any) -> Any:
        for t in [answer, *_items(answer)]:
            node = t
            for key in path[:-1]:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node[path[-1]] = value
        return answer
    return rule


def _garbage_items(answer: Any) -> Any:
    if isinstance(answer, dict):
        answer["items"] = [42, "pod", None, {"metadata": None}]
    return answer


def _not_an_object(answer: Any) -> Any:
    return ["not", "an", "object"]


CONFLICT = ("Operation cannot be fulfilled on nodes \"x\": the object has been modified; "
            "please apply your changes to the latest version and try again")
# name -> (method, path part, rule); each a way a real API server (or a proxy) can answer
LIES: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    "pods-all-on-one-node": ("GET", f"/namespaces/{NAMESPACE}/pods", _on_pods(
        lambda pod, i: _set_node("@first")(pod, i))),
    "pod-on-a-stranger": ("GET", f"/namespaces/{NAMESPACE}/pods", _on_pods(
        lambda pod, i: _set_node(STRANGER)(pod, i) if i == 0 else None)),
    "pod-without-node": ("GET", f"/namespaces/{NAMESPACE}/pods", _on_pods(
        lambda pod, i: _set_node(None)(pod, i) if i == 0 else None)),
    "pods-without-metadata": ("GET", f"/namespaces/{NAMESPACE}/pods", _drop("metadata")),
    "pods-items-garbage": ("GET", f"/namespaces/{NAMESPACE}/pods", _garbage_items),
    "pods-list-not-an-object": ("GET", f"/namespaces/{NAMESPACE}/pods", _not_an_object),
    "pod-phase-unknown": ("GET", f"/namespaces/{NAMESPACE}/pods", _set(("status", "phase"),
                                                                         "Exploded")),
    "pod-exit-code-text": ("GET", f"/namespaces/{NAMESPACE}/pods", _set(
        ("status", "containerStatuses"), [{"state": {"terminated": {"exitCode": "zero"}}}])),
    "nodes-list-garbage": ("GET", "/api/v1/nodes", _garbage_items),
    "node-without-metadata": ("GET", "/api/v1/nodes/", _drop("metadata")),
    "node-not-an-object": ("GET", "/api/v1/nodes/", _not_an_object),
    "node-without-resource-version": ("GET", "/api/v1/nodes/", _set(
        ("metadata", "resourceVersion"), None)),
    "node-patch-forbidden": ("PATCH", "/api/v1/nodes/", _refuse(
        403, "Forbidden", 'nodes "x" is forbidden: User "ci" cannot patch resource "nodes" '
        'in API group "" at the cluster scope')),
    "node-patch-conflict": ("PATCH", "/api/v1/nodes/", _refuse(409, "Conflict", CONFLICT)),
    "node-patch-answer-garbage": ("PATCH", "/api/v1/nodes/", _drop("metadata", "spec")),
    "namespace-made-meanwhile": ("GET", f"/api/v1/namespaces/{NAMESPACE}", _refuse(
        404, "NotFound", f'namespaces "{NAMESPACE}" not found')),
    "configmap-answer-lost": ("POST", "/configmaps", _refuse(
        503, "ServiceUnavailable", "the server is currently unable to handle the request")),
    "events-forbidden": ("POST", "/events", _refuse(
        403, "Forbidden", 'events is forbidden: User "ci" cannot create resource "events"')),
    "log-garbage": ("GET", "/log", lambda answer: "\x00\x1b[31m garbage {\"kind\": 1}"),
    "log-empty": ("GET", "/log", lambda answer: ""),
    "log-twice": ("GET", "/log", lambda answer: answer + "\n" + answer
                  if isinstance(answer, str) else answer),
}


DRIP_S = 0.05  # between two bytes of a dripped answer: a pod list takes minutes so
# (urllib3's read timeout, which restarts with each byte, never fires)
# name -> how the fake sends the answers the run needs wrong (issue 29); `times` as for lies
ANGLES: dict[str, Callable[[Any, int], None]] = {
    "drip-pod-list": lambda c, n: c.hostile("GET", f"/namespaces/{NAMESPACE}/pods", "drip",
                                            delay_s=DRIP_S, times=n),
    "endless-pod-list": lambda c, n: c.hostile("GET", f"/namespaces/{NAMESPACE}/pods",
                                               "endless", times=n),
    "endless-pages": lambda c, n: c.endless_pages(f"/namespaces/{NAMESPACE}/pods", times=n),
    "endless-log": lambda c, n: c.hostile("GET", "/log", "endless", times=n),
    "drip-log": lambda c, n: c.hostile("GET", "/log", "drip", delay_s=DRIP_S, times=n),
    "drip-node-list": lambda c, n: c.hostile("GET", "/api/v1/nodes", "drip", delay_s=DRIP_S,
                                             times=n),
    "drip-create": lambda c, n: c.hostile("POST", f"/namespaces/{NAMESPACE}/", "drip",
                                          delay_s=DRIP_S, times=n),
    "drip-cleanup": lambda c, n: c.hostile("DELETE", f"/namespaces/{NAMESPACE}/", "drip",
                                           delay_s=DRIP_S, times=n),
}
HOSTILE_TIMEOUT_S = 5  # `--timeout-s` of a case with an angle: its deadline comes soon
RUN_GRACE_S = 2.0  # the run's grace past its timeout, in such a case (launcher.RUN_GRACE_S)
CLEANUP_S = 5.0  # the cleanup's budget, in such a case (launcher.CLEANUP_S)


@dataclass(frozen=True)
class ApiCase:
    lies: tuple[tuple[str, int], ...]  # (lie, times: -1 always)
    slow_node: bool  # one node's figure below its peers (so quarantine acts)
    angles: tuple[tuple[str, int], ...] = ()  # (angle, times: -1 always)

    def to_dict(self) -> dict[str, Any]:
        return {"lies": [list(x) for x in self.lies], "slow_node": self.slow_node,
                "angles": [list(x) for x in self.angles]}

    @property
    def timeout_s(self) -> int:
        return HOSTILE_TIMEOUT_S if self.angles else 30

    def deadline_s(self) -> float:
        """How long the run may take at most: before the run, each call's bound (the
        preflight's 10 s, a node list's 30 s twice, with retries); the run's timeout and
        grace; the cleanup's budget. A case past it (plus a margin for a loaded machine) is
        a hang."""
        from smoke.cluster._api import CALL_CAP_S

        grace, cleanup = (RUN_GRACE_S, CLEANUP_S) if self.angles else (20.0, 15.0)
        return 10.0 + 2 * CALL_CAP_S + self.timeout_s + grace + cleanup


def random_case(rng: random.Random, *, angles: bool = False) -> ApiCase:
    names = sorted(LIES)
    lies = tuple((rng.choice(names), rng.choice((1, 2, -1)))
                 for _ in range(rng.randint(1, 2)))
    case = ApiCase(lies, rng.random() < 0.7)
    if angles and rng.random() < 0.6:
        hostile = tuple((rng.choice(sorted(ANGLES)), rng.choice((1, 2, -1)))
                        for _ in range(rng.randint(1, 2)))
        case = ApiCase(lies if rng.random() < 0.3 else (), case.slow_node, hostile)
    return case


@dataclass(frozen=True)
class ApiOutcome:
    code: int
    traceback: bool
    passed_untested: str  # why a pass (exit 0) was not backed by every node's own report
    lost: str  # what was measured but not kept
    seconds: float
    output: str
    past_deadline: str = ""  # how far past its deadline the run ended ("" when it did not)


STACK = ONE_GKE_CLUSTER + """\
    smoke:
      namespace: smoke-test
      timeout_s: 30
    pools:
      - {name: gpu-a, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 3,
         zone: us-central1-a}
"""


def run_api_case(case: ApiCase, workdir: Path) -> ApiOutcome:
    """One run of `smoke run --quarantine` against the fake cluster with the case's lies."""
    import smoke.expectations
    from smoke.probes.expect import Expectation
    from tests.smoke.fakekube import FakeCluster
    from tests.smoke.nodes import pool_node
    from tests.smoke.test_cluster_run import _recorded, stack_pools

    stack = workdir / "Pulumi.fuzz.yaml"
    stack.write_text(STACK, encoding="utf-8")
    cluster = FakeCluster(workdir / "cluster").start()
    from smoke.cluster import launcher

    real_for_pool = smoke.expectations.for_pool
    smoke.expectations.for_pool = lambda pool, backend: Expectation()  # type: ignore
    bounds = launcher.RUN_GRACE_S, launcher.CLEANUP_S
    if case.angles:  # a near deadline, so that a bounded case ends in seconds
        launcher.RUN_GRACE_S, launcher.CLEANUP_S = RUN_GRACE_S, CLEANUP_S
    try:
        pool = stack_pools(STACK)["gpu-a"]
        nodes = [f"gpu-a-node-{i}" for i in range(NODES)]
        for i, name in enumerate(nodes):
            cluster.add_node_object(pool_node(pool, name))
            slow = case.slow_node and i == NODES - 1
            cluster.set_node_output(name, _recorded(name, 640.0 if slow else 800.0))
        for lie, times in case.lies:
            method, path, rule = LIES[lie]
            if lie == "pods-all-on-one-node":
                rule = _on_pods(lambda pod, i: _set_node(nodes[0])(pod, i))
            if lie == "namespace-made-meanwhile":
                if cluster.get("namespaces", "", NAMESPACE) is None:
                    cluster.create("namespaces", "", {"metadata": {"name": NAMESPACE}})
                times = 1
            cluster.lie(method, path, rule, times=times)
        for angle, times in case.angles:
            ANGLES[angle](cluster, times)
        out = workdir / "out"
        history = workdir / "history.sqlite"
        kc = cluster.kubeconfig(workdir / "kubeconfig", context="fake")
        started = time.perf_counter()
        code, text = _invoke("smoke", "run", str(stack), "--kubeconfig", str(kc), "--context",
                             "c1=fake", "--quarantine", "--out", str(out), "--history",
                             str(history), "--timeout-s", str(case.timeout_s))
        seconds = time.perf_counter() - started
    finally:
        smoke.expectations.for_pool = real_for_pool  # type: ignore[assignment]
        launcher.RUN_GRACE_S, launcher.CLEANUP_S = bounds
        cluster.stop()
    run_doc = _read_json(out / "run.json")
    late = seconds - case.deadline_s()
    return ApiOutcome(code, CRASH.search(text) is not None, _untested_pass(code, run_doc, nodes),
                      _lost(code, run_doc, out, history), seconds, text[-8000:],
                      f"{late:.1f} s past its deadline" if late > 0 else "")


@dataclass(frozen=True)
class InterruptOutcome:
    code: int | None  # None: still running at the hang guard (killed then)
    seconds_after_signal: float
    left: list[str]  # the run's objects still on the server after it ended
    output: str


INTERRUPT_HANG_S = 60.0  # after the signal: the run ends within seconds, the cleanup's
# budget (CLEANUP_S) included; past this it is a hang
PULL_S = 0.05


def run_interrupt_case(sig: int, angle: str, workdir: Path) -> InterruptOutcome:
    """`accelfleet smoke run` as a console process (`python -m cli`) against the fake on
    loopback, the pool's pods running, `angle` holding the run's next answers; `sig` once a
    dripped answer is under way. The run must end within seconds, exit 130, and delete what it
    made."""
    import os
    import signal as signals
    import subprocess
    import sys

    from tests.smoke.fakekube import FakeCluster
    from tests.smoke.nodes import pool_node
    from tests.smoke.test_cluster_run import RUN_LABEL, stack_pools

    root = Path(__file__).resolve().parents[2]
    stack = workdir / "Pulumi.fuzz.yaml"
    stack.write_text(STACK, encoding="utf-8")
    cluster = FakeCluster(workdir / "cluster").start()
    try:
        pool = stack_pools(STACK)["gpu-a"]
        for i in range(NODES):
            name = f"gpu-a-node-{i}"
            cluster.add_node_object(pool_node(pool, name))
            cluster.set_node_command(name, [sys.executable, "-c",
                                            "import time; time.sleep(600)"])
        kc = cluster.kubeconfig(workdir / "kubeconfig", context="fake")
        previous = signals.signal(signals.SIGINT, signals.default_int_handler)
        try:  # the child gets the default SIGINT, as a shell gives a command it runs
            proc = subprocess.Popen(
                [sys.executable, "-m", "cli", "smoke", "run", str(stack), "--kubeconfig",
                 str(kc), "--context", "c1=fake", "--timeout-s", "300"], cwd=root,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"})
        finally:
            signals.signal(signals.SIGINT, previous)
        try:
            _until(lambda: len([o for o in cluster.objects(RUN_LABEL) if o.get("kind") == "Pod"
                                and (o.get("status") or {}).get("phase") == "Running"])
                   == NODES, proc)
            seen = len(cluster.requests)
            ANGLES[angle](cluster, -1)
            _until(lambda: any(m == "GET" and "/pods" in path
                               for m, path in cluster.requests[seen:]), proc)
            time.sleep(4 * DRIP_S)  # a few bytes of the answer are out: it drips now
            proc.send_signal(sig)
            sent = time.monotonic()
            try:
                _, err = proc.communicate(timeout=INTERRUPT_HANG_S)
                code: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                code = None
            after = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        left = [f"{o.get('kind')}/{o['metadata'].get('name')}"
                for o in cluster.objects(RUN_LABEL)]
    finally:
        cluster.stop()
    return InterruptOutcome(code, after, left, err[-2000:])


def _until(done: Callable[[], bool], proc: Any, limit_s: float = 60.0) -> None:
    end = time.monotonic() + limit_s
    while not done():
        if proc.poll() is not None or time.monotonic() > end:
            raise AssertionError("the run ended, or never got there: "
                                 + (proc.communicate()[1] or "")[-2000:])
        time.sleep(PULL_S)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _untested_pass(code: int, doc: dict[str, Any] | None, nodes: list[str]) -> str:
    """Why an exit 0 is not backed by every node's own report ("" when it is, or no pass)."""
    if code != 0:
        return ""
    if doc is None:
        return "exit 0 with no run.json"
    reported: list[str] = []
    for pool in doc.get("pools") or []:
        for n in pool.get("nodes") or []:
            report = n.get("report") or {}
            if report.get("results"):
                if report.get("host") != n.get("node"):
                    return f"node {n.get('node')} passed on a report of {report.get('host')}"
                reported.append(str(n.get("node")))
    if sorted(reported) != sorted(nodes):
        return f"exit 0 with reports from {sorted(reported)}, the pool has {nodes}"
    return ""


def _lost(code: int, doc: dict[str, Any] | None, out: Path, history: Path) -> str:
    """What a run that tested something did not keep ("" when all of it was kept)."""
    if code not in (0, 1):
        return ""
    if doc is None:
        return "no run.json" if code == 1 else ""
    if not doc.get("nodes_tested"):
        return ""
    if not (out / "junit.xml").is_file():
        return "no junit.xml"
    try:
        with sqlite3.connect(f"{history.resolve().as_uri()}?mode=ro", uri=True) as conn:
            runs = conn.execute("SELECT run_id FROM runs").fetchall()
    except sqlite3.Error as exc:
        return f"no history ({exc})"
    return "" if runs == [(doc.get("run_id"),)] else f"history holds {runs}"
