"""Item 7 (part): N identical "missing device" failures collapse into one line naming the
devices and the likely cause (driver, device plugin, `nvidia-smi`), in the host summary and the
run summary, and the HTML report."""

from __future__ import annotations

from smoke.cluster.run import RunReport
from smoke.probes.results import HostReport, ProbeResult, Verdict
from smoke.reports.html import render_html
from smoke.reports.text import run_summary, summary

REASON = ("missing: expected 8 x NVIDIA H100 80GB on a3-highgpu-8g, found {n} GPU device{s}")


def _host(found: int) -> HostReport:
    results = [ProbeResult(f"cuda{i}", "inventory", 0, Verdict.PASS, "H100 present")
               for i in range(found)]
    results += [ProbeResult(f"cuda{i}", "inventory", 0, Verdict.FAIL,
                            REASON.format(n=found, s="" if found == 1 else "s"))
                for i in range(found, 8)]
    return HostReport("node-a", "torch", "cuda", {}, 0, tuple(results),
                      accelerator="a3-highgpu-8g")


def test_missing_devices_collapse_into_one_line_with_the_likely_cause() -> None:
    host = _host(0)
    text = summary(host)
    fails = [line for line in text.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1, text
    assert "cuda0..cuda7" in fails[0] and "8 devices missing" in fails[0]
    assert "nvidia-smi" in fails[0] and "device plugin" in fails[0]
    run = run_summary(RunReport.of_host(_host(2), "l-1"))
    fails = [line for line in run.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "cuda2..cuda7" in fails[0] and "Xid" in fails[0]


def test_the_html_report_collapses_missing_devices_into_one_row_with_the_cause() -> None:
    html = render_html(RunReport.of_host(_host(0), "l-1"))
    section = html.split('id="failures"', 1)[1].split("</section>", 1)[0]
    rows = [r for r in section.split("<tr")[1:] if 'class="fail"' in r]
    assert len(rows) == 1, section
    assert "cuda0..cuda7" in rows[0] and "8 devices missing" in rows[0]
    assert "nvidia-smi" in rows[0] and "device plugin" in rows[0]
    assert "FAILED: 8 failures" in html  # the headline still counts every failed device
