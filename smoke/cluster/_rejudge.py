"""The launcher judges every node's report itself: pod output is untrusted input.

A pod's agent judged its node, but what it printed is only a claim: a report can drop its
failing result, carry a NaN, pass a figure below the registry's floor, or hold no result at
all. `rejudge` takes the figures (never the verdicts) of one node's report and judges them
again against the registry, with the expectation and tier the launcher rendered for the pool:

- every figure is judged again (T0 memory, T1 known answer and checksums, psum, T2 floors and
  host outliers, T3 bandwidth floors, the cross-node floor of the pool's machine and fabric);
  a result ends with the worse of the pod's verdict and the launcher's (a pod may know more,
  e.g. the transport NCCL used; it can never know less);
- a figure that is not a finite number fails;
- the report must cover every device and probe the pool's shape and tier call for: each one
  missing fails, named;
- a report with no result fails.

Which line is the report: the agent prints exactly one host document (kind
accelfleet.smoke/host), as the last line of its stdout. A log holding two (a passing one
printed after a failing one must not win) is no report; the pod is failed, naming why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from smoke.cluster.run import REPORT, WORKLOAD, Check
from smoke.probes import verdict as V
from smoke.probes.backend import KnownAnswer
from smoke.probes.expect import Expectation
from smoke.probes.results import DOCUMENT_KIND, HostReport, ProbeResult, Verdict, node_median
from smoke.probes.sustain import burst_checks
from smoke.probes.thresholds import fabric_threshold

if TYPE_CHECKING:
    from smoke.cluster.run import NodeOutcome
    from smoke.cluster.workload import PoolWorkload



@dataclass(frozen=True)
class PoolPlan:
    """What every node report of a pool must hold, as the launcher rendered the pool."""

    expectation: Expectation
    tier: int
    cross_node: bool  # the pool-wide collective runs (tier 3 on two or more nodes)
    machine: str | None = None
    fabric: str | None = None  # the catalog's fabric kind; None: NCCL over sockets
    backend: str = "torch"
    networks: tuple[str, ...] = ()  # the names NCCL may print for the fabric (any one)
    sustain: bool = True  # tier 2 includes the sustained phase (the agent's --sustain-s > 0)

    @classmethod
    def of(cls, w: PoolWorkload) -> PoolPlan:
        networks: tuple[str, ...] = ()
        if w.pool.gpu_networking:
            from fleet.catalog import load_catalog

            fabric = load_catalog().fabrics.get(w.pool.gpu_networking)
            networks = tuple(fabric.nccl_networks) if fabric else ()
        return cls(expectation=w.expectation or Expectation(), tier=w.tier,
                   cross_node=w.tier >= 3 and w.pods >= 2, machine=w.pool.machine_type,
                   fabric=w.pool.gpu_networking, backend=w.backend, networks=networks,
                   sustain=w.sustain)

    def devices(self, report: HostReport) -> list[str]:
        """The device names the report must cover: the expectation's count where it has one,
        else the devices the report's own inventory lists."""
        exp = self.expectation
        if exp.devices is not None and exp.accelerator is not None:
            prefix = "cuda" if exp.accelerator.kind == "gpu" and self.backend == "torch" \
                else exp.accelerator.kind
            return [f"{prefix}{i}" for i in range(exp.devices)]
        return [r.device for r in report.results
                if r.probe == V.INVENTORY and r.verdict is not Verdict.SKIPPED]


def _fail(device: str, probe: str, reason: str) -> ProbeResult:
    return ProbeResult(device, probe, V.TIERS.get(probe, 0), Verdict.FAIL, reason,
                       unit=V.UNITS.get(probe, ""), details={"judged_by": "launcher"})


