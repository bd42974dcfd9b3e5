"""Item 7 (part): no drift alarm on CPU figures, CPU figures never filed under an `--expect`ed
accelerator, and a node's CPU and GPU figures are separate series."""

from __future__ import annotations

from pathlib import Path

from smoke.cluster.run import RunReport
from smoke.history import History
from smoke.probes.results import HostReport, ProbeResult, Verdict


def _run(i: int, figure: float, *, platform: str, accelerator: str | None) -> RunReport:
    result = ProbeResult("cpu0" if platform == "cpu" else "cuda0", "matmul_tflops", 2,
                         Verdict.PASS, "ok", figure, None, "TFLOP/s")
    host = HostReport("node-a", "torch", platform, {}, 2, (result,), accelerator=accelerator,
                      started_at=f"2026-11-2{i}T00:00:00+00:00")
    return RunReport.of_host(host, f"l-{platform}-{i}")


def _trends(path: Path, platform: str, accelerator: str | None) -> list[object]:
    with History.open(path) as h:
        for i, figure in enumerate([100.0, 101.0, 99.0, 100.0, 50.0]):
            h.append(_run(i, figure, platform=platform, accelerator=accelerator), kind="local")
        return list(h.trends())


def test_no_drift_alarm_on_a_cpu(tmp_path: Path) -> None:
    [cpu] = _trends(tmp_path / "cpu.sqlite", "cpu", None)
    assert cpu.drift == ()  # type: ignore[attr-defined]
    [gpu] = _trends(tmp_path / "gpu.sqlite", "cuda", "a3-highgpu-8g")
    assert gpu.drift  # type: ignore[attr-defined]


def test_cpu_figures_are_never_filed_under_the_expected_accelerator(tmp_path: Path) -> None:
    [trend] = _trends(tmp_path / "h.sqlite", "cpu", "a3-highgpu-8g")  # smoke local --expect
    assert trend.accelerator == "cpu" and trend.drift == ()  # type: ignore[attr-defined]
