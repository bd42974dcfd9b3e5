"""`--metrics FILE`: the last run as OpenMetrics text, read back with prometheus_client's
OpenMetrics parser and with the Prometheus text parser node-exporter's textfile collector
and the Pushgateway use."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from smoke.cluster.run import RunReport
from smoke.reports.metrics import openmetrics, write_metrics
from tests.smoke.recorded import BAD_NODE, DATA, H100_NODES

prometheus = pytest.importorskip("prometheus_client", reason="the dev extra prometheus_client "
                                 "parses the output")


def recorded() -> RunReport:
    return RunReport.from_dict(json.loads(DATA.read_text(encoding="utf-8")))


def _families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    return {f.name: [(dict(s.labels), s.value) for s in f.samples]
            for f in text_string_to_metric_families(text)}


def test_openmetrics_parses_with_every_figure_and_verdict() -> None:
    run = recorded()
    text = openmetrics(run)
    assert text.endswith("# EOF\n")
    fams = _families(text)
    matmul = fams["accelfleet_smoke_matmul_tflops"]
    assert len(matmul) == 3 * 8 + 4 * 4  # every H100 GPU and every v5p chip
    bad = {s["device"]: v for s, v in matmul if s["node"] == BAD_NODE}
    assert bad["cuda3"] == pytest.approx(529.0)
    assert {s["accelerator"] for s, _ in matmul} == {"h100-80gb", "tpu-v5p"}
    failed = {s["node"]: v for s, v in fams["accelfleet_smoke_node_failed"]}
    assert failed[BAD_NODE] == 1.0 and all(failed[n] == 0.0 for n in H100_NODES[:2])
    floors = {(s["node"], s["device"], s["probe"]): v for s, v in fams["accelfleet_smoke_floor"]}
    assert floors[(BAD_NODE, "cuda3", "matmul_tflops")] == pytest.approx(593.4)
    results = [s for s, _ in fams["accelfleet_smoke_result"] if s["verdict"] == "fail"]
    assert {(s["device"], s["probe"]) for s in results} == {
        ("cuda3", "matmul_tflops"), ("host", "matmul_tflops_vs_pool")}
    (info, value), = fams["accelfleet_smoke_run_info"]
    assert info["run_id"] == run.run_id and info["thresholds_version"] and value == 1.0
    assert fams["accelfleet_smoke_run_ok"] == [({}, 0.0)]
    assert fams["accelfleet_smoke_fabric_busbw_gbps"][0][1] == pytest.approx(21.4)


def test_the_prometheus_text_parser_reads_it_too() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    names = {f.name for f in text_string_to_metric_families(openmetrics(recorded()))}
    assert {"accelfleet_smoke_matmul_tflops", "accelfleet_smoke_node_failed"} <= names


def test_label_values_are_escaped() -> None:
    run = replace(recorded(), stack='we"ird\\stack\nname')
    (info, _), = _families(openmetrics(run))["accelfleet_smoke_run_info"]
    assert info["stack"] == 'we"ird\\stack\nname'


def test_written_atomically_with_no_temporary_file_left(tmp_path: Path) -> None:
    target = tmp_path / "textfile" / "accelfleet_smoke.prom"
    assert write_metrics(recorded(), target) is None
    assert write_metrics(recorded(), target) is None  # replaced in place
    assert [p.name for p in target.parent.iterdir()] == ["accelfleet_smoke.prom"]
    assert target.stat().st_mode & 0o444 == 0o444
    assert "cannot write" in (write_metrics(recorded(), target / "sub") or "")
