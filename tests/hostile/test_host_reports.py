"""Item 11: what pods print is input too. A host report with Rich markup in a reason or a
device, an infinite figure, control characters and a repeated (device, probe) goes through
every report writer (table, summary, JUnit XML of a host and of a run, HTML, OpenMetrics,
history) without an exception, each output well-formed, and every figure still shown.
Item 13 (metrics half): `--metrics /dev/null` writes through the device, never renames over it."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from smoke.cluster.run import RunReport
from smoke.probes.results import HostReport
from smoke.reports.junit import host_junit, junit
from smoke.reports.text import run_summary, run_table, summary, table


def _result(device: str, probe: str, measured: object, reason: str, verdict: str = "pass",
            **extra: object) -> dict[str, object]:
    return {"device": device, "probe": probe, "tier": 2, "measured": measured,
            "expected": 989.0, "unit": "TFLOP/s", "verdict": verdict, "reason": reason,
            "details": extra}


HOSTILE = {
    "schema_version": 1, "kind": "accelfleet.smoke/host", "host": "node-[b]1\x07",
    "backend": "torch", "platform": "cuda", "versions": {"torch": "2.13[/]\x1b[31m"},
    "tier": 2, "accelerator": "a3-highgpu-8g", "thresholds_version": "t1",
    "started_at": "2026-11-24T00:00:00+00:00", "duration_s": 1.0,
    "results": [
        _result("cuda0[/bold]", "matmul_tflops", 801.5, "fine [red]really[/blue]"),
        _result("cuda1", "matmul_tflops", float("inf"), "clock\x00went\x1fback", "fail",
                floor="lots"),
        _result("cuda1", "matmul_tflops", 777.25, "the same device and probe again"),
        _result("cuda2", "memory_gbps", float("nan"), "\ud800 lone surrogate", "warn"),
        _result("cuda3", "memory_gbps", -float("inf"), "[link=file:///etc]x[/link]", "fail"),
    ],
}


@pytest.fixture
def run() -> RunReport:
    return RunReport.of_host(HostReport.from_dict(HOSTILE), "l-hostile")


def test_tables_show_markup_as_typed_and_every_figure(run: RunReport) -> None:
    host = run.pools[0].nodes[0].report
    assert host is not None
    console = Console(record=True, width=250, color_system=None)
    console.print(table(host))
    console.print(summary(host), markup=False)
    console.print(run_table(run))
    console.print(run_summary(run), markup=False)
    text = console.export_text()
    for shown in ("cuda0[/bold]", "fine [red]really[/blue]", "802", "inf", "777", "nan",
                  "-inf", "[link=file:///etc]x[/link]"):
        assert shown in text, shown


def test_junit_is_well_formed_with_control_characters(run: RunReport) -> None:
    host = run.pools[0].nodes[0].report
    assert host is not None
    for xml in (host_junit(host), junit(run)):
        root = ET.fromstring(xml.encode("utf-8"))
        assert root.tag == "testsuites"
        assert "clock\\x00went\\x1fback" in xml  # shown, escaped, never dropped


def test_html_renders_infinite_figures(run: RunReport) -> None:
    from smoke.reports.html import render_html

    html = render_html(run)
    assert "cuda1" in html and "inf" in html and "802" in html


def test_openmetrics_parses_with_repeated_device_and_probe(run: RunReport) -> None:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from smoke.reports.metrics import openmetrics

    text = openmetrics(run)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    values = sorted(s.value for s in families["accelfleet_smoke_matmul_tflops"].samples)
    assert values == [777.25, 801.5, float("inf")]  # every figure kept
    assert any(s.labels.get("repeat") == "2"
               for s in families["accelfleet_smoke_matmul_tflops"].samples)


def test_every_writer_keeps_the_run(run: RunReport, tmp_path: Path) -> None:
    from smoke.history import History
    from smoke.reports.files import keep

    kept = keep(run, kind="local", html=tmp_path / "r.html", metrics=tmp_path / "m.prom",
                history=tmp_path / "h.sqlite")
    assert kept.problems == ()
    assert set(kept.written) == {tmp_path / "r.html", tmp_path / "m.prom", tmp_path / "h.sqlite"}
    assert (tmp_path / "r.html").stat().st_size > 0 and (tmp_path / "m.prom").stat().st_size
    with History.open(tmp_path / "h.sqlite", create=False) as h:
        assert h.count() == (1, 5)


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null")
def test_metrics_to_a_device_write_through_it(run: RunReport, tmp_path: Path) -> None:
    """A device node stays a device: the write goes through it (here a symlink to /dev/null
    in tmp, so that the test never needs root to notice a rename over /dev/null)."""
    from smoke.reports.metrics import write_metrics

    link = tmp_path / "metrics.prom"
    link.symlink_to("/dev/null")
    assert write_metrics(run, link) is None
    assert link.is_symlink() and os.path.realpath(link) == "/dev/null"
    assert Path("/dev/null").is_char_device()


def test_a_tier_beyond_int64_is_no_report_rather_than_a_crash_in_the_history() -> None:
    """Found by the long fuzz run (case 216 of seed 21): a tier of 2**63 reached SQLite."""
    import json

    from smoke.cluster.launcher import parse_host_report

    for field, value in (("tier", 2**63), ("attempts", 2**70)):
        doc = json.loads(json.dumps(HOSTILE, ensure_ascii=False).replace("\\ud800", "x"))
        if field == "tier":
            doc["tier"] = value
        else:
            doc["results"][0]["attempts"] = value
        assert parse_host_report(json.dumps(doc)) is None
