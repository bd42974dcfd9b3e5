"""JUnit XML: the one writer, for cluster runs and for `smoke local` (a host report is
written as a run of one pool of one node, as the HTML report, history and metrics read it).

    xml = junit(run)             # a testsuite per pool, a testcase per node, probe and device
    xml = host_junit(report)     # the same shape: one suite `-/local`, the host's facts as
                                 # properties

Every attribute and text goes through `xml_safe`: a host's control characters neither make
the document ill-formed nor vanish. A run that tested nothing carries a failing case, so CI
reading the XML alone never sees a pass.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from smoke.cluster.run import RunReport, xml_safe
from smoke.probes.results import HostReport, ProbeResult, Verdict
from smoke.reports.text import number

LOCAL_RUN_ID = "local"  # a `smoke local` report's run id in its JUnit XML


def _case(suite: ET.Element, classname: str, r: ProbeResult) -> None:
    case = ET.SubElement(suite, "testcase", {
        "classname": classname, "name": f"T{r.tier} {r.probe} {r.device}", "time": "0"})
    text = f"measured={number(r.measured)} {r.unit} expected={number(r.expected)}"
    if r.verdict is Verdict.FAIL:
        ET.SubElement(case, "failure", {"message": r.reason, "type": "fail"}).text = text
    elif r.verdict is Verdict.SKIPPED:
        ET.SubElement(case, "skipped", {"message": r.reason})
    else:  # warn passes, with its reason
        ET.SubElement(case, "system-out").text = f"{r.verdict.value}: {r.reason}; {text}"


def junit(run: RunReport, *, properties: Mapping[str, str] | None = None,
          hostname: str | None = None) -> str:
    """JUnit XML text: a testsuite per pool, a testcase per node and probe (device in the
    name); `properties` join every suite's, `hostname` marks a one-host run's suite."""
    root = ET.Element("testsuites", {"name": f"accelfleet smoke run {run.run_id}"})
    for pool in run.pools:
        rows = pool.verdicts()
        c = pool.counts()
        attrs = {"name": f"{pool.cluster or '-'}/{pool.name}", "tests": str(len(rows) or 1),
                 "failures": str(c["fail"]), "errors": "0", "skipped": str(c["skipped"]),
                 "time": f"{pool.duration_s:.3f}", "timestamp": run.started_at}
        suite = ET.SubElement(root, "testsuite",
                              attrs | ({"hostname": hostname} if hostname else {}))
        props = ET.SubElement(suite, "properties")
        for k, v in {"run_id": run.run_id, "stack": run.stack, "status": pool.status.value,
                     "accelerator": pool.accelerator, "workload": pool.workload,
                     "thresholds_version": run.thresholds_version,
                     **(properties or {})}.items():
            ET.SubElement(props, "property", {"name": k, "value": v})
        if not rows:  # a skipped pool still shows as one case, with its reason
            case = ET.SubElement(suite, "testcase", {"classname": f"accelfleet.smoke.{pool.name}",
                                                     "name": "pool", "time": "0"})
            ET.SubElement(case, "skipped", {"message": pool.reason or pool.status.value})
        for node, r in rows:
            _case(suite, f"accelfleet.smoke.{pool.name}.{node or 'pool'}", r)
    if run.nothing_tested:
        suite = ET.SubElement(root, "testsuite", {"name": "run", "tests": "1", "failures": "1",
                                                  "errors": "0", "skipped": "0"})
        case = ET.SubElement(suite, "testcase", {"classname": "accelfleet.smoke",
                                                 "name": "nodes tested", "time": "0"})
        ET.SubElement(case, "failure", {"message": run.nothing_tested, "type": "fail"})
    xml_safe(root)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def host_junit(report: HostReport, run_id: str = LOCAL_RUN_ID) -> str:
    """A host report's JUnit XML: the report as a one-host run, its backend, platform,
    expectation and versions as properties."""
    return junit(RunReport.of_host(report, run_id), hostname=report.host, properties={
        "backend": report.backend, "platform": report.platform, "expect": report.expect or "",
        **{f"version.{k}": v for k, v in report.versions.items()}})


def write_junit(report: HostReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(host_junit(report), encoding="utf-8")