def _coverage(report: HostReport, plan: PoolPlan) -> list[ProbeResult]:
    """A FAIL for each device and probe the pool's shape and tier call for that the report
    lacks (a skipped per-device figure counts as lacking)."""
    devices = plan.devices(report)
    have = {(r.device, r.probe) for r in report.results if r.verdict is not Verdict.SKIPPED}
    have_any = {(r.device, r.probe) for r in report.results}
    missing: list[ProbeResult] = []
    why = f"missing from the report: tier {plan.tier} on this pool calls for it"
    if not devices:
        missing.append(_fail(V.HOST, V.INVENTORY, "the report lists no device"))
    per_device = [V.INVENTORY]
    if plan.tier >= 1:
        per_device.append(V.KNOWN_ANSWER)
    if plan.tier >= 2:
        per_device += [V.MATMUL, V.MEMORY] + ([V.SUSTAINED] if plan.sustain else [])
    for probe in per_device:
        missing += [_fail(d, probe, why) for d in devices if (d, probe) not in have]
    if plan.tier >= 1 and plan.backend == "jax" and (V.HOST, V.PSUM) not in have:
        missing.append(_fail(V.HOST, V.PSUM, why))
    if plan.tier >= 3:
        host_ok = have if len(devices) >= 2 else have_any
        if (V.HOST, V.ALLREDUCE) not in host_ok:
            missing.append(_fail(V.HOST, V.ALLREDUCE, why))
        if plan.cross_node and (V.FABRIC_DEVICE, V.FABRIC) not in have:
            missing.append(_fail(V.FABRIC_DEVICE, V.FABRIC, why + " (the pool-wide "
                                 "collective)"))
    return missing


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _figures(results: Sequence[ProbeResult], probe: str) -> dict[str, float]:
    return {r.device: r.measured for r in results
            if r.probe == probe and r.measured is not None}


def _judge_figures(report: HostReport, plan: PoolPlan) -> dict[tuple[str, str], ProbeResult]:
    """The launcher's own verdict on each figure of the report, by (device, probe)."""
    exp, rs = plan.expectation, report.results
    mine: list[ProbeResult] = []
    for probe in (V.MATMUL, V.MEMORY):
        mine += V.judge_perf(probe, _figures(rs, probe), exp)
    answers = {r.device: KnownAnswer(r.measured, _number(r.details.get("checksum")))
               for r in rs if r.probe == V.KNOWN_ANSWER and r.measured is not None}
    if all(math.isfinite(a.checksum) for a in answers.values()):
        mine += V.judge_known_answer(answers)
    else:  # a checksum missing or not a number: the devices cannot be compared
        mine += [_fail(d, V.KNOWN_ANSWER, "the checksum is missing or not a number")
                 for d, a in answers.items() if not math.isfinite(a.checksum)]
        mine += V.judge_known_answer({d: KnownAnswer(a.max_rel_error, 0.0)
                                      for d, a in answers.items()})
    for r in rs:
        if r.measured is None:
            continue
        if r.probe == V.INVENTORY and exp.memory_gib and r.measured < \
                V.MEMORY_TOLERANCE * exp.memory_gib:
            v = Verdict.FAIL if exp.verified else Verdict.WARN
            mine.append(replace(r, verdict=v, reason=f"{r.measured:.1f} GiB < "
                                f"{V.MEMORY_TOLERANCE:.2f} x {exp.memory_gib:g} GiB expected"))
        elif r.probe == V.PSUM and (want := float(exp.devices) if exp.devices else
                                    r.expected) is not None and r.measured != want:
            mine.append(replace(r, verdict=Verdict.FAIL, reason=f"psum {r.measured:g}, "
                                f"expected {want:g} (the pool's devices per host)"))
        elif r.probe in (V.ALLREDUCE, V.FABRIC) and exp.accelerator is not None:
            th = (V.threshold(exp.accelerator.key, V.ALLREDUCE, plan.machine)
                  if r.probe == V.ALLREDUCE else fabric_threshold(plan.machine, plan.fabric,
                                                                   exp.accelerator.key))
            size = r.details.get("bytes_per_device")
            checks, _ = V.bandwidth_checks(r.measured, size if isinstance(size, int) else None,
                                           th)
            v, reason = V.worst_check(checks)
            mine.append(replace(r, verdict=v, reason=reason))
    burst = _figures(rs, V.MATMUL)
    sustain_th = V.threshold(exp.accelerator.key if exp.accelerator else None, V.SUSTAINED)
    for r in rs:  # the sustained figure against the device's own burst figure
        b = burst.get(r.device)
        if (r.probe != V.SUSTAINED or r.measured is None or not b or b <= 0
                or sustain_th.floor_ratio is None or exp.accelerator is None):
            continue
        for verdict, reason in burst_checks(r.measured, b, sustain_th):
            mine.append(replace(r, verdict=verdict, reason=reason))
    for r in rs:  # the transport the pod says NCCL used must be the pool's fabric
        seen = r.details.get("transports_seen")
        if r.probe == V.FABRIC and plan.networks and isinstance(seen, list):
            names = {n.lower() for n in plan.networks}
            wrong = sorted({str(n) for n in seen if str(n).lower() not in names})
            if wrong or not seen:
                mine.append(replace(r, verdict=Verdict.FAIL, reason=(
                    f"NCCL used {', '.join(wrong)}" if wrong else "no transport named")
                    + f", not the pool's fabric ({' or '.join(plan.networks)})"))
    for r in rs:  # a figure that is not a number fails, whatever the probe
        if r.measured is not None and not math.isfinite(r.measured):
            mine.append(replace(r, verdict=Verdict.FAIL,
                                reason=f"the figure is not a number ({r.measured})"))
    out: dict[tuple[str, str], ProbeResult] = {}
    for r in mine:
        key = (r.device, r.probe)
        if key not in out or r.verdict.rank > out[key].verdict.rank:
            out[key] = r
    return out


