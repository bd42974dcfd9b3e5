"""The host JSON document round-trips; the JUnit file parses; the table names failures."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fleet.errors import InputError
from smoke import HostReport, ProbeResult, Verdict
from smoke.reports.junit import host_junit as junit
from smoke.reports.junit import write_junit
from smoke.reports.text import summary, table


def report() -> HostReport:
    return HostReport(
        host="node-a", backend="torch", platform="gpu",
        versions={"python": "3.11.7", "torch": "2.13.0", "cuda": "12.8"}, tier=3,
        expect="a3-highgpu-8g", accelerator="h100-80gb", thresholds_version="v1",
        started_at="2026-11-22T00:00:00+00:00", duration_s=12.5,
        results=(
            ProbeResult("cuda0", "inventory", 0, Verdict.PASS, "present", 79.2, 80.0, "GiB"),
            ProbeResult("cuda7", "inventory", 0, Verdict.FAIL, "missing <&> device", None, 80.0,
                        "GiB"),
            ProbeResult("cuda0", "matmul_tflops", 2, Verdict.WARN, "near floor", 610.0, 989.0,
                        "TFLOP/s", attempts=2, details={"n": 8192, "samples_s": [0.1, 0.2]}),
            ProbeResult("host", "allreduce_busbw", 3, Verdict.SKIPPED, "one device",
                        unit="GB/s"),
        ),
    )


def test_json_round_trips() -> None:
    r = report()
    assert HostReport.from_dict(r.to_dict()) == r
    assert HostReport.from_json(r.to_json()) == r
    doc = json.loads(r.to_json())
    assert doc["schema_version"] == 1
    assert doc["summary"] == {"pass": 1, "warn": 1, "fail": 1, "skipped": 1}
    row = doc["results"][2]
    assert {"device", "probe", "measured", "expected", "unit", "verdict", "reason"} <= set(row)


def test_other_documents_are_refused() -> None:
    doc = report().to_dict()
    doc["schema_version"] = 99
    with pytest.raises(InputError):
        HostReport.from_dict(doc)


def test_skipped_counts_neither_way() -> None:
    r = report()
    assert not r.ok and [f.device for f in r.failures] == ["cuda7"]
    only_skips = HostReport(host="h", backend="jax", platform="cpu", versions={}, tier=3,
                            results=(r.results[3],))
    assert only_skips.ok and only_skips.counts()["pass"] == 0


def test_junit_parses_one_case_per_device_and_probe(tmp_path: Path) -> None:
    path = tmp_path / "out" / "smoke.xml"
    write_junit(report(), path)
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "4" and suite.get("failures") == "1"
    assert suite.get("skipped") == "1"
    cases = suite.findall("testcase")
    # one writer for host and run (issue 22): the host is the node of pool `local`, the
    # device in the case's name (before: classname accelfleet.smoke.node-a.cuda0, "T0 inventory")
    assert [(c.get("classname"), c.get("name")) for c in cases][:2] == [
        ("accelfleet.smoke.local.node-a", "T0 inventory cuda0"),
        ("accelfleet.smoke.local.node-a", "T0 inventory cuda7")]
    assert suite.get("hostname") == "node-a"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["backend"] == report().backend and props["platform"] == report().platform
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "missing <&> device"
    assert cases[3].find("skipped") is not None
    assert ET.fromstring(junit(report())).tag == "testsuites"


def test_table_and_summary_name_the_failure() -> None:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(table(report()))
    text = console.export_text()
    assert "cuda7" in text and "retried" in text
    assert "FAIL cuda7 inventory: missing" in summary(report())


def test_the_run_table_shows_pod_reasons_as_text_not_markup() -> None:
    """Pod output is untrusted: a reason with Rich markup is printed as written. Before, "[/nope]"
    raised rich's MarkupError and "[bold]x[/]" lost its brackets."""
    from rich.console import Console

    from smoke.cluster.run import Check, NodeOutcome, PoolReport, PoolStatus, RunReport
    from smoke.probes.results import HostReport, ProbeResult, Verdict
    from smoke.reports.text import run_table, table

    evil = "[bold]x[/] and [/nope]"
    bad = ProbeResult("gpu0", "matmul_tflops", 2, Verdict.FAIL, evil)
    host = HostReport(host="n-[b]1[/b]", backend="torch", platform="cpu", versions={}, tier=2,
                      results=(bad,))
    pool = PoolReport(name="p", cluster="c1", accelerator="a", workload="job", expected_pods=2,
                      status=PoolStatus.PARTIAL,
                      nodes=(NodeOutcome(0, "pod-0", "n1", report=host),),
                      checks=(Check(None, ProbeResult("host", "workload", 0, Verdict.FAIL,
                                                      f"pool {evil}")),),
                      reason=evil)
    skipped = PoolReport(name="q", cluster=None, accelerator="a", workload="skipped",
                         expected_pods=0, status=PoolStatus.SKIPPED, reason=f"skip {evil}")
    run = RunReport(run_id="r1", stack="s", started_at="", duration_s=1.0,
                    thresholds_version="t", agent_digest="d", pools=(pool, skipped))
    texts = []
    for t in (run_table(run), table(host)):
        out = Console(width=400, record=True)
        out.print(t)
        texts.append(out.export_text())
    run_text, host_text = texts
    for want in (f"matmul_tflops: {evil}", f"pool {evil}", f"skip {evil}"):
        assert want in run_text, run_text
    assert evil in host_text and "n-[b]1[/b]" in host_text
