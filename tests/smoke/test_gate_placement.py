"""A gate batch whose pods were not one per node (issue 34, found on the real control plane by
benchmarks/bench_gate.py --real): the real scheduler placed a pending proof pod on a node whose
first proof pod had already finished (a finished pod no longer counts for the pods'
anti-affinity) while the batch's nodes turned schedulable one by one. The node with two pods
is judged on its own two reports (both its own); the node no pod ran on is not proven and is
proved again; neither is failed for the placement. Before: the node with two pods FAILED
("one node's proof cannot stand for another's") and went to quarantine, healthy."""

from __future__ import annotations

from smoke.cluster._rejudge import coverage
from smoke.cluster.run import NodeOutcome, PoolReport, PoolStatus, RunReport
from smoke.gate._proof import FAIL, INFRA, PASS, Unit, judge
from smoke.probes.results import HostReport, ProbeResult, Verdict


def _report(host: str, verdict: Verdict = Verdict.PASS) -> HostReport:
    return HostReport(host=host, backend="torch", platform="gpu", versions={}, tier=2,
                      results=(ProbeResult("cuda0", "known_answer", 1, verdict, "recorded",
                                           2e-4, 5e-3, "rel err"),))


def _run(outcomes: tuple[NodeOutcome, ...], targets: tuple[str, ...]) -> RunReport:
    checks = tuple(coverage(outcomes, targets))
    pool = PoolReport("h100-train", "ml-gke", "a3-highgpu-8g", "w", len(targets),
                      PoolStatus.DONE, outcomes, checks=checks)
    return RunReport(run_id="r1", stack="s", started_at="", duration_s=1.0,
                     thresholds_version="t", agent_digest="", pools=(pool,))


def test_two_pods_on_one_node_of_a_batch_fail_neither_node() -> None:
    a, b, c = "gke-a", "gke-b", "gke-c"
    unit = Unit("h100-train", (a, b, c), independent=True)
    outcomes = (NodeOutcome(0, "p-0", a, _report(a), 0), NodeOutcome(1, "p-1", b, _report(b), 0),
                NodeOutcome(2, "p-2", a, _report(a), 0))  # pod 2 went to a, not c
    got = judge(_run(outcomes, unit.nodes), unit)
    assert got.verdicts == {a: PASS, b: PASS, c: INFRA}, got.reasons
    assert "never ran on the node" in got.reasons[c]


def test_a_node_with_two_pods_still_fails_on_its_own_results() -> None:
    a, b = "gke-a", "gke-b"
    unit = Unit("h100-train", (a, b), independent=True)
    outcomes = (NodeOutcome(0, "p-0", a, _report(a), 0),
                NodeOutcome(1, "p-1", a, _report(a, Verdict.FAIL), 0))
    got = judge(_run(outcomes, unit.nodes), unit)
    assert got.verdicts == {a: FAIL, b: INFRA}, got.reasons
    assert "known_answer" in got.reasons[a] and "one pod per node" not in got.reasons[a]