def pair_figure(report: HostReport, plan: PoolPlan) -> tuple[float | None, str]:
    """A pair-round pod's 2-node busbw, judged centrally; (None, why) when the pair's
    collective did not prove the fabric: no figure or not a number, the pod's own FAIL (the
    agent is given no floor, so its FAIL is the sum, the transport, GPUDirect RDMA or the NICs
    as NCCL logged them), or NCCL on a transport that is not the pool's fabric."""
    fabric = [r for r in report.results if r.probe == V.FABRIC]
    if not fabric:
        return None, "the pair's report holds no cross-node result"
    r = fabric[0]
    if r.measured is None or not math.isfinite(r.measured):
        return None, r.reason or "no figure"
    if r.verdict is Verdict.FAIL:
        return None, r.reason
    seen = r.details.get("transports_seen")
    if plan.networks and isinstance(seen, list):
        names = {n.lower() for n in plan.networks}
        wrong = sorted({str(n) for n in seen if str(n).lower() not in names})
        if wrong or not seen:
            return None, ((f"NCCL used {', '.join(wrong)}" if wrong else "no transport named")
                          + f", not the pool's fabric ({' or '.join(plan.networks)})")
    return r.measured, ""


def _wrong_host(report: HostReport, node: str | None) -> tuple[ProbeResult, ...]:
    """A FAIL when the report names another host than the node its pod ran on (the agent
    names the node from NODE_NAME, which the workload sets from the pod's spec.nodeName)."""
    if node is None or report.host == node:
        return ()
    bad = _fail(V.HOST, REPORT, f"the report names host {report.host!r} but its pod ran on "
                f"node {node!r}: its results cannot be trusted as this node's")
    return (replace(bad, details={**bad.details, "report_host": report.host,
                                  "pod_node": node}),)


def rejudge(report: HostReport, plan: PoolPlan, *, node: str | None = None) -> HostReport:
    """`report` with every result judged again by the launcher (the worse verdict wins), and a
    FAIL for each missing device or probe; a report with no results fails, and so does one
    naming another host than `node`, the node its pod ran on (when known)."""
    wrong = _wrong_host(report, node)
    if not report.results:
        return replace(report, results=(_fail(V.HOST, REPORT, "the report holds no results: "
                                              "nothing on this node was judged"), *wrong))
    mine = _judge_figures(report, plan)
    out = []
    for r in report.results:
        own = mine.get((r.device, r.probe))
        if own is not None and own.verdict.rank > r.verdict.rank:
            r = replace(r, verdict=own.verdict, reason=f"launcher: {own.reason}",
                        details={**r.details, "judged_by": "launcher",
                                 "pod_verdict": r.verdict.value, "pod_reason": r.reason})
        out.append(r)
    return replace(report, results=(*out, *_coverage(report, plan), *wrong))


