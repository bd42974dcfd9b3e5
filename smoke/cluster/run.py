"""The run document of a cluster smoke run: per pool, per node, per device.

    {"kind": "accelfleet.smoke/run", "schema_version": 1, "run_id": "...", "stack": "...",
     "pools": [{"name": "h100-train", "cluster": "ml-gke", "status": "done",
                "nodes": [{"node": "gke-...", "pod": "...", "report": {HostReport}}],
                "checks": [{"node": "gke-...", "result": {ProbeResult}}]}]}

A pool's verdicts are its nodes' results, each judged again by the launcher against the
verdict registry (`smoke.cluster._rejudge`: pod output is untrusted), plus the pool-wide checks the
launcher adds: a node that is an outlier among its peers, a pod
that crashed or never reported, a workload that could not be scheduled or timed out.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from smoke.probes.names import POD as POD  # the launcher's checks' probe names
from smoke.probes.names import REPORT as REPORT
from smoke.probes.names import WORKLOAD as WORKLOAD
from smoke.probes.results import HostReport, ProbeResult, Verdict

RUN_KIND = "accelfleet.smoke/run"
RUN_SCHEMA_VERSION = 1


class PoolStatus(StrEnum):
    DONE = "done"  # every pod reported (its verdicts may still fail)
    PARTIAL = "partial"  # some pods crashed or never reported
    UNSCHEDULABLE = "unschedulable"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    ERROR = "error"  # the workload could not be submitted
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class NodeOutcome:
    """One pod of a pool: where it ran and what its agent reported."""

    index: int
    pod: str
    node: str | None
    report: HostReport | None = None
    exit_code: int | None = None
    slice: int | None = None  # a TPU pod's slice (the JobSet's job index); None elsewhere
    # smoke.cluster._podtime.PodTiming: the pod's startup (image pulls, sidecars) apart from its run
    timing: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "pod": self.pod, "node": self.node,
                "exit_code": self.exit_code, "slice": self.slice, "timing": self.timing,
                "report": None if self.report is None else self.report.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeOutcome:
        report = data.get("report")
        return cls(index=int(data.get("index", 0)), pod=str(data.get("pod", "")),
                   node=data.get("node"), exit_code=data.get("exit_code"),
                   slice=data.get("slice"), timing=data.get("timing"),
                   report=None if report is None else HostReport.from_dict(report))


@dataclass(frozen=True)
class Check:
    """A launcher-side verdict about one node (or the whole pool, node None)."""

    node: str | None
    result: ProbeResult

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "result": self.result.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        return cls(data.get("node"), ProbeResult.from_dict(data["result"]))


@dataclass(frozen=True)
class Failure:
    """One failing verdict, named as a person looks for it."""

    pool: str
    node: str | None
    device: str
    probe: str
    reason: str

    def line(self) -> str:
        where = " ".join(x for x in (self.pool, self.node or "", self.device) if x)
        return f"FAIL {where} {self.probe}: {self.reason}"


@dataclass(frozen=True)
class PoolReport:
    name: str
    cluster: str | None
    accelerator: str
    workload: str
    expected_pods: int
    status: PoolStatus
    nodes: tuple[NodeOutcome, ...] = ()
    checks: tuple[Check, ...] = ()
    reason: str = ""
    duration_s: float = 0.0

    def verdicts(self) -> list[tuple[str | None, ProbeResult]]:
        """Every node's results and the launcher's checks; a node with no report or an empty
        one, that no check names, fails here (a run document read back is untrusted too)."""
        out: list[tuple[str | None, ProbeResult]] = []
        named = {c.node for c in self.checks}
        for n in self.nodes:
            where = n.node or n.pod
            if n.report is not None and n.report.results:
                out += [(where, r) for r in n.report.results]
            elif where not in named:
                out.append((where, ProbeResult("host", REPORT, 0, Verdict.FAIL,
                                               "no report: nothing on this node was judged")))
        out += [(c.node, c.result) for c in self.checks]
        return out

    @property
    def tested(self) -> int:
        """Nodes whose report holds at least one result that is not skipped (each node once:
        two pods that say they ran on one node tested one node at most)."""
        return len({n.node or n.pod for n in self.nodes if n.report is not None and any(
            r.verdict is not Verdict.SKIPPED for r in n.report.results)})

    @property
    def failures(self) -> list[Failure]:
        return [Failure(self.name, node, r.device, r.probe, r.reason)
                for node, r in self.verdicts() if r.verdict is Verdict.FAIL]

    def counts(self) -> dict[str, int]:
        out = {v.value: 0 for v in Verdict}
        for _, r in self.verdicts():
            out[r.verdict.value] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "cluster": self.cluster, "accelerator": self.accelerator,
                "workload": self.workload, "expected_pods": self.expected_pods,
                "status": self.status.value, "reason": self.reason,
                "duration_s": round(self.duration_s, 3), "summary": self.counts(),
                "nodes": [n.to_dict() for n in self.nodes],
                "checks": [c.to_dict() for c in self.checks]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PoolReport:
        return cls(name=str(data["name"]), cluster=data.get("cluster"),
                   accelerator=str(data.get("accelerator", "")),
                   workload=str(data.get("workload", "")),
                   expected_pods=int(data.get("expected_pods", 0)),
                   status=PoolStatus(data.get("status", "done")),
                   nodes=tuple(NodeOutcome.from_dict(n) for n in data.get("nodes") or []),
                   checks=tuple(Check.from_dict(c) for c in data.get("checks") or []),
                   reason=str(data.get("reason", "")),
                   duration_s=float(data.get("duration_s", 0.0)))


@dataclass(frozen=True)
class RunReport:
    run_id: str
    stack: str
    started_at: str
    duration_s: float
    thresholds_version: str
    agent_digest: str
    pools: tuple[PoolReport, ...] = field(default_factory=tuple)
    cancelled: bool = False
    cleanup_errors: tuple[str, ...] = ()

    @property
    def failures(self) -> list[Failure]:
        return [f for p in self.pools for f in p.failures]

    @property
    def tested(self) -> int:
        """Nodes tested across the run (a node with a judged, not-skipped result)."""
        return sum(p.tested for p in self.pools)

    @property
    def nothing_tested(self) -> str:
        """Why nothing was tested, when nothing was ("" otherwise): nothing tested is no pass."""
        if self.tested or self.cancelled:
            return ""
        why = "; ".join(f"{p.name}: {p.reason or p.status.value}" for p in self.pools)
        return ("nothing was tested: no node of any pool reported a result" +
                (f" ({why})" if why else " (no pool was selected)"))

    @property
    def ok(self) -> bool:
        return (not self.failures and not self.cancelled and not self.cleanup_errors
                and not self.nothing_tested)

    def host_reports(self) -> list[HostReport]:
        return [n.report for p in self.pools for n in p.nodes if n.report is not None]

    def to_dict(self) -> dict[str, Any]:
        counts = {v.value: 0 for v in Verdict}
        for p in self.pools:
            for k, v in p.counts().items():
                counts[k] += v
        return {"kind": RUN_KIND, "schema_version": RUN_SCHEMA_VERSION, "run_id": self.run_id,
                "stack": self.stack, "started_at": self.started_at,
                "duration_s": round(self.duration_s, 3),
                "thresholds_version": self.thresholds_version,
                "agent_digest": self.agent_digest, "cancelled": self.cancelled,
                "cleanup_errors": list(self.cleanup_errors),
                "ok": self.ok, "summary": counts, "nodes_tested": self.tested,
                "failures": [f.line() for f in self.failures] + (
                    [f"FAIL {self.nothing_tested}"] if self.nothing_tested else []),
                "pools": [p.to_dict() for p in self.pools]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunReport:
        """The run document back (`--json`, `--out DIR`'s run.json); InputError if it is none."""
        from fleet.errors import InputError

        if not isinstance(data, dict) or data.get("kind") != RUN_KIND or \
                data.get("schema_version") != RUN_SCHEMA_VERSION:
            got = data.get("kind") if isinstance(data, dict) else type(data).__name__
            raise InputError(f"not an accelfleet smoke run document of schema "
                             f"{RUN_SCHEMA_VERSION} (kind {got!r})",
                             hint="produce it with `accelfleet smoke run --json` or --out DIR")
        try:
            return cls(run_id=str(data["run_id"]), stack=str(data.get("stack", "")),
                       started_at=str(data.get("started_at", "")),
                       duration_s=float(data.get("duration_s", 0.0)),
                       thresholds_version=str(data.get("thresholds_version", "")),
                       agent_digest=str(data.get("agent_digest", "")),
                       pools=tuple(PoolReport.from_dict(p) for p in data.get("pools") or []),
                       cancelled=bool(data.get("cancelled", False)),
                       cleanup_errors=tuple(data.get("cleanup_errors") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed smoke run document: {exc!r}",
                             hint="produce it with `accelfleet smoke run --json`") from None

    @classmethod
    def of_host(cls, report: HostReport, run_id: str) -> RunReport:
        """A `smoke local` report as a run of one pool (`local`) of one node, so that the HTML
        report, the history and the metrics read local and cluster runs alike."""
        return cls(run_id=run_id, stack="(local)", started_at=report.started_at,
                   duration_s=report.duration_s, thresholds_version=report.thresholds_version,
                   agent_digest="", pools=(PoolReport(
                       name="local", cluster=None, accelerator=report.accelerator or
                       report.platform, workload="smoke local", expected_pods=1,
                       status=PoolStatus.DONE, nodes=(NodeOutcome(0, "", report.host, report),),
                       duration_s=report.duration_s),))


# What XML 1.0 forbids in a document (https://www.w3.org/TR/xml/#charsets): control characters
# but tab, newline and carriage return; surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 forbids written as `\\xNN` (or `\\uNNNN`), so a
    host's control characters neither make the JUnit XML ill-formed nor vanish."""
    return _NOT_XML.sub(lambda m: (f"\\x{ord(m[0]):02x}" if ord(m[0]) < 256
                                   else f"\\u{ord(m[0]):04x}"), text)


def xml_safe(root: ET.Element) -> None:
    """Every attribute and text of the tree through `xml_text`, in place."""
    for element in root.iter():
        element.attrib = {k: xml_text(v) for k, v in element.attrib.items()}
        if element.text is not None:
            element.text = xml_text(element.text)
