"""Reports of a host's results: a Rich table, and JUnit XML (one test case per device and probe).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from smoke._results import HostReport, ProbeResult, Verdict

if TYPE_CHECKING:
    from rich.table import Table

STYLE = {Verdict.PASS: "green", Verdict.WARN: "yellow", Verdict.FAIL: "bold red",
         Verdict.SKIPPED: "dim"}


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if value != 0 and abs(value) < 0.01:
        return f"{value:.1e}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def table(report: HostReport) -> Table:
    from rich.table import Table

    acc = report.accelerator or "no catalog expectation"
    title = (f"accelfleet smoke: {report.host} ({report.backend} on {report.platform}; "
             f"{acc}; tiers 0-{report.tier})")
    t = Table(title=title)
    for col, just in (("device", "left"), ("probe", "left"), ("tier", "right"),
                      ("measured", "right"), ("expected", "right"), ("unit", "left"),
                      ("verdict", "left"), ("reason", "left")):
        t.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for r in report.results:
        style = STYLE[r.verdict]
        verdict = r.verdict.value + (" (retried)" if r.attempts > 1 else "")
        t.add_row(r.device, r.probe, f"T{r.tier}", _num(r.measured), _num(r.expected), r.unit,
                  f"[{style}]{verdict}[/{style}]", r.reason)
    return t


def summary(report: HostReport) -> str:
    c = report.counts()
    line = (f"{c['pass']} pass, {c['warn']} warn, {c['fail']} fail, {c['skipped']} skipped "
            f"in {report.duration_s:.1f} s")
    for r in report.failures:
        line += f"\nFAIL {r.device} {r.probe}: {r.reason}"
    return line


def _case(suite: ET.Element, report: HostReport, r: ProbeResult) -> None:
    case = ET.SubElement(suite, "testcase", {
        "classname": f"accelfleet.smoke.{report.host}.{r.device}",
        "name": f"T{r.tier} {r.probe}",
        "time": "0",
    })
    measured = f"measured={_num(r.measured)} {r.unit} expected={_num(r.expected)}"
    if r.verdict is Verdict.FAIL:
        ET.SubElement(case, "failure", {"message": r.reason, "type": "fail"}).text = measured
    elif r.verdict is Verdict.SKIPPED:
        ET.SubElement(case, "skipped", {"message": r.reason})
    else:
        ET.SubElement(case, "system-out").text = f"{r.verdict.value}: {r.reason}; {measured}"


def junit(report: HostReport) -> str:
    """JUnit XML text: one <testcase> per device and probe; warn passes with its reason."""
    c = report.counts()
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", {
        "name": f"accelfleet smoke {report.host}",
        "tests": str(len(report.results)),
        "failures": str(c["fail"]),
        "errors": "0",
        "skipped": str(c["skipped"]),
        "time": f"{report.duration_s:.3f}",
        "timestamp": report.started_at,
        "hostname": report.host,
    })
    props = ET.SubElement(suite, "properties")
    for key, value in {"backend": report.backend, "platform": report.platform,
                       "accelerator": report.accelerator or "", "expect": report.expect or "",
                       "thresholds_version": report.thresholds_version,
                       **{f"version.{k}": v for k, v in report.versions.items()}}.items():
        ET.SubElement(props, "property", {"name": key, "value": value})
    for r in report.results:
        _case(suite, report, r)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: HostReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit(report), encoding="utf-8")