def host_documents(log: str) -> list[str]:
    """Every line of `log` that is a whole JSON object of kind accelfleet.smoke/host."""
    out = []
    for line in log.splitlines():
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}") and DOCUMENT_KIND in line):
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == DOCUMENT_KIND:
            out.append(line)
    return out


def parse_host_report(log: str) -> HostReport | None:
    """The agent's HostReport. The agent prints exactly one host document, as its last line of
    stdout; a log holding none, or two (a passing one after a failing one must not win: the
    pod's output is untrusted), or one that does not read as a report, gives None."""
    docs = host_documents(log)
    if len(docs) != 1:
        return None
    try:
        return HostReport.from_dict(json.loads(docs[0]))
    except Exception:
        return None


def pool_outliers(outcomes: Iterable[NodeOutcome]) -> list[Check]:
    """A node whose T2 or bandwidth figures fall below its peers' (accelerators only: CPUs
    share cores). A figure that is not a number is no peer (it fails on its own)."""
    checks: list[Check] = []
    for probe in (V.MATMUL, V.MEMORY, V.ALLREDUCE, V.FABRIC):
        by_node: dict[str, float] = {}
        for o in outcomes:
            if o.report is None or o.report.platform not in ("gpu", "tpu"):
                continue
            value = node_median(o.report.results, probe)
            if value is not None:
                by_node[o.node or o.pod] = value
        checks += [Check(node, r) for node, r in V.judge_pool_outliers(probe, by_node)]
    return checks


COVERAGE = "coverage"  # the details key of a coverage check: never a node's own failure


def _uncovered(node: str, probe: str, rule: str, reason: str) -> Check:
    r = _fail(V.HOST, probe, reason)
    return Check(node, replace(r, details={**r.details, COVERAGE: rule}))


def coverage(outcomes: Iterable[NodeOutcome], targets: Sequence[str] | None, *,
             every_target: bool = True) -> list[Check]:
    """The pool's node coverage, judged centrally (the API's pod placement is evidence to
    check, not truth): each node of `targets` (the nodes the run sized the pool to) needs
    exactly one judged report from a pod that ran on it. A FAIL, naming the node, for a report
    whose pod's node is unknown, for two or more pods reporting from one node (neither stands
    for another node), for a report from a node outside `targets` and, with `every_target`,
    for each target with no report. `targets` None: the nodes are not known before the run
    (the pool had no live node); only the first two rules apply. A coverage check is never
    a node's own failure (`details["coverage"]` names the rule): quarantine leaves the node
    alone."""
    by_node: dict[str, list[str]] = {}
    checks: list[Check] = []
    for o in outcomes:
        if o.report is None:  # a pod with no report is named by its own check already
            continue
        if not o.node:
            checks.append(_uncovered(o.pod, REPORT, "no-node", (
                f"pod {o.pod} printed a report but the API names no node it ran on: its "
                "results cannot be attributed to a node")))
            continue
        by_node.setdefault(o.node, []).append(o.pod)
    for node, pods in sorted(by_node.items()):
        if len(pods) > 1:
            checks.append(_uncovered(node, REPORT, "duplicate", (
                f"{len(pods)} pods ({', '.join(sorted(pods))}) report from this node where "
                "one pod per node runs: one node's proof cannot stand for another's")))
    if targets is None:
        return checks
    wanted = set(targets)
    for node in sorted(set(by_node) - wanted):
        checks.append(_uncovered(node, REPORT, "outside", (
            f"a report came from node {node}, which is not one of the nodes this run "
            f"targeted for the pool ({len(wanted)}): it proves no node of the pool")))
    if every_target:
        for node in sorted(wanted - set(by_node)):
            checks.append(_uncovered(node, WORKLOAD, "untested", (
                "not tested: no pod of this run reported from this node, one of the "
                f"{len(wanted)} the run targeted; it passes nothing")))
    return checks
